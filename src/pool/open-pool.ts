/**
 * Which pool a model's workers run in: llama.cpp models in a child process of their own
 * (process-pool.ts: node-llama-cpp cannot survive a worker thread torn down under a native call)
 * unless the ggufProcess setting is off; everything else, and every tokenizer-only pool, in this
 * process's worker threads.
 */
import type { ModelInfo } from '../models/registry.js';
import type { WorkerInit } from '../worker/protocol.js';
import { ModelPool } from './model-pool.js';
import type { InferencePool, ModelPoolOptions, PoolContext } from './pool.js';
import { ProcessPool } from './process-pool.js';

export function openPool(model: ModelInfo, options: ModelPoolOptions, context: PoolContext, role: WorkerInit['role'] = 'model'): InferencePool {
  return model.engine === 'llama' && role === 'model' && options.engine.ggufProcess ? new ProcessPool(model, options, context) : new ModelPool(model, options, context, role);
}

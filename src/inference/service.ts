/**
 * The inference core: model registry (id or alias -> pool), one ModelPool per model.
 */
import { modelNotFound, ServiceError, wrongModelTask } from '../errors.js';
import type { ModelInfo } from '../models/registry.js';
import { EmbedBatcher, type EmbedBatchingOptions } from '../pool/embed-batcher.js';
import { ModelPool, type GenerationStats, type ModelPoolOptions, type PoolObserver } from '../pool/model-pool.js';
import type { CallOptions, ChatCallOptions, ChatPrompt, ChatRequest, ChatResult, EmbedRequest, EmbedResult, InferenceService, ModelStatus } from './types.js';

export interface LocalServiceOptions extends ModelPoolOptions {
  models: ModelInfo[];
  /** Receives generation timings, worker losses and embedding batches (metrics). */
  observer?: PoolObserver & { embedBatch?(model: string, requests: number, tokens: number): void };
  embedBatching: Omit<EmbedBatchingOptions, 'maxQueue'>;
  /** Extra names for models, from configuration: alias -> model id. */
  aliases?: Record<string, string>;
  log?: (line: string) => void;
}

export class LocalInferenceService implements InferenceService {
  private readonly pools = new Map<string, ModelPool>();
  /** Tokenizer-only pools of chat models: token counting never waits behind generations. */
  private readonly counters = new Map<string, ModelPool>();
  private readonly batchers = new Map<string, EmbedBatcher>();
  private readonly names = new Map<string, ModelInfo>();

  private constructor(private readonly options: LocalServiceOptions) {
    for (const model of options.models) {
      for (const name of [model.id, ...model.aliases]) this.names.set(name, model);
    }
    for (const [alias, target] of Object.entries(options.aliases ?? {})) {
      const model = this.names.get(target);
      if (!model) throw new Error(`alias ${alias} points to unknown model ${target}`);
      this.names.set(alias, model);
    }
  }

  /** Starts one pool per model and waits until every worker has loaded its model. */
  static async start(options: LocalServiceOptions): Promise<LocalInferenceService> {
    const service = new LocalInferenceService(options);
    const log = options.log ?? (() => {});
    try {
      await Promise.all(
        options.models.map(async (model) => {
          const started = Date.now();
          const pool = new ModelPool(model, options);
          if (options.observer) pool.observer = options.observer;
          service.pools.set(model.id, pool);
          const pools = [pool];
          if (model.task === 'chat') {
            const counter = new ModelPool(model, options, 'tokenizer');
            service.counters.set(model.id, counter);
            pools.push(counter);
          } else {
            const batcher = new EmbedBatcher(pool, { ...options.embedBatching, maxQueue: options.maxQueue });
            batcher.onBatch = (requests, tokens) => options.observer?.embedBatch?.(model.id, requests, tokens);
            service.batchers.set(model.id, batcher);
          }
          const [notes = []] = await Promise.all(pools.map((p) => p.start()));
          log(`model ${model.id} (${model.task}, ${model.dtype}, ${model.poolSize} worker${model.poolSize > 1 ? 's' : ''}) loaded in ${Date.now() - started} ms${notes.map((n) => `; ${n}`).join('')}`);
        }),
      );
    } catch (error) {
      await service.close();
      throw error;
    }
    return service;
  }

  status(): { models: ModelStatus[] } {
    return {
      models: this.options.models.map((model) => {
        const pool = this.pools.get(model.id);
        return {
          id: model.id,
          task: model.task,
          ready: pool?.ready ?? false,
          queued: (pool?.queueSize ?? 0) + (this.batchers.get(model.id)?.queued ?? 0),
          workers: pool?.size ?? 0,
          workerRestarts: pool?.workerRestarts ?? 0,
        };
      }),
    };
  }

  listModels(): ModelInfo[] {
    return this.options.models;
  }

  /** Completed tasks per worker thread of a model (for metrics and tests). */
  tasksByThread(id: string): ReadonlyMap<number, number> {
    return this.pools.get(id)?.tasksByThread ?? new Map();
  }

  /** Generation counters of a chat model (for metrics and tests). */
  generationStats(id: string): Readonly<GenerationStats> | undefined {
    return this.pools.get(id)?.generationStats;
  }

  findModel(name: string): ModelInfo | undefined {
    return this.names.get(name);
  }

  chat(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResult> {
    return this.pool(request.model, 'chat').generate(request, options);
  }

  countTokens(prompt: ChatPrompt, _options: CallOptions = {}): Promise<number> {
    const pool = this.pool(prompt.model, 'chat');
    return (this.counters.get(pool.model.id) ?? pool).countTokens(prompt);
  }

  embed(request: EmbedRequest, _options: CallOptions = {}): Promise<EmbedResult> {
    const pool = this.pool(request.model, 'embedding');
    return this.batchers.get(pool.model.id)!.embed({ inputs: request.inputs, dimensions: request.dimensions });
  }

  /** Requests per dispatched task of an embedding model, most recent last (for metrics and tests). */
  embedBatchSizes(id: string): readonly number[] {
    return this.batchers.get(id)?.dispatchedBatchSizes ?? [];
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values(), ...this.counters.values()].map((pool) => pool.close()));
    this.pools.clear();
    this.counters.clear();
  }

  private pool(name: string, task: ModelInfo['task']): ModelPool {
    const model = this.names.get(name);
    if (!model) throw modelNotFound(name);
    if (model.task !== task) throw wrongModelTask(name, model.task);
    const pool = this.pools.get(model.id);
    if (!pool) throw new ServiceError({ code: 'model_unavailable', kind: 'unavailable', message: `The model \`${name}\` is not loaded.` });
    return pool;
  }
}

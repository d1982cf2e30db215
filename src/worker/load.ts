/**
 * Loads one model inside a worker thread, once. Remote loading is disabled: files come only from the
 * model's folder under models/.
 */
import path from 'node:path';
import {
  env,
  AutoTokenizer,
  AutoModel,
  AutoModelForCausalLM,
  type PreTrainedTokenizer,
  type PreTrainedModel,
} from '@huggingface/transformers';
import type { WorkerInit } from '../pool/protocol.js';
import type { ModelInfo } from '../models/registry.js';

export interface LoadedModel {
  info: ModelInfo;
  tokenizer: PreTrainedTokenizer;
  model: PreTrainedModel;
  /** End-of-sequence ids from generation_config.json (may be several) or config.json. */
  eosTokenIds: number[];
  /** Sampling defaults from generation_config.json. */
  generationDefaults: { doSample: boolean; temperature?: number; topK?: number; topP?: number };
  hiddenSize: number | null;
}

export async function loadModel(init: WorkerInit): Promise<LoadedModel> {
  const { model: info } = init;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.useFSCache = false;
  env.localModelPath = path.dirname(info.dir) + path.sep;
  const name = path.basename(info.dir);
  const tokenizer = await AutoTokenizer.from_pretrained(name, { local_files_only: true });
  const options = {
    local_files_only: true,
    dtype: info.dtype,
    device: 'cpu' as const,
    use_external_data_format: info.externalDataChunks === 0 ? false : info.externalDataChunks,
    session_options: init.intraOpThreads > 0 ? { intraOpNumThreads: init.intraOpThreads, interOpNumThreads: 1 } : {},
  };
  const model = info.task === 'chat'
    ? await AutoModelForCausalLM.from_pretrained(name, options)
    : await AutoModel.from_pretrained(name, options);
  const config = model.config as unknown as Record<string, any>;
  const generationConfig = ((model as unknown as { generation_config?: Record<string, any> }).generation_config ?? {}) as Record<string, any>;
  const eos = generationConfig.eos_token_id ?? config.eos_token_id ?? [];
  return {
    info,
    tokenizer,
    model,
    eosTokenIds: (Array.isArray(eos) ? eos : [eos]).filter((x: unknown): x is number => typeof x === 'number'),
    generationDefaults: {
      doSample: generationConfig.do_sample ?? false,
      temperature: generationConfig.temperature ?? undefined,
      topK: generationConfig.top_k ?? undefined,
      topP: generationConfig.top_p ?? undefined,
    },
    hiddenSize: typeof config.hidden_size === 'number' ? config.hidden_size : null,
  };
}

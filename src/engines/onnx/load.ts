/**
 * Loads one model inside a worker thread, once. Remote loading is disabled: files come only from the
 * model's folder under models/.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  AutoImageProcessor,
  AutoModel,
  AutoModelForCausalLM,
  AutoModelForImageTextToText,
} from '@huggingface/transformers';
import type { EngineSettings } from '../../core/engine-settings.js';
import type { ModelInfo } from '../../models/registry.js';
import { prepareGraph } from './graph/prepare-graph.js';
import { loadTokenizer } from './tokenizer.js';
import { batchDecoding, sessionOf, textConfig } from './decode/session-info.js';
import type { OrtSession } from './tensors.js';
import { DTYPE_SUFFIX } from '../../models/manifest.js';
import { lowResolutionProcessor } from './decode/vision-inputs.js';
import { StepSession } from './decode/step-session.js';
import type { LogFn } from '../../core/log.js';
import type { LoadedModel } from './loaded-model.js';

export type { LoadedModel };

/**
 * Whether the ONNX file names this operator: a scan of its bytes for the op type string (nodes come
 * before initializers in an encoded graph, so a quantized export answers within its first megabytes).
 */
function graphHasOp(file: string, op: string): boolean {
  const needle = Buffer.from(op);
  const fd = fs.openSync(file, 'r');
  try {
    const block = Buffer.alloc(16 << 20);
    let carry = Buffer.alloc(0);
    for (let at = 0; ; ) {
      const read = fs.readSync(fd, block, 0, block.length, at);
      if (read === 0) return false;
      const window = Buffer.concat([carry, block.subarray(0, read)]);
      if (window.includes(needle)) return true;
      carry = window.subarray(Math.max(0, window.length - needle.length + 1));
      at += read;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** `log`: where the load's warnings go (default: nowhere). */
export async function loadModel(info: ModelInfo, engine: EngineSettings, log: LogFn = () => {}): Promise<LoadedModel> {
  const { tokenizer } = await loadTokenizer(info); // also points transformers.js at the folder
  const name = path.basename(info.dir);
  const notes: string[] = [];
  let graph: { model_file_name?: string; use_external_data_format?: false } = {};
  // Chat models: the graph rewrites asked for. Every model: weights stored inline in the export are
  // referenced in place, so onnxruntime maps them from the file rather than copying them (prepare-graph.ts).
  const chat = info.task === 'chat';
  // A vision-language decoder: last-position logits only (fused attention reads 1-D rotary positions,
  // not M-RoPE; Gemma 3's are 1-D, but the rewrite is not tried on it). transformers.js names a split export's sessions itself (model_file_name applies to
  // a `model` graph alone), so the derived decoder replaces its session after the load, below.
  const visionGraph = info.vision && chat && engine.lastPositionLogits ? prepareGraph(info, { lastLogits: true, fusedAttention: false }) : undefined;
  const prepared = info.vision
    ? { notes: visionGraph?.notes ?? [], modelFileName: undefined, decodeStepFile: undefined }
    : prepareGraph(info, { lastLogits: chat && engine.lastPositionLogits, fusedAttention: chat && engine.fusedAttention, halfKvCache: engine.kvCacheDtype === 'float16' });
  // The derived graph names its weight files itself; onnxruntime resolves them from its folder.
  if (prepared.modelFileName) graph = { model_file_name: prepared.modelFileName, use_external_data_format: false };
  notes.push(...prepared.notes);
  if (chat && (engine.kvCacheDtype === 'q8_0' || engine.kvCacheDtype === 'q4_0')) notes.push(`kvCacheDtype ${engine.kvCacheDtype} is llama.cpp's (GGUF models); this ONNX model keeps its graph's KV type`);
  const options = {
    local_files_only: true,
    dtype: info.dtype,
    device: 'cpu' as const,
    use_external_data_format: info.externalDataChunks === 0 ? false : info.externalDataChunks,
    session_options: {
      ...(engine.intraOpThreads > 0 ? { intraOpNumThreads: engine.intraOpThreads, interOpNumThreads: 1 } : {}),
      graphOptimizationLevel: engine.ortGraphOptimizationLevel,
      // onnxruntime_session_options_config_keys.h: session.intra_op.allow_spinning
      extra: { session: { intra_op: { allow_spinning: engine.ortAllowSpinning ? '1' : '0' } } },
      // No memory pattern for chat models: their passes change shape every step (the attention mask
      // grows by a column), and with the pattern on onnxruntime's arena grew by ~540 MiB over the
      // first decoding steps after an 8168-token prompt and kept it. Measured on the SmolLM2-135M-shape
      // model-builder q4 subject, that prompt: peak RSS 1798 -> 1312 MiB, the prefill 8-18% faster,
      // decode unchanged (32 tokens of context: 65 against 67 tok/s, noise; 2048: 37.5 against 35.1).
      ...(chat ? { enableMemPattern: false } : {}),
    },
    ...graph,
  };
  const model = info.vision
    ? await AutoModelForImageTextToText.from_pretrained(name, options)
    : info.task === 'chat'
      ? await AutoModelForCausalLM.from_pretrained(name, options)
      : await AutoModel.from_pretrained(name, options);
  const config = textConfig(model.config);
  const sessions = (model as unknown as { sessions: Record<string, OrtSession> }).sessions;
  const generationConfig = ((model as unknown as { generation_config?: Record<string, any> }).generation_config ?? {}) as Record<string, any>;
  const eos = generationConfig.eos_token_id ?? config.eos_token_id ?? [];
  const loaded: LoadedModel = {
    info,
    tokenizer,
    model,
    eosTokenIds: (Array.isArray(eos) ? eos : [eos]).filter((x: unknown): x is number => typeof x === 'number'),
    generationDefaults: {
      doSample: generationConfig.do_sample ?? false,
      temperature: generationConfig.temperature ?? undefined,
      topK: generationConfig.top_k ?? undefined,
      topP: generationConfig.top_p ?? undefined,
      repetitionPenalty: generationConfig.repetition_penalty ?? undefined,
    },
    hiddenSize: typeof config.hidden_size === 'number' ? config.hidden_size : null,
    vocabSize: typeof config.vocab_size === 'number' ? config.vocab_size : 0,
    notes,
    engine,
    dynamicQuantization: info.task === 'chat' && graphHasOp(path.join(info.dir, info.onnxFile), 'DynamicQuantizeLinear'),
    inputNames: [],
  };
  if (info.vision) {
    if (visionGraph?.modelFileName) {
      const exported = sessions.decoder_model_merged!;
      const file = path.join(info.dir, path.dirname(info.onnxFile), `${visionGraph.modelFileName}${DTYPE_SUFFIX[info.dtype]}.onnx`);
      sessions.decoder_model_merged = await (exported.constructor as unknown as { create(file: string, options: Record<string, unknown>): Promise<OrtSession> }).create(file, { ...options.session_options, executionProviders: ['cpu'] });
      await exported.release?.();
    }
    const processor = await AutoImageProcessor.from_pretrained(name, { local_files_only: true });
    const lowProcessor = lowResolutionProcessor(processor, info.vision);
    loaded.vision = { spec: info.vision, processor, ...(lowProcessor ? { lowProcessor } : {}), embed: sessions.embed_tokens!, encoder: sessions.vision_encoder!, hiddenSize: loaded.hiddenSize ?? 0 };
  }
  loaded.inputNames = [...(sessionOf(loaded)?.inputNames ?? [])];
  const session = sessionOf(loaded);
  if (prepared.decodeStepFile && session && engine.inPlaceDecodeMinContext > 0) {
    loaded.decodeSteps = new StepSession(prepared.decodeStepFile, session, { ...options.session_options, executionProviders: ['cpu'] }, engine.inPlaceDecodeMinContext, (error) => {
      log('warn', 'the decoding-step graph did not load; decoding steps keep GroupQueryAttention', error);
    });
  }
  if (info.task === 'chat') {
    // The server log says why a chat model is not batch-decoded (src/engines/onnx/runner.ts falls back).
    const decoding = batchDecoding(loaded);
    if (!decoding.ok) notes.push(`one request at a time through transformers.js generate, without batching, prompt cache or grammar (${decoding.reason})`);
  }
  return loaded;
}

/** Releases a loaded model's sessions (the model's own and its decoding-step session, if it loaded). */
export async function disposeModel(loaded: LoadedModel): Promise<void> {
  await loaded.decodeSteps?.release();
  await loaded.model.dispose();
}

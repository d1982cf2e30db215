/**
 * What the batch decoder needs to know about a causal LM's ONNX session: finding the session inside
 * a transformers.js model, reading the KV cache shape and dtype from the export and its config, and
 * deciding whether the export has exactly the signature the decoder drives (`batchDecoding`, with
 * the reason when not). The arrays and tensors it feeds are ../tensors.ts.
 *
 * Contract: worker thread only.
 */
import type { LoadedModel } from '../loaded-model.js';
import { newKvOutput, type CacheShape, type KvMode, type OrtSession } from '../tensors.js';

/** The causal LM's session: `model`, or a split vision-language export's decoder. */
export function sessionOf(loaded: LoadedModel): OrtSession | undefined {
  const sessions = (loaded.model as unknown as { sessions?: Record<string, OrtSession> }).sessions;
  return loaded.vision ? sessions?.decoder_model_merged : sessions?.model;
}

/** The text model's configuration: a vision-language config nests it under text_config. */
export const textConfig = (config: unknown): Record<string, any> => {
  const all = config as Record<string, any>;
  return all.text_config && typeof all.text_config === 'object' ? { ...all, ...all.text_config } : all;
};

export function cacheShape(loaded: LoadedModel): CacheShape | undefined {
  const session = sessionOf(loaded);
  if (!session) return undefined;
  const layers = session.inputNames.filter((n) => /^past_key_values\.\d+\.key$/.test(n)).length;
  const config = textConfig(loaded.model.config) as Record<string, number>;
  const heads = config.num_attention_heads;
  const kvHeads = config.num_key_value_heads ?? heads;
  const headDim = config.head_dim ?? (config.hidden_size && heads ? config.hidden_size / heads : undefined);
  if (!layers || !kvHeads || !headDim) return undefined;
  const type = session.inputMetadata?.find((m) => m.name === 'past_key_values.0.key')?.type;
  return { layers, kvHeads, headDim, dtype: type === 'float16' ? 'float16' : 'float32' };
}

export type BatchDecoding = { ok: true } | { ok: false; reason: string };

/**
 * Whether the export takes exactly input_ids (a vision-language decoder: inputs_embeds, with 3-row
 * M-RoPE position_ids for Qwen-VL, 1-D for Gemma 3: ./vision-inputs.ts), attention_mask, position_ids and float32 or float16
 * past_key_values.{i}.key/value (all of one type), and returns logits and present.{i}.key/value, or
 * new_key_values.{i}.key/value alone (a rewritten graph: src/engines/onnx/graph/prepare-graph.ts); if not,
 * why. Anything else falls back to transformers.js generate. (An onnxruntime-genai model-builder
 * export, which has no position_ids, gets them from its rewrite: src/engines/onnx/graph/model-builder-attention.ts.)
 */
export function batchDecoding(loaded: LoadedModel): BatchDecoding {
  const session = sessionOf(loaded);
  if (!session) return { ok: false, reason: `no ONNX session named ${loaded.vision ? 'decoder_model_merged' : 'model'}` };
  const shape = cacheShape(loaded);
  if (!shape) return { ok: false, reason: 'no past_key_values inputs, or config.json lacks the attention sizes' };
  const expected = new Set([loaded.vision ? 'inputs_embeds' : 'input_ids', 'attention_mask', 'position_ids']);
  for (let i = 0; i < shape.layers; i++) expected.add(`past_key_values.${i}.key`).add(`past_key_values.${i}.value`);
  const missing = [...expected].filter((n) => !session.inputNames.includes(n));
  const extra = session.inputNames.filter((n) => !expected.has(n));
  if (missing.length || extra.length) return { ok: false, reason: `inputs ${[missing.length ? `lack ${missing.join(', ')}` : '', extra.length ? `add ${extra.join(', ')}` : ''].filter(Boolean).join(' and ')}` };
  if (!session.outputNames.includes('logits') || (!session.outputNames.includes('present.0.key') && kvMode(loaded) !== 'append')) return { ok: false, reason: 'outputs lack logits, or present.0.key and new_key_values.0.key' };
  const types = new Set(session.inputMetadata?.filter((m) => m.name.startsWith('past_key_values')).map((m) => m.type) ?? []);
  if ([...types].some((t) => t !== undefined && t !== shape.dtype)) return { ok: false, reason: `past_key_values of types ${[...types].join(', ')} (float32 or float16, one type)` };
  return { ok: true };
}

export const supportsBatchDecoding = (loaded: LoadedModel): boolean => batchDecoding(loaded).ok;

/**
 * `append` when the graph also outputs each layer's new keys and values alone (a graph rewritten by
 * src/engines/onnx/graph/fused-attention.ts): the decoder then keeps the cache and appends to it
 * (./kv-batch.ts); `present` for the export's own contract.
 */
export function kvMode(loaded: LoadedModel): KvMode {
  const session = sessionOf(loaded);
  const shape = cacheShape(loaded);
  if (!session || !shape) return 'present';
  for (let l = 0; l < shape.layers; l++) {
    if (!session.outputNames.includes(newKvOutput(l, 'key')) || !session.outputNames.includes(newKvOutput(l, 'value'))) return 'present';
  }
  return 'append';
}

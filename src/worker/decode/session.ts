/**
 * What the batch decoder needs to know about a causal LM's ONNX session, and the tensors it feeds it.
 *
 * Owns: finding the session inside a transformers.js model, reading the KV cache shape and dtype
 * from the export and its config, deciding whether the export has exactly the signature the decoder
 * drives (`batchDecoding`, with the reason when not), and wrapping typed arrays as onnxruntime tensors.
 *
 * KV dtype: float32 (Float32Array) or float16 (q4f16 exports), held as IEEE half bits in a
 * Uint16Array: Node 20 has no Float16Array, and onnxruntime-node takes 'float16' tensors over
 * Uint16Array. The decoder only copies KV around, never reads its values, so half bits need no
 * conversion; logits of a float16 graph are converted per sampled row (`lastLogits`).
 *
 * Contract: worker thread only. The tensor helpers wrap the array they are given without copying:
 * the caller must not write into it until the `run` that reads it has settled.
 */
import { Tensor } from '@huggingface/transformers';
import type { LoadedModel } from '../load.js';
import { newKvOutput } from '../../models/onnx/fused-attention.js';
import type { KvMode } from './kv-batch.js';

export interface OrtTensor {
  data: Float32Array | Uint16Array | BigInt64Array;
  dims: readonly number[];
  type: string;
}

export interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata?: ReadonlyArray<{ name: string; isTensor: boolean; type?: string }>;
  /** `fetches`: the outputs wanted (default: all of them). */
  run(feeds: Record<string, unknown>, fetches?: readonly string[]): Promise<Record<string, OrtTensor>>;
  /** Frees the session's native memory (onnxruntime's InferenceSession.release). */
  release?(): Promise<void>;
}

export type KvDtype = 'float32' | 'float16';
/** KV values: float32, or float16 as half bits. */
export type KvArray = Float32Array | Uint16Array;

/** The KV cache of one sequence is, per layer, a key and a value tensor of [1, kvHeads, length, headDim]. */
export interface CacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
  /** Element type of the cache (default float32). */
  dtype?: KvDtype;
}

/** A zeroed KV array of `length` values in the shape's dtype. */
export const newKv = (shape: CacheShape, length: number): KvArray => (shape.dtype === 'float16' ? new Uint16Array(length) : new Float32Array(length));
/** A zeroed array of the same type as `like`. */
export const kvLike = (like: KvArray, length: number): KvArray => (like instanceof Uint16Array ? new Uint16Array(length) : new Float32Array(length));

export function sessionOf(loaded: LoadedModel): OrtSession | undefined {
  return (loaded.model as unknown as { sessions?: Record<string, OrtSession> }).sessions?.model;
}

export function cacheShape(loaded: LoadedModel): CacheShape | undefined {
  const session = sessionOf(loaded);
  if (!session) return undefined;
  const layers = session.inputNames.filter((n) => /^past_key_values\.\d+\.key$/.test(n)).length;
  const config = loaded.model.config as unknown as Record<string, number>;
  const heads = config.num_attention_heads;
  const kvHeads = config.num_key_value_heads ?? heads;
  const headDim = config.head_dim ?? (config.hidden_size && heads ? config.hidden_size / heads : undefined);
  if (!layers || !kvHeads || !headDim) return undefined;
  const type = session.inputMetadata?.find((m) => m.name === 'past_key_values.0.key')?.type;
  return { layers, kvHeads, headDim, dtype: type === 'float16' ? 'float16' : 'float32' };
}

export type BatchDecoding = { ok: true } | { ok: false; reason: string };

/**
 * Whether the export takes exactly input_ids, attention_mask, position_ids and float32 or float16
 * past_key_values.{i}.key/value (all of one type), and returns logits and present.{i}.key/value, or
 * new_key_values.{i}.key/value alone (a rewritten graph: src/models/onnx/prepare-graph.ts); if not,
 * why. Anything else falls back to transformers.js generate. (An onnxruntime-genai model-builder
 * export, which has no position_ids, gets them from its rewrite: src/models/onnx/model-builder-attention.ts.)
 */
export function batchDecoding(loaded: LoadedModel): BatchDecoding {
  const session = sessionOf(loaded);
  if (!session) return { ok: false, reason: 'no ONNX session named model' };
  const shape = cacheShape(loaded);
  if (!shape) return { ok: false, reason: 'no past_key_values inputs, or config.json lacks the attention sizes' };
  const expected = new Set(['input_ids', 'attention_mask', 'position_ids']);
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
 * src/models/onnx/fused-attention.ts): the decoder then keeps the cache and appends to it
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

const ortTensor = (tensor: Tensor) => (tensor as unknown as { ort_tensor: unknown }).ort_tensor;

/** An int64 tensor from numbers (token ids, positions). */
export const i64 = (values: ArrayLike<number>, dims: number[]) => ortTensor(new Tensor('int64', BigInt64Array.from(Array.from(values, (v) => BigInt(v))), dims));
/** An int64 tensor over `data` as it is (no copy). */
export const i64Data = (data: BigInt64Array, dims: number[]) => ortTensor(new Tensor('int64', data, dims));
/** A float32 tensor over `data` as it is (no copy). */
export const f32 = (data: Float32Array, dims: number[]) => ortTensor(new Tensor('float32', data, dims));
/** A KV tensor (float32, or float16 over half bits) over `data` as it is (no copy). */
export const kvTensor = (data: KvArray, dims: number[]) => ortTensor(new Tensor(data instanceof Uint16Array ? 'float16' : 'float32', data, dims));

let halfTable: Float32Array | undefined;
/** Float32 values of half bits, through a 65,536-entry table (256 KB, built once per thread). */
export function halfToFloat(bits: Uint16Array): Float32Array {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const exp = (h >>> 10) & 0x1f;
      const mant = h & 0x3ff;
      const magnitude = exp === 0 ? mant * 2 ** -24 : exp === 0x1f ? (mant ? NaN : Infinity) : (1 + mant / 1024) * 2 ** (exp - 15);
      halfTable[h] = h & 0x8000 ? -magnitude : magnitude;
    }
  }
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = halfTable[bits[i]!]!;
  return out;
}

/**
 * The logits of the last position of batch row `row`: the output is [B, T, vocab] with T the fed
 * length, or T = 1 when the graph computes the last position only (src/models/onnx/last-logits.ts).
 * float32 logits: a view into the output; float16 logits (q4f16 exports): that row converted, a new array.
 */
export function lastLogits(logits: OrtTensor, row: number): Float32Array {
  const data = logits.data as Float32Array | Uint16Array;
  const vocab = logits.dims.at(-1)!;
  const perRow = data.length / logits.dims[0]!;
  const end = (row + 1) * perRow;
  if (logits.type === 'float16') return halfToFloat(data.subarray(end - vocab, end) as Uint16Array);
  return data.subarray(end - vocab, end) as Float32Array;
}

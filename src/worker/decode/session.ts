/**
 * What the batch decoder needs to know about a causal LM's ONNX session, and the tensors it feeds it.
 *
 * Owns: finding the session inside a transformers.js model, reading the KV cache shape from the
 * export and its config, deciding whether the export has exactly the signature the decoder drives
 * (`supportsBatchDecoding`), and wrapping typed arrays as onnxruntime tensors.
 *
 * Contract: worker thread only. The tensor helpers wrap the array they are given without copying:
 * the caller must not write into it until the `run` that reads it has settled.
 */
import { Tensor } from '@huggingface/transformers';
import type { LoadedModel } from '../load.js';
import { newKvOutput } from '../../models/onnx/fused-attention.js';
import type { KvMode } from './kv-batch.js';

export interface OrtTensor {
  data: Float32Array | BigInt64Array;
  dims: readonly number[];
  type: string;
}

export interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata?: ReadonlyArray<{ name: string; isTensor: boolean; type?: string }>;
  /** `fetches`: the outputs wanted (default: all of them). */
  run(feeds: Record<string, unknown>, fetches?: readonly string[]): Promise<Record<string, OrtTensor>>;
}

/** The KV cache of one sequence is, per layer, a key and a value tensor of [1, kvHeads, length, headDim]. */
export interface CacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
}

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
  return { layers, kvHeads, headDim };
}

/**
 * True when the export takes exactly input_ids, attention_mask, position_ids and float32
 * past_key_values.{i}.key/value, and returns logits and present.{i}.key/value. Anything else falls
 * back to transformers.js generate.
 */
export function supportsBatchDecoding(loaded: LoadedModel): boolean {
  const session = sessionOf(loaded);
  const shape = cacheShape(loaded);
  if (!session || !shape) return false;
  const expected = new Set(['input_ids', 'attention_mask', 'position_ids']);
  for (let i = 0; i < shape.layers; i++) expected.add(`past_key_values.${i}.key`).add(`past_key_values.${i}.value`);
  if (session.inputNames.length !== expected.size || !session.inputNames.every((n) => expected.has(n))) return false;
  if (!session.outputNames.includes('logits') || !session.outputNames.includes('present.0.key')) return false;
  const types = session.inputMetadata?.filter((m) => m.name.startsWith('past_key_values')).map((m) => m.type) ?? [];
  return types.every((t) => t === undefined || t === 'float32');
}

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

/**
 * The logits of the last position of batch row `row`: the output is [B, T, vocab] with T the fed
 * length, or T = 1 when the graph computes the last position only (src/models/onnx/last-logits.ts).
 */
export function lastLogits(logits: OrtTensor, row: number): Float32Array {
  const data = logits.data as Float32Array;
  const vocab = logits.dims.at(-1)!;
  const perRow = data.length / logits.dims[0]!;
  const end = (row + 1) * perRow;
  return data.subarray(end - vocab, end);
}

/**
 * The arrays and tensors the batch decoder feeds an ONNX session, and the names of the graph outputs
 * it reads: the contract between the graph rewrites (./graph/) and the decoder, which neither
 * imports from the other.
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

/**
 * The output a rewritten graph adds for each layer's new keys or values alone (./graph/fused-attention.ts):
 * the decoder appends them to the cache it keeps instead of reading whole presents (./decode/kv-batch.ts).
 */
export const newKvOutput = (layer: number, kind: 'key' | 'value') => `new_key_values.${layer}.${kind}`;

/** How the decoder keeps the cache: `append` new keys and values to it, or take the export's whole `present`s. */
export type KvMode = 'present' | 'append';

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
 * length, or T = 1 when the graph computes the last position only (src/engines/onnx/graph/last-logits.ts).
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

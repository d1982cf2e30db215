/**
 * Batched decoding in a worker: every generation running in this worker advances by one token in
 * the same forward pass (continuous batching). A new request is prefilled on its own, then joins
 * the batch; a finished, stopped or cancelled one leaves it at once.
 *
 * The batch's KV cache is one tensor per layer, [B, kv_heads, L, head_dim], rows left-padded to a
 * common length L; the attention mask hides the padding and position_ids carry each row's own
 * positions, exactly as transformers.js pads batches for generate(). Works with ONNX exports that
 * take input_ids, attention_mask, position_ids and float32 past_key_values.{i}.key/value and return
 * logits and present.{i}.key/value; anything else falls back to transformers.js generate (see
 * `supportsBatchDecoding`).
 */
import { Tensor } from '@huggingface/transformers';
import type { LoadedModel } from './load.js';

interface OrtTensor {
  data: Float32Array | BigInt64Array;
  dims: readonly number[];
  type: string;
}

interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata?: ReadonlyArray<{ name: string; isTensor: boolean; type?: string }>;
  run(feeds: Record<string, unknown>): Promise<Record<string, OrtTensor>>;
}

export interface SamplingPlan {
  doSample: boolean;
  temperature: number;
  topK: number;
  topP: number;
}

export interface SequenceSpec {
  promptIds: number[];
  maxTokens: number;
  sampling: SamplingPlan;
  /** Called with each generated token; returns true when the sequence must stop after it. */
  onToken: (id: number) => boolean;
  cancelled: () => boolean;
}

interface Sequence extends SequenceSpec {
  generated: number;
  /** Largest batch this sequence was decoded in. */
  peakBatch: number;
  last: number;
  /** Real tokens in the cache (prompt + generated except the last, not yet fed). */
  length: number;
  /** Per-row mask of the batch cache columns (1 = real token). */
  mask: Uint8Array;
  done: () => void;
  fail: (error: unknown) => void;
}

function sessionOf(loaded: LoadedModel): OrtSession | undefined {
  return (loaded.model as unknown as { sessions?: Record<string, OrtSession> }).sessions?.model;
}

interface CacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
}

function cacheShape(loaded: LoadedModel): CacheShape | undefined {
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

/** True when the export has exactly the signature this decoder drives (float32 cache). */
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

const i64 = (values: ArrayLike<number>, dims: number[]) =>
  (new Tensor('int64', BigInt64Array.from(Array.from(values, (v) => BigInt(v))), dims) as unknown as { ort_tensor: unknown }).ort_tensor;
const f32 = (data: Float32Array, dims: number[]) => (new Tensor('float32', data, dims) as unknown as { ort_tensor: unknown }).ort_tensor;

export class BatchDecoder {
  private readonly session: OrtSession;
  private readonly shape: CacheShape;
  private readonly pending: Sequence[] = [];
  private active: Sequence[] = [];
  /** Batch cache per layer: keys then values, each [B, kv, L, d]. */
  private cache: Float32Array[] = [];
  private length = 0;
  private running = false;

  constructor(loaded: LoadedModel) {
    this.session = sessionOf(loaded)!;
    this.shape = cacheShape(loaded)!;
  }

  /** Generates for one request; resolves, with the largest batch it was part of, when it has stopped. */
  run(spec: SequenceSpec): Promise<number> {
    return new Promise((resolve, fail) => {
      const seq: Sequence = { ...spec, generated: 0, peakBatch: 1, last: -1, length: 0, mask: new Uint8Array(0), done: () => resolve(seq.peakBatch), fail };
      this.pending.push(seq);
      if (!this.running) void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.pending.length > 0 || this.active.length > 0) {
        const next = this.pending.shift();
        if (next) await this.admit(next);
        else await this.step();
      }
    } catch (error) {
      for (const seq of [...this.active, ...this.pending]) seq.fail(error);
      this.active = [];
      this.pending.length = 0;
      this.cache = [];
      this.length = 0;
    } finally {
      this.running = false;
    }
  }

  private pastFeeds(rows: number, length: number, cache: Float32Array[]): Record<string, unknown> {
    const { layers, kvHeads, headDim } = this.shape;
    const feeds: Record<string, unknown> = {};
    for (let l = 0; l < layers; l++) {
      feeds[`past_key_values.${l}.key`] = f32(cache[2 * l] ?? new Float32Array(0), [rows, kvHeads, length, headDim]);
      feeds[`past_key_values.${l}.value`] = f32(cache[2 * l + 1] ?? new Float32Array(0), [rows, kvHeads, length, headDim]);
    }
    return feeds;
  }

  private presents(out: Record<string, OrtTensor>): Float32Array[] {
    const list: Float32Array[] = [];
    for (let l = 0; l < this.shape.layers; l++) list.push(out[`present.${l}.key`]!.data as Float32Array, out[`present.${l}.value`]!.data as Float32Array);
    return list;
  }

  /** Prefills a new sequence alone, takes its first token, and joins it to the batch. */
  private async admit(seq: Sequence): Promise<void> {
    if (seq.cancelled()) return seq.done();
    const n = seq.promptIds.length;
    const out = await this.session.run({
      input_ids: i64(seq.promptIds, [1, n]),
      attention_mask: i64(new Array(n).fill(1), [1, n]),
      position_ids: i64(seq.promptIds.map((_, i) => i), [1, n]),
      ...this.pastFeeds(1, 0, []),
    });
    // The last row: logits hold every position, or only the last one (src/models/onnx/last-logits.ts).
    const logits = out.logits!.data as Float32Array;
    const row = logits.subarray(logits.length - out.logits!.dims.at(-1)!);
    seq.length = n;
    seq.mask = new Uint8Array(n).fill(1);
    if (this.emit(seq, sample(row, seq.sampling))) return seq.done();
    this.join(seq, this.presents(out), n);
  }

  /** Feeds each sequence's last token; one forward pass for the whole batch. */
  private async step(): Promise<void> {
    const B = this.active.length;
    const L = this.length;
    const mask = new Array<number>(B * (L + 1));
    this.active.forEach((seq, r) => {
      for (let c = 0; c < L; c++) mask[r * (L + 1) + c] = seq.mask[c]!;
      mask[r * (L + 1) + L] = 1;
    });
    const out = await this.session.run({
      input_ids: i64(this.active.map((s) => s.last), [B, 1]),
      attention_mask: i64(mask, [B, L + 1]),
      position_ids: i64(this.active.map((s) => s.length), [B, 1]),
      ...this.pastFeeds(B, L, this.cache),
    });
    this.cache = this.presents(out);
    this.length = L + 1;
    const logits = out.logits!.data as Float32Array;
    const vocab = out.logits!.dims.at(-1)!;
    const finished: number[] = [];
    this.active.forEach((seq, r) => {
      seq.peakBatch = Math.max(seq.peakBatch, B);
      seq.length++;
      const grown = new Uint8Array(L + 1);
      grown.set(seq.mask);
      grown[L] = 1;
      seq.mask = grown;
      if (this.emit(seq, sample(logits.subarray(r * vocab, (r + 1) * vocab), seq.sampling))) finished.push(r);
    });
    if (finished.length) this.remove(finished);
  }

  /** Hands a token to its sequence; true when the sequence is over. */
  private emit(seq: Sequence, token: number): boolean {
    seq.generated++;
    seq.last = token;
    const stop = seq.onToken(token) || seq.generated >= seq.maxTokens || seq.cancelled();
    return stop;
  }

  /** Adds one sequence's cache ([1, kv, n, d] per layer) as a new row, re-padding to a common length. */
  private join(seq: Sequence, rowCache: Float32Array[], n: number): void {
    const rows = [...this.active, seq];
    const target = Math.max(this.length, n);
    const { kvHeads, headDim } = this.shape;
    const next: Float32Array[] = [];
    for (let t = 0; t < rowCache.length; t++) {
      const out = new Float32Array(rows.length * kvHeads * target * headDim);
      for (let r = 0; r < rows.length; r++) {
        const isNew = r === rows.length - 1;
        const src = isNew ? rowCache[t]! : this.cache[t]!;
        const srcLen = isNew ? n : this.length;
        const srcRow = isNew ? 0 : r;
        const pad = target - srcLen;
        for (let h = 0; h < kvHeads; h++) {
          const from = ((srcRow * kvHeads + h) * srcLen) * headDim;
          out.set(src.subarray(from, from + srcLen * headDim), ((r * kvHeads + h) * target + pad) * headDim);
        }
      }
      next.push(out);
    }
    for (const s of rows) {
      const pad = target - s.mask.length;
      if (pad > 0) {
        const m = new Uint8Array(target);
        m.set(s.mask, pad);
        s.mask = m;
      }
    }
    this.active = rows;
    this.cache = next;
    this.length = target;
  }

  /** Drops finished rows and the left padding no remaining row needs. */
  private remove(rowsToDrop: number[]): void {
    const drop = new Set(rowsToDrop);
    const keep = this.active.map((_, r) => r).filter((r) => !drop.has(r));
    for (const r of rowsToDrop) this.active[r]!.done();
    if (keep.length === 0) {
      this.active = [];
      this.cache = [];
      this.length = 0;
      return;
    }
    const trim = Math.min(...keep.map((r) => this.active[r]!.mask.indexOf(1)));
    const target = this.length - trim;
    const { kvHeads, headDim } = this.shape;
    this.cache = this.cache.map((tensor) => {
      const out = new Float32Array(keep.length * kvHeads * target * headDim);
      keep.forEach((r, i) => {
        for (let h = 0; h < kvHeads; h++) {
          const from = ((r * kvHeads + h) * this.length + trim) * headDim;
          out.set(tensor.subarray(from, from + target * headDim), ((i * kvHeads + h) * target) * headDim);
        }
      });
      return out;
    });
    this.active = keep.map((r) => {
      const seq = this.active[r]!;
      seq.mask = seq.mask.slice(trim);
      return seq;
    });
    this.length = target;
  }
}

/** Greedy, or temperature / top-k / top-p sampling, over one row of logits. */
export function sample(logits: Float32Array, plan: SamplingPlan): number {
  if (!plan.doSample) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    return best;
  }
  const k = plan.topK > 0 ? Math.min(plan.topK, logits.length) : logits.length;
  const order = k <= 256 ? topIndices(logits, k) : Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]!).slice(0, k);
  const max = logits[order[0]!]!;
  const weights = order.map((i) => Math.exp((logits[i]! - max) / plan.temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  let cut = order.length;
  if (plan.topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < order.length; i++) {
      cumulative += weights[i]! / total;
      if (cumulative >= plan.topP) {
        cut = i + 1;
        break;
      }
    }
  }
  const kept = weights.slice(0, cut);
  let x = Math.random() * kept.reduce((a, b) => a + b, 0);
  for (let i = 0; i < kept.length; i++) {
    x -= kept[i]!;
    if (x <= 0) return order[i]!;
  }
  return order[cut - 1]!;
}

/** Indices of the k largest values, largest first, in one pass (k small). */
function topIndices(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (best.length === k && v <= values[best[k - 1]!]!) continue;
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && values[best[at - 1]!]! < v) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

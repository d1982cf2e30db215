/**
 * The KV cache of the running batch: one tensor per layer and kind (keys then values, layer by
 * layer), each [B, kvHeads, L, headDim]. Row r holds its sequence's `rowLengths[r]` real positions in
 * its rightmost columns; the columns to their left are padding, hidden by the attention mask
 * (`stepMask`), exactly as transformers.js left-pads a batch for generate(). position_ids are each
 * row's own positions, so a row's padding never shifts its rotary positions.
 *
 * Contract: worker thread, one owner (the scheduler). Every operation builds new arrays and never
 * writes into arrays it was given or has handed out: `join` copies the row's KV, `advance` takes the
 * session's present tensors as they are, `extract` returns fresh copies the caller owns.
 */
import { f32, i64Data, type CacheShape, type OrtTensor } from './session.js';

/** The past_key_values feeds for a cache of `rows` x `length` positions (empty tensors when length is 0). */
export function pastFeeds(shape: CacheShape, cache: { rows: number; length: number; kv: readonly Float32Array[] }): Record<string, unknown> {
  const { layers, kvHeads, headDim } = shape;
  const dims = [cache.rows, kvHeads, cache.length, headDim];
  const feeds: Record<string, unknown> = {};
  for (let l = 0; l < layers; l++) {
    feeds[`past_key_values.${l}.key`] = f32(cache.kv[2 * l] ?? new Float32Array(0), dims);
    feeds[`past_key_values.${l}.value`] = f32(cache.kv[2 * l + 1] ?? new Float32Array(0), dims);
  }
  return feeds;
}

/** The present.{i}.key/value outputs of a forward pass, keys then values per layer. */
export function presents(shape: CacheShape, out: Record<string, OrtTensor>): Float32Array[] {
  const list: Float32Array[] = [];
  for (let l = 0; l < shape.layers; l++) list.push(out[`present.${l}.key`]!.data as Float32Array, out[`present.${l}.value`]!.data as Float32Array);
  return list;
}

/** One row of a [rows, kvHeads, length, headDim] tensor, from column `column` on. */
interface RowAt {
  data: Float32Array;
  row: number;
  length: number;
  column: number;
}

/** Copies `count` columns of every head from one row to another (the tensors may differ in length). */
function copyColumns(shape: CacheShape, from: RowAt, to: RowAt, count: number): void {
  const { kvHeads, headDim } = shape;
  for (let h = 0; h < kvHeads; h++) {
    const src = ((from.row * kvHeads + h) * from.length + from.column) * headDim;
    to.data.set(from.data.subarray(src, src + count * headDim), ((to.row * kvHeads + h) * to.length + to.column) * headDim);
  }
}

/**
 * Copies columns [from, to) of one row of a cache (a row whose `length` real positions are its
 * rightmost columns of `columns`) into fresh [1, kvHeads, to - from, headDim] tensors.
 */
export function extractRow(shape: CacheShape, cache: { kv: readonly Float32Array[]; columns: number }, row: { index: number; length: number; from: number; to: number }): Float32Array[] {
  const count = row.to - row.from;
  const start = cache.columns - row.length + row.from;
  return cache.kv.map((tensor) => {
    const out = new Float32Array(shape.kvHeads * count * shape.headDim);
    copyColumns(shape, { data: tensor, row: row.index, length: cache.columns, column: start }, { data: out, row: 0, length: count, column: 0 }, count);
    return out;
  });
}

export class KvBatch {
  /** Keys then values per layer, each [rows, kvHeads, length, headDim]. */
  private kv: Float32Array[] = [];
  /** Columns of every row (the longest row's length); shorter rows are left-padded. */
  length = 0;
  /** Real positions of each row (its rightmost columns); the next position_id of the row. */
  readonly rowLengths: number[] = [];

  constructor(private readonly shape: CacheShape) {}

  get rows(): number {
    return this.rowLengths.length;
  }

  /** Adds a sequence's cache ([1, kvHeads, n, headDim] per tensor) as the last row, re-padding every row to a common length. */
  join(rowKv: readonly Float32Array[], n: number): void {
    const rows = this.rows + 1;
    const target = Math.max(this.length, n);
    const { kvHeads, headDim } = this.shape;
    this.kv = rowKv.map((fresh, t) => {
      const out = new Float32Array(rows * kvHeads * target * headDim);
      for (let r = 0; r < rows - 1; r++) {
        copyColumns(this.shape, { data: this.kv[t]!, row: r, length: this.length, column: 0 }, { data: out, row: r, length: target, column: target - this.length }, this.length);
      }
      copyColumns(this.shape, { data: fresh, row: 0, length: n, column: 0 }, { data: out, row: rows - 1, length: target, column: target - n }, n);
      return out;
    });
    this.rowLengths.push(n);
    this.length = target;
  }

  /** Drops rows (indices in this batch) and the left padding no remaining row needs. */
  remove(rowsToDrop: readonly number[]): void {
    const drop = new Set(rowsToDrop);
    const keep = this.rowLengths.map((_, r) => r).filter((r) => !drop.has(r));
    if (keep.length === 0) return this.clear();
    const target = Math.max(...keep.map((r) => this.rowLengths[r]!));
    const { kvHeads, headDim } = this.shape;
    this.kv = this.kv.map((tensor) => {
      const out = new Float32Array(keep.length * kvHeads * target * headDim);
      keep.forEach((r, i) => copyColumns(this.shape, { data: tensor, row: r, length: this.length, column: this.length - target }, { data: out, row: i, length: target, column: 0 }, target));
      return out;
    });
    const lengths = keep.map((r) => this.rowLengths[r]!);
    this.rowLengths.splice(0, this.rowLengths.length, ...lengths);
    this.length = target;
  }

  clear(): void {
    this.kv = [];
    this.length = 0;
    this.rowLengths.length = 0;
  }

  /** Feeds for one step: the batch cache as past_key_values. */
  pastFeeds(): Record<string, unknown> {
    return pastFeeds(this.shape, { rows: this.rows, length: this.length, kv: this.kv });
  }

  /** The attention mask for one step: [rows, length + 1], 0 over each row's padding, 1 over its positions and the fed token. */
  stepMask(): unknown {
    const width = this.length + 1;
    const mask = new BigInt64Array(this.rows * width);
    this.rowLengths.forEach((n, r) => mask.fill(1n, r * width + this.length - n, (r + 1) * width));
    return i64Data(mask, [this.rows, width]);
  }

  /** Takes the presents of a step (one more column, real in every row) as the batch cache. */
  advance(presentKv: Float32Array[]): void {
    this.kv = presentKv;
    this.length++;
    for (let r = 0; r < this.rowLengths.length; r++) this.rowLengths[r] = this.rowLengths[r]! + 1;
  }

  /** A copy of positions [from, rowLengths[row]) of one row, [1, kvHeads, length - from, headDim] per tensor, without padding. */
  extract(row: number, from = 0): Float32Array[] {
    const length = this.rowLengths[row]!;
    return extractRow(this.shape, { kv: this.kv, columns: this.length }, { index: row, length, from, to: length });
  }
}

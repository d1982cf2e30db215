/**
 * The KV cache of the running batch: one tensor per layer and kind (keys then values, layer by
 * layer), each [B, kvHeads, capacity, headDim] of the graph's KV type (float32, or float16 half bits:
 * ../tensors.ts KvArray; only copied here, never read as numbers), of which the first `length` columns are in use. Row r
 * holds its sequence's `rowLengths[r]` real positions in the rightmost of those `length` columns; the
 * columns to their left are padding, hidden by the attention mask (`stepMask`), exactly as
 * transformers.js left-pads a batch for generate(). position_ids are each row's own positions, so a
 * row's padding never shifts its rotary positions.
 *
 * Two ways the cache crosses a forward pass (`KvMode`, chosen by what the graph outputs):
 * - `present`: the export's own contract. past_key_values are exactly `length` columns wide and the
 *   pass returns present.* with the fed columns added; those become the cache (capacity == length).
 *   onnxruntime-node copies every present tensor into new JavaScript memory after each pass, so a
 *   decoding step costs a copy of the whole cache (at 2048 positions of SmolLM2-135M, 94 MB: more
 *   time than the forward pass itself).
 * - `append`: graphs rewritten by src/engines/onnx/graph/fused-attention.ts also output the fed positions'
 *   keys and values alone (new_key_values.*). The cache is fed with room to grow (capacity >=
 *   length; the attention reads the first attention_mask-width columns), only logits and the new
 *   columns are fetched, and those are written into the cache in place. Capacity grows by an eighth
 *   plus 256 columns when full, so regrowth copies are amortised.
 *
 * Contract: worker thread, one owner (the scheduler). Arrays handed in (`join`, `prefill`'s prefix)
 * are never written; arrays handed out (`extract`) are fresh copies the caller owns. The cache's own
 * arrays are written only between forward passes (`advance`), never while a pass that reads them runs.
 */
import { i64Data, kvLike, kvTensor, newKv, newKvOutput, type CacheShape, type KvArray, type KvMode, type OrtTensor } from '../tensors.js';


/** The past_key_values feeds for a cache of `rows` x `columns` positions (empty tensors when columns is 0). */
export function pastFeeds(shape: CacheShape, cache: { rows: number; length: number; kv: readonly KvArray[] }): Record<string, unknown> {
  const { layers, kvHeads, headDim } = shape;
  const dims = [cache.rows, kvHeads, cache.length, headDim];
  const feeds: Record<string, unknown> = {};
  for (let l = 0; l < layers; l++) {
    feeds[`past_key_values.${l}.key`] = kvTensor(cache.kv[2 * l] ?? newKv(shape, 0), dims);
    feeds[`past_key_values.${l}.value`] = kvTensor(cache.kv[2 * l + 1] ?? newKv(shape, 0), dims);
  }
  return feeds;
}

/** The present.{i}.key/value outputs of a forward pass, keys then values per layer. */
export function presents(shape: CacheShape, out: Record<string, OrtTensor>): KvArray[] {
  const list: KvArray[] = [];
  for (let l = 0; l < shape.layers; l++) list.push(out[`present.${l}.key`]!.data as KvArray, out[`present.${l}.value`]!.data as KvArray);
  return list;
}

/** The outputs an `append` pass fetches: logits and the fed positions' keys and values. */
export function appendFetches(shape: CacheShape): string[] {
  const names = ['logits'];
  for (let l = 0; l < shape.layers; l++) names.push(newKvOutput(l, 'key'), newKvOutput(l, 'value'));
  return names;
}

/** One row of a [rows, kvHeads, columns, headDim] tensor, from column `column` on. */
interface RowAt {
  data: KvArray;
  row: number;
  /** Columns of the tensor (its stride between heads). */
  length: number;
  column: number;
}

/** Copies `count` columns of every head from one row to another (the tensors may differ in width). */
function copyColumns(shape: CacheShape, from: RowAt, to: RowAt, count: number): void {
  const { kvHeads, headDim } = shape;
  for (let h = 0; h < kvHeads; h++) {
    const src = ((from.row * kvHeads + h) * from.length + from.column) * headDim;
    // Both arrays are of the cache's one type (float32 values or half bits).
    (to.data as Float32Array).set(from.data.subarray(src, src + count * headDim) as Float32Array, ((to.row * kvHeads + h) * to.length + to.column) * headDim);
  }
}

/**
 * Copies columns [from, to) of one row of a cache (a row whose `length` real positions end at column
 * `end`, default `columns`, of tensors `columns` wide) into fresh [1, kvHeads, to - from, headDim] tensors.
 */
export function extractRow(shape: CacheShape, cache: { kv: readonly KvArray[]; columns: number; end?: number }, row: { index: number; length: number; from: number; to: number }): KvArray[] {
  const count = row.to - row.from;
  const start = (cache.end ?? cache.columns) - row.length + row.from;
  return cache.kv.map((tensor) => {
    const out = kvLike(tensor, shape.kvHeads * count * shape.headDim);
    copyColumns(shape, { data: tensor, row: row.index, length: cache.columns, column: start }, { data: out, row: 0, length: count, column: 0 }, count);
    return out;
  });
}

/** Columns to allocate for `needed` in `append` mode: an eighth more plus 256, in multiples of 64. */
const withRoom = (needed: number) => Math.ceil((needed + needed / 8 + 256) / 64) * 64;

export class KvBatch {
  /** Keys then values per layer, each [rows, kvHeads, capacity, headDim]. */
  private kv: KvArray[] = [];
  /** Columns allocated per row (== length in `present` mode). */
  private capacity = 0;
  /** Columns in use by every row (the longest row's length); shorter rows are left-padded. */
  length = 0;
  /** Real positions of each row (its rightmost used columns); the next position_id of the row. */
  readonly rowLengths: number[] = [];

  constructor(private readonly shape: CacheShape, readonly mode: KvMode = 'present') {}

  /**
   * A one-row cache for a prompt's prefill: the cached prefix (arrays of the KV store, read, never
   * written), with room for `columns` positions in `append` mode.
   */
  static prefill(shape: CacheShape, mode: KvMode, columns: number, prefix?: { length: number; kv: readonly KvArray[] }): KvBatch {
    const row = new KvBatch(shape, mode);
    const n = prefix?.length ?? 0;
    if (mode === 'present') {
      row.kv = prefix ? [...prefix.kv] : [];
      row.capacity = n;
    } else {
      // Room to decode after the prompt: an empty batch adopts this row's buffers without a copy (`joinRow`).
      row.capacity = withRoom(columns);
      row.kv = Array.from({ length: 2 * shape.layers }, (_, t) => {
        const out = newKv(shape, shape.kvHeads * row.capacity * shape.headDim);
        if (prefix) copyColumns(shape, { data: prefix.kv[t]!, row: 0, length: n, column: 0 }, { data: out, row: 0, length: row.capacity, column: 0 }, n);
        return out;
      });
    }
    row.rowLengths.push(n);
    row.length = n;
    return row;
  }

  get rows(): number {
    return this.rowLengths.length;
  }

  /** Output names to fetch for a pass over this cache; undefined: all of them. */
  get fetches(): string[] | undefined {
    return this.mode === 'append' ? appendFetches(this.shape) : undefined;
  }

  /**
   * Adds a one-row cache (a prefill's, `KvBatch.prefill`) as the last row. An empty batch takes the
   * row's buffers as they are; otherwise its columns are copied in. The row must not be used after.
   */
  joinRow(row: KvBatch): void {
    if (row.rows !== 1 || row.mode !== this.mode) throw new Error('joinRow: a one-row cache of the same mode');
    if (this.rows === 0 && row.length === row.rowLengths[0]) {
      this.kv = row.kv;
      this.capacity = row.capacity;
      this.length = row.length;
      this.rowLengths.push(row.length);
      return;
    }
    this.join(row.kv, row.rowLengths[0]!, { columns: row.capacity, end: row.length });
  }

  /**
   * Adds a sequence's cache as the last row, re-padding every row to a common length: [1, kvHeads, n,
   * headDim] per tensor, or wider (`source.columns`) with its n positions ending at column `source.end`.
   */
  join(rowKv: readonly KvArray[], n: number, source: { columns: number; end: number } = { columns: n, end: n }): void {
    const rows = this.rows + 1;
    const target = Math.max(this.length, n);
    const capacity = this.mode === 'append' ? Math.max(this.capacity, withRoom(target)) : target;
    const { kvHeads, headDim } = this.shape;
    this.kv = rowKv.map((fresh, t) => {
      const out = newKv(this.shape, rows * kvHeads * capacity * headDim);
      for (let r = 0; r < rows - 1; r++) {
        copyColumns(this.shape, { data: this.kv[t]!, row: r, length: this.capacity, column: 0 }, { data: out, row: r, length: capacity, column: target - this.length }, this.length);
      }
      copyColumns(this.shape, { data: fresh, row: 0, length: source.columns, column: source.end - n }, { data: out, row: rows - 1, length: capacity, column: target - n }, n);
      return out;
    });
    this.rowLengths.push(n);
    this.length = target;
    this.capacity = capacity;
  }

  /** Drops rows (indices in this batch) and the left padding no remaining row needs. */
  remove(rowsToDrop: readonly number[]): void {
    const drop = new Set(rowsToDrop);
    const keep = this.rowLengths.map((_, r) => r).filter((r) => !drop.has(r));
    if (keep.length === 0) return this.clear();
    const target = Math.max(...keep.map((r) => this.rowLengths[r]!));
    const capacity = this.mode === 'append' ? withRoom(target) : target;
    const { kvHeads, headDim } = this.shape;
    this.kv = this.kv.map((tensor) => {
      const out = newKv(this.shape, keep.length * kvHeads * capacity * headDim);
      keep.forEach((r, i) => copyColumns(this.shape, { data: tensor, row: r, length: this.capacity, column: this.length - target }, { data: out, row: i, length: capacity, column: 0 }, target));
      return out;
    });
    const lengths = keep.map((r) => this.rowLengths[r]!);
    this.rowLengths.splice(0, this.rowLengths.length, ...lengths);
    this.length = target;
    this.capacity = capacity;
  }

  clear(): void {
    this.kv = [];
    this.length = 0;
    this.capacity = 0;
    this.rowLengths.length = 0;
  }

  /** Feeds for one pass: the cache as past_key_values (`capacity` columns wide; the mask tells how many are in use). */
  pastFeeds(): Record<string, unknown> {
    return pastFeeds(this.shape, { rows: this.rows, length: this.capacity, kv: this.kv });
  }

  /** The attention mask for a pass feeding `fed` positions per row: [rows, length + fed], 0 over each row's padding. */
  stepMask(fed = 1): unknown {
    const width = this.length + fed;
    const mask = new BigInt64Array(this.rows * width);
    this.rowLengths.forEach((n, r) => mask.fill(1n, r * width + this.length - n, (r + 1) * width));
    return i64Data(mask, [this.rows, width]);
  }

  /** Takes the presents of a step (one more column, real in every row) as the batch cache (`present` mode). */
  advance(presentKv: KvArray[]): void {
    this.kv = presentKv;
    this.length++;
    this.capacity = this.length;
    for (let r = 0; r < this.rowLengths.length; r++) this.rowLengths[r] = this.rowLengths[r]! + 1;
  }

  /** Takes the outputs of a pass that fed `fed` positions to every row (real in every row). */
  advanceFrom(out: Record<string, OrtTensor>, fed = 1): void {
    if (this.mode === 'present') {
      this.kv = presents(this.shape, out);
      this.capacity = this.length + fed;
    } else {
      if (this.length + fed > this.capacity) this.grow(withRoom(this.length + fed));
      for (let l = 0; l < this.shape.layers; l++) {
        for (const [t, kind] of [[2 * l, 'key'], [2 * l + 1, 'value']] as const) {
          const fresh = out[newKvOutput(l, kind)]!.data as KvArray;
          for (let r = 0; r < this.rows; r++) copyColumns(this.shape, { data: fresh, row: r, length: fed, column: 0 }, { data: this.kv[t]!, row: r, length: this.capacity, column: this.length }, fed);
        }
      }
    }
    this.length += fed;
    for (let r = 0; r < this.rowLengths.length; r++) this.rowLengths[r] = this.rowLengths[r]! + fed;
  }

  /** Moves the cache into tensors of `capacity` columns (`append` mode). */
  private grow(capacity: number): void {
    this.kv = this.kv.map((tensor) => {
      const out = newKv(this.shape, this.rows * this.shape.kvHeads * capacity * this.shape.headDim);
      for (let r = 0; r < this.rows; r++) copyColumns(this.shape, { data: tensor, row: r, length: this.capacity, column: 0 }, { data: out, row: r, length: capacity, column: 0 }, this.length);
      return out;
    });
    this.capacity = capacity;
  }

  /** A copy of positions [from, rowLengths[row]) of one row, [1, kvHeads, length - from, headDim] per tensor, without padding. */
  extract(row: number, from = 0): KvArray[] {
    const length = this.rowLengths[row]!;
    return extractRow(this.shape, { kv: this.kv, columns: this.capacity, end: this.length }, { index: row, length, from, to: length });
  }
}

/**
 * The batch KV layout (src/engines/onnx/decode/kv-batch.ts) on small synthetic tensors: rows left-padded to
 * a common length, the step mask hiding the padding, padding trimmed when rows leave, and one row's
 * KV read back without padding. Every value names its sequence, tensor, head, position and element.
 */
import { describe, expect, it } from 'vitest';
import { KvBatch, extractRow } from '../../src/engines/onnx/decode/kv-batch.js';
import type { CacheShape } from '../../src/engines/onnx/tensors.js';

const shape: CacheShape = { layers: 2, kvHeads: 2, headDim: 3 };
const TENSORS = 2 * shape.layers;

/** Value of sequence `seq`, tensor t, head h, position p, element e: digits seq|t|h|pp|e. */
const value = (seq: number, t: number, h: number, p: number, e: number) => seq * 100_000 + t * 10_000 + h * 1000 + p * 10 + e;

/** A sequence's KV for positions [from, to): [1, kvHeads, to - from, headDim] per tensor. */
function kvOf(seq: number, to: number, from = 0): Float32Array[] {
  return Array.from({ length: TENSORS }, (_, t) => {
    const out: number[] = [];
    for (let h = 0; h < shape.kvHeads; h++) for (let p = from; p < to; p++) for (let e = 0; e < shape.headDim; e++) out.push(value(seq, t, h, p, e));
    return Float32Array.from(out);
  });
}

type Feed = { data: Float32Array | BigInt64Array; dims: number[] };
const feed = (feeds: Record<string, unknown>, name: string) => feeds[name] as Feed;

/** The batch cache as nested arrays: [tensor][row][head][column] = element 0 (0 for padding). */
function layout(batch: KvBatch): number[][][][] {
  const feeds = batch.pastFeeds();
  return Array.from({ length: TENSORS }, (_, t) => {
    const { data, dims } = feed(feeds, `past_key_values.${t >> 1}.${t % 2 ? 'value' : 'key'}`);
    expect(dims).toEqual([batch.rows, shape.kvHeads, batch.length, shape.headDim]);
    return Array.from({ length: batch.rows }, (_, r) => Array.from({ length: shape.kvHeads }, (_, h) =>
      Array.from({ length: batch.length }, (_, c) => Number(data[((r * shape.kvHeads + h) * batch.length + c) * shape.headDim]))));
  });
}

/** Expected row: `pad` zeros, then positions 0..n-1 of `seq` (element 0). */
const row = (seq: number, t: number, h: number, n: number, pad: number) => [...Array<number>(pad).fill(0), ...Array.from({ length: n }, (_, p) => value(seq, t, h, p, 0))];

const mask = (batch: KvBatch) => {
  const { data, dims } = batch.stepMask() as Feed;
  return Array.from({ length: dims[0]! }, (_, r) => Array.from(data.slice(r * dims[1]!, (r + 1) * dims[1]!), Number));
};

/** The presents of one step: every row's columns plus one new position per row. */
function presentsAfterStep(batch: KvBatch, seqs: number[]): Float32Array[] {
  const feeds = batch.pastFeeds();
  const { kvHeads, headDim } = shape;
  const L = batch.length;
  return Array.from({ length: TENSORS }, (_, t) => {
    const past = feed(feeds, `past_key_values.${t >> 1}.${t % 2 ? 'value' : 'key'}`).data as Float32Array;
    const out = new Float32Array(batch.rows * kvHeads * (L + 1) * headDim);
    for (let r = 0; r < batch.rows; r++) {
      for (let h = 0; h < kvHeads; h++) {
        const at = ((r * kvHeads + h) * (L + 1)) * headDim;
        out.set(past.subarray(((r * kvHeads + h) * L) * headDim, ((r * kvHeads + h) * L + L) * headDim), at);
        for (let e = 0; e < headDim; e++) out[at + L * headDim + e] = value(seqs[r]!, t, h, batch.rowLengths[r]!, e);
      }
    }
    return out;
  });
}

describe('KvBatch', () => {
  it('joins rows left-padded to the longest, whichever comes first', () => {
    const batch = new KvBatch(shape);
    batch.join(kvOf(1, 3), 3);
    batch.join(kvOf(2, 5), 5); // longer: the first row is re-padded
    batch.join(kvOf(3, 2), 2); // shorter: padded on arrival
    expect(batch.length).toBe(5);
    expect(batch.rowLengths).toEqual([3, 5, 2]);
    const cache = layout(batch);
    for (let t = 0; t < TENSORS; t++) {
      for (let h = 0; h < shape.kvHeads; h++) {
        expect(cache[t]![0]![h]).toEqual(row(1, t, h, 3, 2));
        expect(cache[t]![1]![h]).toEqual(row(2, t, h, 5, 0));
        expect(cache[t]![2]![h]).toEqual(row(3, t, h, 2, 3));
      }
    }
    expect(mask(batch)).toEqual([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1]]);
  });

  it('extracts a row without its padding, whole or from a position on', () => {
    const batch = new KvBatch(shape);
    batch.join(kvOf(1, 3), 3);
    batch.join(kvOf(2, 6), 6);
    expect(batch.extract(0)).toEqual(kvOf(1, 3));
    expect(batch.extract(1)).toEqual(kvOf(2, 6));
    expect(batch.extract(1, 4)).toEqual(kvOf(2, 6, 4));
    expect(batch.extract(0, 3)).toEqual(kvOf(1, 3, 3)); // nothing left: empty tensors
  });

  it('advances every row by the step column, then trims the padding no remaining row needs', () => {
    const batch = new KvBatch(shape);
    batch.join(kvOf(1, 2), 2);
    batch.join(kvOf(2, 5), 5);
    batch.join(kvOf(3, 3), 3);
    batch.advance(presentsAfterStep(batch, [1, 2, 3]));
    expect(batch.length).toBe(6);
    expect(batch.rowLengths).toEqual([3, 6, 4]);
    expect(batch.extract(0)).toEqual(kvOf(1, 3));
    expect(batch.extract(2)).toEqual(kvOf(3, 4));
    expect(mask(batch)).toEqual([[0, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1]]);

    batch.remove([1]); // the longest leaves: the others need only 4 columns
    expect(batch.length).toBe(4);
    expect(batch.rowLengths).toEqual([3, 4]);
    const cache = layout(batch);
    for (let t = 0; t < TENSORS; t++) {
      for (let h = 0; h < shape.kvHeads; h++) {
        expect(cache[t]![0]![h]).toEqual(row(1, t, h, 3, 1));
        expect(cache[t]![1]![h]).toEqual(row(3, t, h, 4, 0));
      }
    }
    expect(batch.extract(1)).toEqual(kvOf(3, 4));

    batch.remove([0, 1]);
    expect([batch.rows, batch.length]).toEqual([0, 0]);
    expect(feed(batch.pastFeeds(), 'past_key_values.0.key').dims).toEqual([0, shape.kvHeads, 0, shape.headDim]);
  });

  it('never writes into the arrays it was given', () => {
    const first = kvOf(1, 2);
    const second = kvOf(2, 4);
    const batch = new KvBatch(shape);
    batch.join(first, 2);
    batch.join(second, 4);
    batch.remove([0]);
    expect(first).toEqual(kvOf(1, 2));
    expect(second).toEqual(kvOf(2, 4));
  });
});

/** The new_key_values outputs of an `append` pass feeding `fed` positions per row (each row's next positions). */
function newKv(batch: KvBatch, seqs: number[], fed = 1): Record<string, { data: Float32Array; dims: number[]; type: string }> {
  const out: Record<string, { data: Float32Array; dims: number[]; type: string }> = {};
  for (let t = 0; t < TENSORS; t++) {
    const data: number[] = [];
    for (let r = 0; r < batch.rows; r++) for (let h = 0; h < shape.kvHeads; h++) for (let p = 0; p < fed; p++) for (let e = 0; e < shape.headDim; e++) data.push(value(seqs[r]!, t, h, batch.rowLengths[r]! + p, e));
    out[`new_key_values.${t >> 1}.${t % 2 ? 'value' : 'key'}`] = { data: Float32Array.from(data), dims: [batch.rows, shape.kvHeads, fed, shape.headDim], type: 'float32' };
  }
  return out;
}

describe('KvBatch, append mode (the cache fed with room to grow, new columns written in place)', () => {
  it('holds what present mode holds, step after step, across regrowth and rows leaving', () => {
    const batch = new KvBatch(shape, 'append');
    batch.join(kvOf(1, 2), 2);
    batch.join(kvOf(2, 5), 5);
    batch.join(kvOf(3, 3), 3);
    expect(batch.fetches).toEqual(['logits', 'new_key_values.0.key', 'new_key_values.0.value', 'new_key_values.1.key', 'new_key_values.1.value']);
    const width = () => feed(batch.pastFeeds(), 'past_key_values.1.value').dims[2]!;
    const first = width();
    expect(first).toBeGreaterThan(batch.length); // room to grow
    const widths = new Set<number>();
    for (let step = 0; step < 400; step++) {
      batch.advanceFrom(newKv(batch, [1, 2, 3]) as never);
      widths.add(width());
      expect(width()).toBeGreaterThanOrEqual(batch.length);
    }
    expect(widths.size).toBeGreaterThan(1); // it grew, and kept its contents
    expect(batch.rowLengths).toEqual([402, 405, 403]);
    expect(batch.extract(0)).toEqual(kvOf(1, 402));
    expect(batch.extract(1, 400)).toEqual(kvOf(2, 405, 400));
    expect(mask(batch)[0]).toEqual([...Array<number>(3).fill(0), ...Array<number>(403).fill(1)]);
    batch.remove([1]);
    expect(batch.rowLengths).toEqual([402, 403]);
    expect(batch.extract(0)).toEqual(kvOf(1, 402));
    expect(batch.extract(1)).toEqual(kvOf(3, 403));
    expect(mask(batch)).toEqual([[0, ...Array<number>(403).fill(1)], Array<number>(404).fill(1)]);
  });

  it('prefills one row in chunks after a cached prefix, and never writes into the prefix', () => {
    const prefix = kvOf(4, 3);
    const row = KvBatch.prefill(shape, 'append', 9, { length: 3, kv: prefix });
    expect(feed(row.pastFeeds(), 'past_key_values.0.key').dims[2]).toBeGreaterThanOrEqual(9); // room for the prompt and what follows
    expect(mask(row as KvBatch)).toEqual([[1, 1, 1, 1]]);
    row.advanceFrom(newKv(row, [4], 4) as never, 4);
    row.advanceFrom(newKv(row, [4], 2) as never, 2);
    expect(row.length).toBe(9);
    expect(row.extract(0)).toEqual(kvOf(4, 9));
    expect(prefix).toEqual(kvOf(4, 3));
    const present = KvBatch.prefill(shape, 'present', 9, { length: 3, kv: prefix });
    expect(present.fetches).toBeUndefined();
    expect(present.extract(0)).toEqual(prefix);
  });

  it('an empty batch adopts a prefilled row; a running one copies it in, left-padded', () => {
    const batch = new KvBatch(shape, 'append');
    const first = KvBatch.prefill(shape, 'append', 4);
    first.advanceFrom(newKv(first, [5], 4) as never, 4);
    batch.joinRow(first);
    const second = KvBatch.prefill(shape, 'append', 2);
    second.advanceFrom(newKv(second, [6], 2) as never, 2);
    batch.joinRow(second);
    expect(batch.rowLengths).toEqual([4, 2]);
    expect(batch.extract(0)).toEqual(kvOf(5, 4));
    expect(batch.extract(1)).toEqual(kvOf(6, 2));
    expect(mask(batch)).toEqual([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]]);
    batch.advanceFrom(newKv(batch, [5, 6]) as never);
    expect(batch.extract(1)).toEqual(kvOf(6, 3));
  });
});

describe('extractRow', () => {
  it('reads positions [from, to) of a single sequence cache', () => {
    expect(extractRow(shape, { kv: kvOf(7, 5), columns: 5 }, { index: 0, length: 5, from: 1, to: 4 })).toEqual(kvOf(7, 4, 1));
  });
});

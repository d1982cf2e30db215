/**
 * The prefix cache (src/engines/onnx/decode/prefix-cache.ts) on small synthetic KV: the longest common
 * token prefix, at most all but the prompt's last token, with the KV of exactly those positions; an
 * extended sequence replacing its entry; the byte budget and least-recently-used eviction; the stats.
 * Every KV value names its position, so a wrong slice shows.
 */
import { describe, expect, it } from 'vitest';
import { PrefixCache, kvBytesPerToken } from '../../src/engines/onnx/decode/prefix-cache.js';
import type { CacheShape } from '../../src/engines/onnx/tensors.js';

const shape: CacheShape = { layers: 2, kvHeads: 2, headDim: 3 };
const TENSORS = 2 * shape.layers;
const PER_TOKEN = kvBytesPerToken(shape); // 2 layers x 2 x 2 heads x 3 x 4 bytes = 96

/** KV value of token `token` at position p, tensor t, head h, element e. */
const value = (token: number, p: number, t: number, h: number, e: number) => token * 10_000 + p * 100 + t * 10 + h + e / 10;

/** The KV a model would give `tokens` for positions [from, tokens.length). */
function kvOf(tokens: readonly number[], from = 0): Float32Array[] {
  return Array.from({ length: TENSORS }, (_, t) => {
    const out: number[] = [];
    for (let h = 0; h < shape.kvHeads; h++) for (let p = from; p < tokens.length; p++) for (let e = 0; e < shape.headDim; e++) out.push(value(tokens[p]!, p, t, h, e));
    return Float32Array.from(out);
  });
}

/** Stores `tokens` as the decoder does; returns the `from` of each readKv call. */
function store(cache: PrefixCache, tokens: number[]): number[] {
  const reads: number[] = [];
  cache.store(tokens, (from = 0) => (reads.push(from), kvOf(tokens, from)));
  return reads;
}

const seq = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('PrefixCache', () => {
  it('finds the longest common token prefix over every entry, with the KV of exactly those positions', () => {
    const cache = new PrefixCache(shape, 1 << 20);
    expect(cache.lookup([1, 2, 3])).toBeUndefined();
    store(cache, [1, 2, 3, 4, 5, 6]);
    store(cache, [1, 2, 9, 9]);
    const hit = cache.lookup([1, 2, 3, 4, 7, 8])!;
    expect(hit.length).toBe(4);
    expect(hit.kv).toEqual(kvOf([1, 2, 3, 4]));
    // A rewritten middle: the tokens before the rewrite still match.
    expect(cache.lookup([1, 2, 9, 5, 5])!.length).toBe(3);
    expect(cache.lookup([7, 1, 2])).toBeUndefined();
    expect(cache.stats()).toMatchObject({ hits: 2, misses: 2, tokensReused: 7, entries: 2 });
  });

  it('leaves at least one prompt token to prefill', () => {
    const cache = new PrefixCache(shape, 1 << 20);
    store(cache, [1, 2, 3, 4]);
    expect(cache.lookup([1, 2, 3, 4])!.length).toBe(3);
    expect(cache.lookup([1, 2, 3])!.length).toBe(2);
    expect(cache.lookup([1])).toBeUndefined();
    const whole = cache.lookup([1, 2, 3, 4, 5])!;
    expect(whole.length).toBe(4);
    expect(whole.kv).toEqual(kvOf([1, 2, 3, 4]));
  });

  it('a sequence extending an entry replaces it, copying only its new tokens; a prefix of an entry stores nothing', () => {
    const cache = new PrefixCache(shape, 1 << 20);
    expect(store(cache, [1, 2, 3])).toEqual([0]);
    expect(store(cache, [1, 2, 3, 4, 5])).toEqual([3]);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 5 * PER_TOKEN });
    expect(cache.lookup([1, 2, 3, 4, 5, 6])!.kv).toEqual(kvOf([1, 2, 3, 4, 5]));
    expect(store(cache, [1, 2, 3])).toEqual([]);
    // A branch: a new entry beside the first, copied whole.
    expect(store(cache, [1, 2, 7])).toEqual([0]);
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 8 * PER_TOKEN, evictions: 0 });
  });

  it('holds at most its budget, dropping the least recently used entries', () => {
    const cache = new PrefixCache(shape, 10 * PER_TOKEN);
    store(cache, seq(100, 104)); // A, 4 tokens
    store(cache, seq(200, 204)); // B, 4 tokens
    cache.lookup([100, 101, 102, 999]); // A is now more recent than B
    store(cache, seq(300, 304)); // C: 12 tokens > 10, B goes
    expect(cache.stats()).toMatchObject({ entries: 2, bytes: 8 * PER_TOKEN, evictions: 1 });
    expect(cache.lookup([200, 201, 202])).toBeUndefined();
    expect(cache.lookup([100, 101, 102])!.length).toBe(2);
    expect(cache.lookup([300, 301, 302])!.length).toBe(2);
    // Longer than the whole budget: not stored, nothing evicted.
    store(cache, seq(400, 411));
    expect(cache.stats()).toMatchObject({ entries: 2, evictions: 1 });
    // A budget of 0 caches nothing.
    const off = new PrefixCache(shape, 0);
    expect(store(off, [1, 2, 3])).toEqual([]);
    expect(off.lookup([1, 2, 3, 4])).toBeUndefined();
  });

  it('never hands out an array it will write, nor writes one it was given', () => {
    const cache = new PrefixCache(shape, 1 << 20);
    const given = kvOf([1, 2, 3]);
    cache.store([1, 2, 3], () => given);
    const snapshot = given.map((a) => a.slice());
    const partial = cache.lookup([1, 2, 5])!;
    partial.kv[0]![0] = -1; // a copy: the entry is unchanged
    store(cache, [1, 2, 3, 4]);
    expect(given).toEqual(snapshot);
    expect(cache.lookup([1, 2, 3, 4, 5])!.kv).toEqual(kvOf([1, 2, 3, 4]));
  });
});

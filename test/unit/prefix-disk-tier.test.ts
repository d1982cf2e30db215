/**
 * The ONNX engine's prefix cache behind its disk tier (src/engines/onnx/decode/prefix-disk-tier.ts),
 * on made-up KV: entries worth keeping are written behind the stores (a queued one that a later one
 * extends is not), a fresh cache (a new worker) reads the longest file back and hands out exactly
 * the KV that was stored, and a file whose arrays do not fit the model is not handed out.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PromptDiskStore } from '../../src/cache/disk-store.js';
import type { CacheKey } from '../../src/cache/state-file.js';
import { PrefixCache } from '../../src/engines/onnx/decode/prefix-cache.js';
import { PrefixDiskTier } from '../../src/engines/onnx/decode/prefix-disk-tier.js';
import type { CacheShape } from '../../src/engines/onnx/tensors.js';

const SHAPE: CacheShape = { layers: 2, kvHeads: 2, headDim: 3, dtype: 'float32' };
const KEY: CacheKey = { engine: 'onnx', engineVersion: 'test', model: 'm'.repeat(32), variant: JSON.stringify(SHAPE) };
const tokens = (n: number) => Array.from({ length: n }, (_, i) => 100 + i);

/** KV of a sequence whose value at (array t, head k, token i, dim d) says where it is: readKv(from) as the batch gives it. */
const kvOf = (n: number) => (from = 0): Float32Array[] => Array.from({ length: 2 * SHAPE.layers }, (_, t) => {
  const out = new Float32Array(SHAPE.kvHeads * (n - from) * SHAPE.headDim);
  for (let k = 0; k < SHAPE.kvHeads; k++) for (let i = from; i < n; i++) for (let d = 0; d < SHAPE.headDim; d++) out[(k * (n - from) + i - from) * SHAPE.headDim + d] = t * 1e4 + k * 1e3 + i * 10 + d;
  return out;
});

let dir: string;
let warnings: string[];
const tier = (shape: CacheShape = SHAPE, minTokens = 8) => {
  const memory = new PrefixCache(shape, 1 << 20);
  const disk = new PromptDiskStore({ dir, budgetBytes: 1 << 20, minTokens, key: KEY, log: (level, msg) => void (level === 'warn' && warnings.push(msg)) });
  return { memory, disk, tier: new PrefixDiskTier(memory, disk, shape) };
};
const filesIn = (store: PromptDiskStore) => fs.readdirSync(store.folder).filter((f) => f.endsWith('.lspc'));

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prefix-disk-tier-'));
  warnings = [];
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('prefix cache with a disk tier', () => {
  it('writes what is worth keeping behind the stores, and a fresh cache reads the exact KV back as a hit', async () => {
    const a = tier();
    a.tier.store(tokens(5), kvOf(5)); // shorter than minTokens: memory only
    a.tier.store(tokens(20), kvOf(20));
    await a.tier.flush();
    expect(filesIn(a.disk)).toHaveLength(1);
    expect(a.tier.stats()).toEqual({ reads: 0, writes: 1 });

    const b = tier();
    const prompt = [...tokens(20), 7, 8];
    const prefix = b.tier.lookup(prompt)!;
    expect(prefix.length).toBe(20);
    expect(prefix.kv.map((x) => [...x])).toEqual(kvOf(20)().map((x) => [...x]));
    expect(b.tier.stats().reads).toBe(1);
    expect(b.memory.stats()).toMatchObject({ hits: 1, entries: 1 });
    // Now in memory: the next lookup does not read the disk again.
    b.tier.lookup(prompt);
    expect(b.tier.stats().reads).toBe(1);
    expect(warnings).toEqual([]);
  });

  it('a queued write that a later store extends is not written; the longer one is', async () => {
    const a = tier();
    a.tier.store(tokens(10), kvOf(10));
    a.tier.store(tokens(12), kvOf(12)); // queued while the first is being written
    a.tier.store(tokens(16), kvOf(16)); // replaces the queued 12
    await a.tier.flush();
    expect(a.tier.stats().writes).toBe(2);
    // The 16-token file extends the 10-token one, which it replaced.
    expect(filesIn(a.disk)).toHaveLength(1);
    expect(tier().tier.lookup([...tokens(16), 1])!.length).toBe(16);
  });

  it('a prompt\'s first tokens shared part way through its prefill stay in memory; the sequence\'s store at its end writes the whole', async () => {
    const a = tier();
    a.tier.share(tokens(12), kvOf(12));
    expect(a.memory.reusable([...tokens(12), 1])).toBe(12);
    expect(a.tier.reusable([...tokens(12), 1])).toBe(12);
    await a.tier.flush();
    expect(a.tier.stats().writes).toBe(0);
    a.tier.store(tokens(20), kvOf(20));
    await a.tier.flush();
    expect(a.tier.stats().writes).toBe(1);
    expect(tier().tier.lookup([...tokens(20), 1])!.length).toBe(20);
  });

  it('a file whose arrays do not fit the model is not handed out', async () => {
    const a = tier();
    a.tier.store(tokens(20), kvOf(20));
    await a.tier.flush();
    const other = tier({ ...SHAPE, headDim: 4 });
    expect(other.tier.lookup([...tokens(20), 1])).toBeUndefined();
    expect(other.tier.stats().reads).toBe(0);
  });
});

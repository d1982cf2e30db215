/**
 * The llama.cpp engine's prompt cache on disk at lookup (src/engines/llama/slot-disk.ts), on a
 * stand-in for a loaded model and its sequences (what the lookup reads of them: a sequence's size),
 * with a real file in the store: a file is placed for a prompt only when it shares at least
 * promptCacheMinTokens with it, and more than the free sequences hold in memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LlamaContextSequence } from 'node-llama-cpp';
import { PromptDiskStore } from '../../src/cache/disk-store.js';
import type { LlamaLoaded } from '../../src/engines/llama/load.js';
import { SlotDiskCache } from '../../src/engines/llama/slot-disk.js';
import { llamaCacheKey } from '../../src/engines/llama/state-file.js';

const SIZE = 32_768;
const MIN_TOKENS = 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const tokens = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** A disk cache of a stand-in model, its one free sequence, and a file of `held` tokens already written. */
async function withFile(held: number[]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slot-disk-'));
  dirs.push(dir);
  const info = { id: 'fake', dir, gguf: { parts: [] } };
  const engine = { promptCacheDir: dir, promptCacheDiskBytes: 1 << 30, promptCacheMinTokens: MIN_TOKENS, kvCacheDtype: 'f16', flashAttention: false };
  const loaded = { info, engine } as unknown as LlamaLoaded;
  const key = llamaCacheKey(loaded.info, loaded.engine, SIZE);
  const store = new PromptDiskStore({ dir, budgetBytes: 1 << 30, minTokens: MIN_TOKENS, key, log: () => {} });
  const state = new Uint8Array(64);
  expect(await store.write({ header: { exact: held.length, meta: { llamaStateBytes: state.byteLength } }, tokens: held, payload: [state] })).toBe(true);
  const slots = [{ sequence: { contextSize: SIZE, needsCheckpoints: false, model: { fileInsights: {} } } as unknown as LlamaContextSequence, busy: false, lastUsed: 0 }];
  return { cache: new SlotDiskCache(loaded, () => {}), slots };
}

describe('the llama.cpp prompt cache on disk at lookup', () => {
  it('places a file sharing a long prefix, never one sharing only a chat template\'s first tokens', async () => {
    const session = tokens(18_000);
    const { cache, slots } = await withFile(session);
    // The session's next turn: the file's prefix.
    expect(cache.lookup([...session, 5, 6], 0, slots)).toMatchObject({ length: 18_000, slot: slots[0] });
    // Not when a free sequence holds as much in memory.
    expect(cache.lookup([...session, 5, 6], 18_000, slots)).toBeUndefined();
    // Another conversation sharing the template's first 6 tokens: reading the whole file for them is no read.
    expect(cache.lookup([...tokens(6), ...tokens(8000, 100_000)], 0, slots)).toBeUndefined();
    // A prefix just under the shortest prefix written is not read either; one of exactly that length is.
    expect(cache.lookup([...tokens(MIN_TOKENS - 1), -1, -2], 0, slots)).toBeUndefined();
    expect(cache.lookup([...tokens(MIN_TOKENS), -1, -2], 0, slots)).toMatchObject({ length: MIN_TOKENS });
  });
});

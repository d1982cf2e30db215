/**
 * The prompt cache on disk (src/cache/): the file format (our header, token ids, payload, checksum),
 * what is refused before anything reaches an engine (corrupt, truncated, foreign, another key), the
 * LRU within the disk budget, and a full disk that stops the writing, not the caller.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PromptDiskStore, type DiskEntry } from '../../src/cache/disk-store.js';
import { decodeStateFile, encodeStateFile, MAGIC, StateFileError, type CacheKey } from '../../src/cache/state-file.js';
import { defaultPromptCacheDir, prefixFileName } from '../../src/cache/cache-key.js';

const KEY: CacheKey = { engine: 'onnx', engineVersion: '1.30.0', model: 'a'.repeat(32), variant: '{"layers":2}' };
const OTHER_MODEL: CacheKey = { ...KEY, model: 'b'.repeat(32) };
const tokens = (n: number, start = 1) => Array.from({ length: n }, (_, i) => start + i);
const payloadOf = (n: number, fill: number) => [new Uint8Array(n).fill(fill), new Uint8Array(8).fill(fill + 1)];
const concat = (chunks: Uint8Array[]) => Buffer.concat(chunks.map((c) => Buffer.from(c)));

let dir: string;
let warnings: string[];
const log = (level: string, message: string) => void (level === 'warn' && warnings.push(message));
const store = (options: Partial<ConstructorParameters<typeof PromptDiskStore>[0]> = {}) => new PromptDiskStore({ dir, budgetBytes: 1 << 20, minTokens: 4, key: KEY, log, ...options });
const files = (s: PromptDiskStore) => (fs.existsSync(s.folder) ? fs.readdirSync(s.folder).sort() : []);
const only = (s: PromptDiskStore, t: number[]): DiskEntry => s.longest(t, t.length)!.entry;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-disk-'));
  warnings = [];
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('state file format', () => {
  it('carries magic, version, key, token ids and payload, closed by a checksum over it all', () => {
    const bytes = concat(encodeStateFile({ header: { key: KEY, exact: 5, meta: { dtype: 'float32' } }, tokens: tokens(6), payload: payloadOf(100, 7) }));
    expect(bytes.subarray(0, 8).equals(MAGIC)).toBe(true);
    const file = decodeStateFile(bytes, KEY);
    expect([...file.tokens]).toEqual(tokens(6));
    expect(file.exact).toBe(5);
    expect(file.meta).toEqual({ dtype: 'float32' });
    expect(Buffer.from(file.payload).equals(concat(payloadOf(100, 7)))).toBe(true);
    // The payload starts 8-aligned (typed arrays over it need 4).
    expect(file.payload.byteOffset % 8).toBe(0);
  });

  it('refuses another key, a flipped byte anywhere, a cut and a file that is not ours', () => {
    const bytes = concat(encodeStateFile({ header: { key: KEY, exact: 3 }, tokens: tokens(3), payload: payloadOf(64, 1) }));
    expect(() => decodeStateFile(bytes, OTHER_MODEL)).toThrow(/another key/);
    expect(() => decodeStateFile(bytes, { ...KEY, engineVersion: '1.31.0' })).toThrow(StateFileError);
    for (const at of [20, bytes.length - 100, bytes.length - 1]) {
      const flipped = Buffer.from(bytes);
      flipped[at]! ^= 0x40;
      expect(() => decodeStateFile(flipped, KEY), `byte ${at}`).toThrow(StateFileError);
    }
    for (const cut of [4, 20, bytes.length - 33, bytes.length - 1]) expect(() => decodeStateFile(bytes.subarray(0, cut), KEY), `cut at ${cut}`).toThrow(StateFileError);
    expect(() => decodeStateFile(Buffer.from('GGUF and then some bytes of another format'), KEY)).toThrow(/magic/);
    const versioned = Buffer.from(bytes);
    versioned.writeUInt32LE(99, 8);
    expect(() => decodeStateFile(versioned, KEY)).toThrow(/version 99/);
  });
});

describe('prompt disk store', () => {
  it('writes a prefix atomically and finds it for a prompt that starts with it, within its exact part', async () => {
    const s = store();
    expect(await s.write({ header: { exact: 8 }, tokens: tokens(10), payload: payloadOf(32, 3) })).toBe(true);
    expect(files(s)).toEqual([prefixFileName(tokens(10))]);
    const prompt = [...tokens(10), 99, 98];
    const hit = s.longest(prompt, prompt.length - 1)!;
    expect(hit.length).toBe(8); // exact part only
    const file = s.read(hit.entry)!;
    expect([...file.tokens]).toEqual(tokens(10));
    expect(Buffer.from(file.payload).equals(concat(payloadOf(32, 3)))).toBe(true);
    expect(s.longest([5, 6, 7], 2)).toBeUndefined();
    // A second store on the same folder (another worker, a restart) finds it by reading the headers.
    expect(store().longest(prompt, 11)?.length).toBe(8);
    expect(warnings).toEqual([]);
  });

  it('hashes a large payload slice by slice as it writes, into the same file the whole-file encoder makes', async () => {
    const s = store({ budgetBytes: 64 << 20 });
    const big = [new Uint8Array(9 * 1024 * 1024 + 3).map((_, i) => i % 251), new Uint8Array(5).fill(9)];
    expect(await s.write({ header: { exact: 6 }, tokens: tokens(6), payload: big })).toBe(true);
    const onDisk = fs.readFileSync(path.join(s.folder, prefixFileName(tokens(6))));
    expect(Buffer.from(decodeStateFile(onDisk, KEY).payload).equals(concat(big))).toBe(true);
    // Byte for byte what the whole-file encoder makes of the same header.
    expect(onDisk.equals(concat(encodeStateFile({ header: { exact: 6, key: KEY }, tokens: tokens(6), payload: big })))).toBe(true);
  });

  it('a file that extends another of its key (the next turn) replaces it; others stay', async () => {
    const s = store();
    await s.write({ header: { exact: 6 }, tokens: tokens(6), payload: payloadOf(16, 1) });
    await s.write({ header: { exact: 6 }, tokens: tokens(6, 50), payload: payloadOf(16, 2) });
    await s.write({ header: { exact: 10 }, tokens: tokens(10), payload: payloadOf(16, 3) });
    expect(files(s)).toEqual([prefixFileName(tokens(10)), prefixFileName(tokens(6, 50))].sort());
    expect(store().longest(tokens(7), 6)?.entry.tokens.length).toBe(10);
  });

  it('keeps nothing shorter than minTokens, and rewrites nothing it already holds', async () => {
    const s = store({ minTokens: 8 });
    expect(await s.write({ header: { exact: 4 }, tokens: tokens(4), payload: payloadOf(8, 1) })).toBe(false);
    expect(await s.write({ header: { exact: 8 }, tokens: tokens(8), payload: payloadOf(8, 1) })).toBe(true);
    const before = fs.statSync(path.join(s.folder, prefixFileName(tokens(8)))).ino;
    expect(await s.write({ header: { exact: 8 }, tokens: tokens(8), payload: payloadOf(8, 1) })).toBe(true);
    expect(fs.statSync(path.join(s.folder, prefixFileName(tokens(8)))).ino).toBe(before);
    expect(files(s)).toHaveLength(1);
  });

  it('ignores, logs and removes a corrupt file, a truncated file and a file that is not ours', async () => {
    const s = store();
    await s.write({ header: { exact: 6 }, tokens: tokens(6), payload: payloadOf(4096, 5) });
    await s.write({ header: { exact: 6 }, tokens: tokens(6, 100), payload: payloadOf(4096, 6) });
    const corrupt = path.join(s.folder, prefixFileName(tokens(6)));
    const bytes = fs.readFileSync(corrupt);
    bytes[bytes.length - 2000]! ^= 1;
    fs.writeFileSync(corrupt, bytes);
    const truncated = path.join(s.folder, prefixFileName(tokens(6, 100)));
    fs.truncateSync(truncated, fs.statSync(truncated).size - 1000);
    fs.writeFileSync(path.join(s.folder, 'junk.lspc'), 'not a cache file at all');

    const fresh = store();
    expect(fresh.read(only(fresh, tokens(6)))).toBeUndefined();
    expect(fresh.read(only(fresh, tokens(6, 100)))).toBeUndefined();
    expect(fresh.longest(tokens(6), 6)).toBeUndefined();
    expect(files(fresh)).toEqual([]);
    expect(warnings.join('\n')).toMatch(/checksum mismatch/);
    expect(warnings.join('\n')).toMatch(/bytes where the header says/);
    expect(warnings.join('\n')).toMatch(/magic/);
  });

  it('another model (another signature) neither finds nor reads this model\'s files', async () => {
    const s = store();
    await s.write({ header: { exact: 6 }, tokens: tokens(6), payload: payloadOf(16, 5) });
    const other = store({ key: OTHER_MODEL });
    expect(other.folder).not.toBe(s.folder);
    expect(other.longest([...tokens(6), 7], 6)).toBeUndefined();
    // Even copied into its folder, the file is refused by its key (and removed from there).
    fs.mkdirSync(other.folder, { recursive: true });
    fs.copyFileSync(path.join(s.folder, prefixFileName(tokens(6))), path.join(other.folder, prefixFileName(tokens(6))));
    expect(other.longest([...tokens(6), 7], 6)).toBeUndefined();
    expect(warnings.join('\n')).toMatch(/another key/);
    expect(files(s)).toHaveLength(1);
  });

  it('stays within the disk budget over every key, dropping the least recently used files first', async () => {
    const fileBytes = (payload: number) => concat(encodeStateFile({ header: { key: KEY, exact: 4 }, tokens: tokens(4), payload: payloadOf(payload, 0) })).length;
    const one = fileBytes(1000);
    const s = store({ budgetBytes: 3 * one + 10 });
    const other = store({ key: OTHER_MODEL, budgetBytes: 3 * one + 10 });
    const at = (t: number[], k: PromptDiskStore, seconds: number) => fs.utimesSync(path.join(k.folder, prefixFileName(t)), seconds, seconds);
    await s.write({ header: { exact: 4 }, tokens: tokens(4, 10), payload: payloadOf(1000, 1) });
    at(tokens(4, 10), s, 1000);
    await other.write({ header: { exact: 4 }, tokens: tokens(4, 20), payload: payloadOf(1000, 2) });
    at(tokens(4, 20), other, 2000);
    await s.write({ header: { exact: 4 }, tokens: tokens(4, 30), payload: payloadOf(1000, 3) });
    at(tokens(4, 30), s, 3000);
    // The oldest is used now: it becomes the most recent.
    expect(s.read(only(s, tokens(4, 10)))).toBeDefined();
    await s.write({ header: { exact: 4 }, tokens: tokens(4, 40), payload: payloadOf(1000, 4) });
    // The least recently used (the other model's) went; three files fit.
    expect(fs.existsSync(path.join(other.folder, prefixFileName(tokens(4, 20))))).toBe(false);
    expect(files(s)).toEqual([tokens(4, 10), tokens(4, 30), tokens(4, 40)].map((t) => prefixFileName(t)).sort());
    // A file larger than the whole budget is not written at all, and evicts nothing.
    expect(await s.write({ header: { exact: 4 }, tokens: tokens(4, 50), payload: payloadOf(4 * one, 5) })).toBe(false);
    expect(files(s)).toHaveLength(3);
  });

  it('a full disk stops the writing (logged once), leaves no temp file, and reads go on', async () => {
    const s = store();
    await s.write({ header: { exact: 6 }, tokens: tokens(6), payload: payloadOf(16, 5) });
    const full = store({
      writeFile: async (file) => {
        fs.writeFileSync(file, 'partial');
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    });
    expect(full.worthKeeping(10)).toBe(true);
    expect(await full.write({ header: { exact: 8 }, tokens: tokens(8, 50), payload: payloadOf(16, 5) })).toBe(false);
    expect(full.worthKeeping(10)).toBe(false);
    expect(await full.write({ header: { exact: 8 }, tokens: tokens(8, 60), payload: payloadOf(16, 5) })).toBe(false);
    expect(warnings.filter((w) => /disk is full/.test(w))).toHaveLength(1);
    expect(files(full)).toEqual([prefixFileName(tokens(6))]);
    expect(full.read(only(full, tokens(6)))).toBeDefined();
  });

  it('lives under the user cache folder by default, never beside a model', () => {
    expect(defaultPromptCacheDir({ XDG_CACHE_HOME: '/x/cache' }, '/home/u')).toBe('/x/cache/local-inference-server/prompt-cache');
    expect(defaultPromptCacheDir({}, '/home/u')).toBe('/home/u/.cache/local-inference-server/prompt-cache');
  });
});

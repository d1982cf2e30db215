/**
 * The ONNX engine's prompt cache on disk through real workers on the bundled model: a prefix written
 * by one worker is read back after the model was unloaded, and by a fresh service on the same
 * folder (a restart), reported as cache reads, with the same greedy output as without any cache.
 * (Damaged files and a replaced model: ./prompt-cache-disk-faults.e2e.test.ts, in the e2e pass.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ONNX_CHAT_MODEL } from '../helpers/paths.js';
import { cacheFiles, chat, FIRST, MIN_TOKENS, secondTurn, serve, warnings } from '../helpers/disk-cache.js';

let dir: string;
/** Greedy replies of a service without any cache file: what every cached run must reproduce. */
let reference: { first: string; second: string };

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-cache-disk-'));
  const plain = await serve();
  try {
    const first = (await chat(plain, FIRST)).text;
    reference = { first, second: (await chat(plain, secondTurn(first))).text };
  } finally {
    await plain.close();
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('prompt cache on disk (real workers, ONNX)', () => {
  it('survives an idle unload: the next request reads its prefix back from disk, same greedy tokens', async () => {
    const service = await serve({ cacheDir: dir });
    try {
      expect(await chat(service, FIRST)).toEqual({ text: reference.first, reads: 0 });
      expect(await service.unload(ONNX_CHAT_MODEL)).toBe(true);
      expect(cacheFiles(dir)).toHaveLength(1);
      // The memory cache went with the worker: any read now comes from the file.
      const again = await chat(service, FIRST);
      expect(again.text).toBe(reference.first);
      expect(again.reads).toBeGreaterThan(MIN_TOKENS);
    } finally {
      await service.close();
    }
    expect(warnings).toEqual([]);
  });

  it('survives a restart: a fresh service on the same folder reads the prefix, same greedy tokens', async () => {
    const restarted = await serve({ cacheDir: dir });
    try {
      const second = await chat(restarted, secondTurn(reference.first));
      expect(second.text).toBe(reference.second);
      expect(second.reads).toBeGreaterThan(MIN_TOKENS);
    } finally {
      await restarted.close();
    }
    // The second turn's sequence is written too (beside the first's, or in its place when it extends it).
    expect(cacheFiles(dir).length).toBeGreaterThanOrEqual(1);
    expect(warnings).toEqual([]);
  });
});

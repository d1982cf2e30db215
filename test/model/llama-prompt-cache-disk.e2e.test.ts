/**
 * The llama.cpp engine's prompt cache on disk through a real service on the GGUF test model: the
 * sequences a model held are written when it is unloaded (src/engines/llama/slot-disk.ts), and read
 * back, checked, by the next request after the unload (in a fresh model process: what a restart
 * does to the engine; the service's own restart is tested on ONNX, prompt-cache-disk.test.ts),
 * reported as cache reads, decoding exactly as the same prefix held in memory does; a corrupt file
 * is logged and ignored (no cache read, the cold output).
 *
 * (Warm is compared with warm in memory, not with cold: on this prompt the engine's warm output
 * leaves its cold one after five tokens whether the prefix comes from memory or disk, the last
 * prompt token being evaluated alone instead of in the prefill's batch; issue 40's exact accounting.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR } from '../helpers/paths.js';
import { cacheFiles, chat, FIRST, MIN_TOKENS, serve, warnings } from '../helpers/disk-cache.js';
import type { RealService } from '../helpers/real-service.js';

/** A GGUF model's load takes ~30 s on a loaded 2-core machine (~5 s idle); this file loads it three times. */
const TIMEOUT_MS = 240_000;
const MODEL = { model: GGUF_CHAT_MODEL, modelsDir: GGUF_MODELS_DIR };
const turn = (service: RealService) => chat(service, FIRST, GGUF_CHAT_MODEL);
let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-prompt-disk-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('prompt cache on disk (real service, llama.cpp)', () => {
  it("survives an unload (the model's process ends), decodes as warm in memory; a corrupt file is ignored", { timeout: TIMEOUT_MS }, async () => {
    const service = await serve({ ...MODEL, cacheDir: dir });
    try {
      const cold = await turn(service);
      expect(cold.reads).toBe(0);
      const warm = await turn(service);
      expect(warm.reads).toBeGreaterThan(MIN_TOKENS);
      expect(cacheFiles(dir)).toHaveLength(0);
      // The unload writes the sequences worth keeping and ends the model's process (ggufProcess, the
      // default): the next request starts a fresh one, as a restart would, which reads its prefix from disk.
      expect(await service.unload(GGUF_CHAT_MODEL)).toBe(true);
      expect(cacheFiles(dir)).toHaveLength(1);
      expect(await turn(service)).toEqual(warm);
      expect(warnings).toEqual([]);

      expect(await service.unload(GGUF_CHAT_MODEL)).toBe(true);
      const files = cacheFiles(dir);
      expect(files).toHaveLength(1);
      const bytes = fs.readFileSync(files[0]!);
      bytes[bytes.length - 100]! ^= 0xff;
      fs.writeFileSync(files[0]!, bytes);
      expect(await turn(service)).toEqual(cold);
      expect(warnings.join('\n')).toMatch(/checksum mismatch/);
    } finally {
      await service.close();
    }
  });
});

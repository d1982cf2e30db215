/**
 * The ONNX engine's prompt cache on disk, what it must not use (real workers, bundled model): a
 * corrupt file, a truncated file, and the files of a model replaced under the same name (another
 * signature) are ignored: no crash, no cache read, the same greedy output as cold.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODELS_DIR, ONNX_CHAT_MODEL } from '../helpers/paths.js';
import { cacheFiles, chat, FIRST, serve, warnings } from '../helpers/disk-cache.js';

let root: string;
/** A copy of the bundled model (the last test replaces it), and the folder its first turn was written to. */
let modelsDir: string;
let written: string;
let cold: string;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'prompt-cache-faults-'));
  modelsDir = path.join(root, 'models');
  written = path.join(root, 'written');
  fs.cpSync(path.join(MODELS_DIR, ONNX_CHAT_MODEL), path.join(modelsDir, ONNX_CHAT_MODEL), { recursive: true });
  const service = await serve({ cacheDir: written, modelsDir });
  try {
    const first = await chat(service, FIRST);
    expect(first.reads).toBe(0);
    cold = first.text;
  } finally {
    await service.close();
  }
  expect(cacheFiles(written)).toHaveLength(1);
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('prompt cache on disk: files it must not use (real workers, ONNX)', () => {
  it.each([
    ['corrupt', (file: string) => {
      const bytes = fs.readFileSync(file);
      bytes[bytes.length - 100]! ^= 0xff;
      fs.writeFileSync(file, bytes);
    }, /checksum mismatch/],
    ['truncated', (file: string) => fs.truncateSync(file, fs.statSync(file).size - 64), /bytes where the header says/],
  ])('a %s file is logged, removed and ignored: no crash, no cache read, same greedy tokens', async (name, damage, why) => {
    const dir = path.join(root, name);
    fs.cpSync(written, dir, { recursive: true });
    const [file] = cacheFiles(dir);
    damage(file!);
    warnings.length = 0;
    const service = await serve({ cacheDir: dir, modelsDir });
    try {
      expect(await chat(service, FIRST)).toEqual({ text: cold, reads: 0 });
    } finally {
      await service.close();
    }
    expect(warnings.join('\n')).toMatch(why);
    // The bad file is gone; the request's own prefix was written in its place.
    expect(cacheFiles(dir)).toHaveLength(1);
    expect(fs.readFileSync(cacheFiles(dir)[0]!).equals(fs.readFileSync(cacheFiles(written)[0]!))).toBe(true);
  });

  it("a model replaced under the same name (another signature) does not read the old model's files", async () => {
    const [old] = cacheFiles(written);
    // The same name, its config file rewritten (another size and time): another signature.
    const config = path.join(modelsDir, ONNX_CHAT_MODEL, 'config.json');
    fs.writeFileSync(config, `${fs.readFileSync(config, 'utf8')}\n`);
    const service = await serve({ cacheDir: written, modelsDir });
    try {
      expect(await chat(service, FIRST)).toEqual({ text: cold, reads: 0 });
    } finally {
      await service.close();
    }
    // The old file is still there (it ages out of the budget); the new model wrote its own beside it.
    expect(cacheFiles(written)).toContain(old);
    expect(cacheFiles(written)).toHaveLength(2);
  });
});

/**
 * The GGUF a benchmark serves (the test GGUF, built as the tests build it, unless a file is given),
 * linked into a models folder of its own so the server serves it alone; with `manifest`, beside its
 * manifest.json (none: the server reads the file's own trained context).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTestGguf, TEST_GGUF_FILE, TEST_GGUF_MODEL } from '../builders/gguf/test-model.js';

export interface GgufFolder {
  /** The models folder. */
  dir: string;
  model: string;
  /** The GGUF file's path (the link's target). */
  gguf: string;
}

export function ggufFolder(file: string | undefined, prefix: string, manifest?: Record<string, unknown>): GgufFolder {
  let gguf = file && path.resolve(file);
  if (!gguf) {
    const modelsDir = path.resolve('test-artifacts/models-gguf');
    ensureTestGguf({ bundledDir: path.resolve('models'), modelsDir, embedModelsDir: path.resolve('test-artifacts/models-gguf-embed') });
    gguf = path.join(modelsDir, TEST_GGUF_MODEL, TEST_GGUF_FILE);
  }
  const model = file ? path.basename(gguf, '.gguf').toLowerCase().replace(/[^a-z0-9.-]+/g, '-') : TEST_GGUF_MODEL;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  fs.mkdirSync(path.join(dir, model));
  fs.symlinkSync(gguf, path.join(dir, model, path.basename(gguf)));
  if (manifest) fs.writeFileSync(path.join(dir, model, 'manifest.json'), JSON.stringify(manifest) + '\n');
  return { dir, model, gguf };
}

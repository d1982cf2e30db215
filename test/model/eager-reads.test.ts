/**
 * transformers.js 4.3 reads every file it loads a second time, in the background, into a stream
 * nobody consumes (src/tokenize/local-models.ts). Measured in child processes by the bytes they read:
 * without the workaround a model costs about twice its file size in reads, with it about once.
 * If a transformers.js upgrade fixes the library, the first expectation fails: drop the workaround.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CHAT_MODEL, MODELS_DIR, ROOT } from '../helpers/paths.js';

const run = promisify(execFile);
async function bytesReadLoading(patch: boolean): Promise<number> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/helpers/load-reads.ts')], { cwd: ROOT, timeout: 50_000, env: { ...process.env, PATCH: patch ? '1' : '0' } });
  return JSON.parse(stdout).bytesRead;
}

describe('loading a model with transformers.js', () => {
  const modelBytes = fs.statSync(path.join(MODELS_DIR, CHAT_MODEL, 'onnx', 'model.onnx')).size;

  it('reads the model file twice without the workaround, once with it', async () => {
    const without = await bytesReadLoading(false);
    const withWorkaround = await bytesReadLoading(true);
    expect(without).toBeGreaterThan(1.9 * modelBytes);
    expect(withWorkaround).toBeGreaterThan(modelBytes); // onnxruntime still reads it once
    expect(withWorkaround).toBeLessThan(1.2 * modelBytes);
  });
});

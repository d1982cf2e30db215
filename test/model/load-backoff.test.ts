/**
 * A model that fails to load is not loaded again on every request: its failure is answered at once,
 * with its reason, for a growing interval (1 s, then 2 s...; service.ts LOAD_RETRY_MS), and a rescan
 * that finds its files changed starts afresh. The broken model is the bundled embedding model's folder
 * with an ONNX file that is not one; the fix links the real file in.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/log.js';
import { LOAD_RETRY_MS } from '../../src/inference/service.js';
import { renderModel } from '../../src/http/shared/models-plugin.js';
import { scanModels } from '../../src/models/registry.js';
import { EMBED_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { startRealService, type RealService } from '../helpers/real-service.js';

/** A failed attempt starts a worker and reads the files: longer than this; a remembered failure is answered well within it. */
const REMEMBERED_MS = 200;

let dir: string;
let service: RealService;
const attempts: string[] = [];
const logger: Logger = {
  error: (_fields, msg) => void (msg === `model ${EMBED_MODEL} failed to load` && attempts.push(msg)),
  warn: () => {},
  info: () => {},
  debug: () => {},
};
const scan = () => scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models;
const onnxFile = () => path.join(dir, EMBED_MODEL, 'onnx', 'model.onnx');

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'load-backoff-'));
  const source = path.join(MODELS_DIR, EMBED_MODEL);
  fs.mkdirSync(path.join(dir, EMBED_MODEL, 'onnx'), { recursive: true });
  for (const name of fs.readdirSync(source)) if (name !== 'onnx') fs.symlinkSync(path.join(source, name), path.join(dir, EMBED_MODEL, name));
  fs.writeFileSync(onnxFile(), 'not an ONNX model');
  service = await startRealService({ modelsDir: dir, logger, lifecycle: { pinned: [], keepAliveMs: 60_000, maxLoadedModels: 0, loadTimeoutMs: 0 } });
});
afterAll(async () => {
  await service?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The error a request gets, and how long it took. */
async function attempt(): Promise<{ error: CoreError; ms: number }> {
  const started = Date.now();
  const error = await service.embed({ model: EMBED_MODEL, inputs: ['hello'] }).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CoreError);
  return { error: error as CoreError, ms: Date.now() - started };
}

describe('a model that fails to load', () => {
  it('is answered with its failure at once for a growing interval, then tried again; changed files start afresh', async () => {
    const first = await attempt();
    expect(first.error.code).toBe('model_unavailable');
    expect(first.error.message).toMatch(new RegExp(`The model \`${EMBED_MODEL}\` could not be loaded: .+`));
    expect(attempts).toHaveLength(1);

    const remembered = await attempt();
    expect(remembered.error.code).toBe('model_unavailable');
    expect(remembered.error.message).toBe(`${first.error.message} (it is tried again in 1 s)`);
    expect(remembered.ms).toBeLessThan(REMEMBERED_MS);
    expect(attempts).toHaveLength(1);
    const status = service.status().models.find((m) => m.id === EMBED_MODEL)!;
    expect(status).toMatchObject({ state: 'unloaded', loadError: { message: first.error.message } });
    expect(status.loadError!.retryAt).toBeGreaterThan(Date.now());
    // GET /v1/models shows it (an extension field, as `state`).
    expect(renderModel(service.findModel(EMBED_MODEL)!, status)).toMatchObject({ state: 'unloaded', load_error: { message: first.error.message, retry_at: new Date(status.loadError!.retryAt).toISOString() } });

    // After the first interval: tried again, fails again, remembered for twice as long.
    await new Promise((r) => setTimeout(r, LOAD_RETRY_MS.first + 50));
    expect((await attempt()).error.message).toBe(first.error.message);
    expect(attempts).toHaveLength(2);
    expect((await attempt()).error.message).toBe(`${first.error.message} (it is tried again in 2 s)`);
    expect(attempts).toHaveLength(2);

    // The files change (the real graph linked in): the rescan replaces the entry, which loads at once.
    fs.rmSync(onnxFile());
    fs.symlinkSync(path.join(MODELS_DIR, EMBED_MODEL, 'onnx', 'model.onnx'), onnxFile());
    service.refresh(scan);
    const result = await service.embed({ model: EMBED_MODEL, inputs: ['hello'] });
    expect(result.vectors).toHaveLength(1);
    expect(attempts).toHaveLength(2);
    expect(service.status().models.find((m) => m.id === EMBED_MODEL)!.loadError).toBeUndefined();
  });
});

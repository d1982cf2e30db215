/**
 * The air-gap path: `models pull` from a hub (a local stand-in serving the same URLs), resumed after
 * an interruption, refusing corrupted files and reporting 404s; `models pack` then `unpack` into
 * another models folder, refusing a tampered archive; the moved model serves identical outputs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tar from 'tar';
import { pull, PullError } from '../../src/models/hub/pull.js';
import { pack, unpack, ArchiveError } from '../../src/models/hub/pack.js';
import { isDerivedFile } from '../../src/models/derived-files.js';
import { scanModels } from '../../src/models/registry.js';
import { buildChatFolder } from '../../scripts/models/bundled/chat-model.js';
import { CHAT_FIXTURES } from '../helpers/fixture-models.js';
import { startHubServer, type HubServer } from '../helpers/hub-server.js';
import { startRealService } from '../helpers/real-service.js';
import { ROOT } from '../helpers/paths.js';
import type { ChatRequest } from '../../src/core/types.js';

const REPO = 'test-org/llama3-tiny-ONNX';
let root: string;
let source: string;
let hub: HubServer;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-'));
  // The repository as published: q8 graph with external weights, plus an fp32 graph the q8 pull must not fetch.
  source = path.join(root, 'published');
  const spec = { ...CHAT_FIXTURES['llama3-tiny']!, shape: { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8, intermediateSize: 64, maxPositions: 2048, ropeTheta: 10_000, rmsNormEps: 1e-6 }, seed: 5 };
  buildChatFolder({ dir: source, progress: () => {} }, spec);
  buildChatFolder({ dir: path.join(root, 'fp32-variant'), progress: () => {} }, { ...spec, dtype: 'fp32', externalData: false });
  fs.copyFileSync(path.join(root, 'fp32-variant', 'onnx', 'model.onnx'), path.join(source, 'onnx', 'model.onnx'));
  hub = await startHubServer(REPO, source);
});
afterAll(async () => {
  await hub?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const sameBytes = (a: string, b: string) => fs.readFileSync(a).equals(fs.readFileSync(b));

const modelsDir = (name: string) => {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
};

describe('models pull', () => {
  it('fetches only what the dtype needs, verifies it and writes a manifest', async () => {
    const dir = modelsDir('pulled');
    const { id, files } = await pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: dir });
    expect(id).toBe('llama3-tiny-ONNX');
    expect(Object.keys(files).sort()).toEqual([
      'config.json', 'generation_config.json', 'onnx/model_quantized.onnx', 'onnx/model_quantized.onnx_data', 'tokenizer.json', 'tokenizer_config.json',
    ]);
    for (const rel of Object.keys(files)) expect(sameBytes(path.join(dir, id, rel), path.join(source, rel)), rel).toBe(true);
    expect(fs.existsSync(path.join(dir, id, 'onnx/model.onnx'))).toBe(false);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, id, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ id, dtype: 'q8', source: { repo: REPO, revision: 'main' }, files });
    const { models, skipped } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    expect(models[0]).toMatchObject({ id, task: 'chat', dtype: 'q8', externalDataChunks: 1 });
    expect(fs.readdirSync(dir)).toEqual([id]); // no staging left behind
  });

  it('resumes an interrupted download with a Range request; the partial pull is never loadable', async () => {
    const dir = modelsDir('resumed');
    hub.cutAfter.set('onnx/model_quantized.onnx_data', 100_000);
    await expect(pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/onnx_data: .*(interrupted|got \d+ of \d+ bytes)/);
    expect(scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models).toEqual([]);
    const part = path.join(dir, '.pull-llama3-tiny-ONNX', 'onnx', 'model_quantized.onnx_data.part');
    const partial = fs.statSync(part).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThanOrEqual(100_000);

    hub.requests.length = 0;
    await pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: dir });
    expect(hub.requests.find((r) => r.url.includes('onnx_data'))?.range).toBe(`bytes=${partial}-`);
    expect(hub.requests.some((r) => r.url.endsWith('/tokenizer.json'))).toBe(false); // finished files are not fetched again
    expect(sameBytes(path.join(dir, 'llama3-tiny-ONNX', 'onnx/model_quantized.onnx_data'), path.join(source, 'onnx/model_quantized.onnx_data'))).toBe(true);
  });

  it('detects a corrupted file by its checksum and leaves no model behind', async () => {
    const dir = modelsDir('corrupt');
    hub.corrupt.add('onnx/model_quantized.onnx');
    try {
      await expect(pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/onnx\/model_quantized\.onnx: checksum mismatch/);
    } finally {
      hub.corrupt.clear();
    }
    expect(scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models).toEqual([]);
  });

  it('reports a missing repository or dtype clearly', async () => {
    const dir = modelsDir('missing');
    await expect(pull({ repo: 'test-org/nope', revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/test-org\/nope@main has no config.json \(404/);
    await expect(pull({ repo: REPO, revision: 'main', dtype: 'q4', endpoint: hub.url, modelsDir: dir, id: 'q4-try' })).rejects.toThrow(/has no onnx\/model_q4.onnx \(404/);
    await expect(pull({ repo: REPO, revision: 'main', endpoint: 'http://127.0.0.1:9', modelsDir: dir, id: 'x' })).rejects.toBeInstanceOf(PullError);
  });
});

describe('the models command (npm bin)', () => {
  // Asynchronous: the stand-in hub runs in this process and must keep answering.
  const cli = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [path.join(ROOT, 'bin/models.js'), ...args], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  it('pull (HF_ENDPOINT mirror), list and rm', async () => {
    const dir = modelsDir('cli');
    const pulled = await cli(['pull', REPO, '--dtype', 'q8', '--id', 'cli-llama', '--models-dir', dir], { HF_ENDPOINT: hub.url });
    expect(pulled.status, pulled.stderr).toBe(0);
    expect(pulled.stderr).toMatch(/onnx\/model_quantized\.onnx_data\s+[\d.]+ MB \/ [\d.]+ MB\s+100%/);
    const listed = await cli(['list', '--models-dir', dir]);
    expect(listed.stdout).toMatch(/^ID\s+TASK\s+DTYPE\s+SIZE\s+CONTEXT\n/);
    expect(listed.stdout).toMatch(/cli-llama\s+chat\s+q8\s+[\d.]+ MB\s+2048/);
    expect((await cli(['rm', 'cli-llama', '--models-dir', dir])).status).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
    const bad = await cli(['frobnicate']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown command "frobnicate"[\s\S]*Usage/);
  });
});

describe('models pack / unpack', () => {
  const request: ChatRequest = { model: 'llama3-tiny-ONNX', messages: [{ role: 'user', content: 'Hello' }], maxTokens: 6, sampling: { temperature: 0 }, stopStrings: [] };

  it('moves a model to another models folder where it serves identical outputs', async () => {
    const from = path.join(root, 'pulled');
    const to = modelsDir('airgapped');
    const archive = path.join(root, 'models.tar');
    await pack({ modelsDir: from, ids: ['llama3-tiny-ONNX'], output: archive });
    expect(await unpack({ modelsDir: to, archive })).toEqual(['llama3-tiny-ONNX']);
    expect(fs.readdirSync(to)).toEqual(['llama3-tiny-ONNX']);

    const original = await startRealService({ modelsDir: from });
    const moved = await startRealService({ modelsDir: to });
    try {
      const [a, b] = [await original.chat(request), await moved.chat(request)];
      expect(b).toEqual(a);
      expect(a.outputTokens).toBe(6);
    } finally {
      await original.close();
      await moved.close();
    }
    // Serving wrote the rewritten graph (fused attention, last-position logits) beside the model; it is the server's, never packed.
    expect(fs.readdirSync(path.join(from, 'llama3-tiny-ONNX', 'onnx')).filter(isDerivedFile)).toEqual(['model.fused-attention.last-logits_quantized.onnx']);
    const again = path.join(root, 'again.tar');
    await pack({ modelsDir: from, ids: ['llama3-tiny-ONNX'], output: again });
    const packed: string[] = [];
    await tar.t({ file: again, onReadEntry: (entry) => void packed.push(entry.path) });
    expect(packed).toContain('llama3-tiny-ONNX/onnx/model_quantized.onnx');
    expect(packed.filter(isDerivedFile)).toEqual([]);
  });

  it('refuses a tampered archive and names the file', async () => {
    const archive = path.join(root, 'models.tar');
    const work = fs.mkdtempSync(path.join(root, 'tamper-'));
    await tar.x({ file: archive, cwd: work });
    fs.appendFileSync(path.join(work, 'llama3-tiny-ONNX', 'tokenizer_config.json'), ' ');
    const tampered = path.join(root, 'tampered.tar');
    await tar.c({ file: tampered, cwd: work }, fs.readdirSync(work));
    const to = modelsDir('refused');
    await expect(unpack({ modelsDir: to, archive: tampered })).rejects.toThrow(/llama3-tiny-ONNX .*corrupted or was altered:\n\s+tokenizer_config.json: size/);
    expect(fs.readdirSync(to)).toEqual([]);
    await expect(unpack({ modelsDir: to, archive: path.join(source, 'config.json') })).rejects.toBeInstanceOf(ArchiveError);
  });
});

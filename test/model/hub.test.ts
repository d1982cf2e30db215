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
import { repoFolderName, scanHuggingFaceCache } from '../../src/models/hf-cache.js';
import { blobName, writeCachedRepo } from '../helpers/hf-cache-fixture.js';
import { listFiles } from '../../src/models/hub/checksums.js';
import { scanCacheDir, snapshotDownload } from '@huggingface/hub';
import { buildChatFolder } from '../../scripts/builders/bundled/chat-model.js';
import { CHAT_FIXTURES } from '../helpers/fixture-models.js';
import { startHubServer, type HubServer } from '../helpers/hub-server.js';
import { startRealService } from '../helpers/real-service.js';
import { GEMMA_VISION_MODEL, MODELS_DIR, ROOT, VISION_MODEL } from '../helpers/paths.js';
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
  it('a split vision-language export: its three graphs and its image processor\'s settings, served as one model that takes images', async () => {
    const visionHub = await startHubServer('test-org/qwen3-vl-tiny-ONNX', path.join(MODELS_DIR, VISION_MODEL));
    try {
      const dir = modelsDir('pulled-vision');
      const { id, files } = await pull({ repo: 'test-org/qwen3-vl-tiny-ONNX', revision: 'main', dtype: 'fp32', endpoint: visionHub.url, modelsDir: dir });
      expect(Object.keys(files).filter((f) => f.startsWith('onnx/') || f === 'preprocessor_config.json').sort()).toEqual(['onnx/decoder_model_merged.onnx', 'onnx/embed_tokens.onnx', 'onnx/vision_encoder.onnx', 'preprocessor_config.json']);
      const served = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models.find((m) => m.id === id);
      expect(served).toMatchObject({ imageInput: true, onnxFile: 'onnx/decoder_model_merged.onnx' });
    } finally {
      await visionHub.close();
    }
  });

  it("a split Gemma 3 export: its three graphs, its image processor's and processor's settings, its chat_template.jinja", async () => {
    const visionHub = await startHubServer('test-org/gemma3-tiny-ONNX', path.join(MODELS_DIR, GEMMA_VISION_MODEL));
    try {
      const dir = modelsDir('pulled-gemma3');
      const { id, files } = await pull({ repo: 'test-org/gemma3-tiny-ONNX', revision: 'main', dtype: 'fp32', endpoint: visionHub.url, modelsDir: dir });
      expect(Object.keys(files).filter((f) => f.startsWith('onnx/') || f.endsWith('processor_config.json') || f === 'chat_template.jinja').sort()).toEqual([
        'chat_template.jinja', 'onnx/decoder_model_merged.onnx', 'onnx/embed_tokens.onnx', 'onnx/vision_encoder.onnx', 'preprocessor_config.json', 'processor_config.json',
      ]);
      const served = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models.find((m) => m.id === id);
      expect(served).toMatchObject({ imageInput: true, onnxFile: 'onnx/decoder_model_merged.onnx', vision: { family: 'gemma3', imageSeqLength: 16 } });
    } finally {
      await visionHub.close();
    }
  });

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
    const size = fs.statSync(path.join(source, 'onnx/model_quantized.onnx_data')).size;
    expect(hub.requests.filter((r) => r.url.includes('onnx_data')).map((r) => r.range)).toContain(`bytes=${partial}-${size - 1}`);
    expect(hub.requests.filter((r) => r.url.includes('onnx_data')).map((r) => r.range)).not.toContain(undefined); // never the whole file again
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
    await expect(pull({ repo: 'test-org/nope', revision: 'main', endpoint: hub.url, modelsDir: dir })).rejects.toThrow(/test-org\/nope@main: no such repository or revision on http:\/\/127\.0\.0\.1:\d+ \(404/);
    await expect(pull({ repo: REPO, revision: 'main', dtype: 'q4', endpoint: hub.url, modelsDir: dir, id: 'q4-try' })).rejects.toThrow(/@main has no onnx\/model_q4.onnx \(ONNX files in the repository: onnx\/model.onnx, onnx\/model_quantized.onnx\)/);
    await expect(pull({ repo: REPO, revision: 'main', endpoint: hub.url, modelsDir: dir, id: 'tok', token: 'secret' })).rejects.toThrow(/HF_TOKEN must be a Hugging Face access token/);
    await expect(pull({ repo: REPO, revision: 'v9', endpoint: hub.url, modelsDir: dir, id: 'v9' })).rejects.toThrow(/@v9: no such repository or revision/);
    await expect(pull({ repo: REPO, revision: 'main', endpoint: 'http://127.0.0.1:9', modelsDir: dir, id: 'x' })).rejects.toThrow(/cannot reach http:\/\/127\.0\.0\.1:9/);
    await expect(pull({ repo: REPO, revision: 'main', endpoint: 'http://127.0.0.1:9', modelsDir: dir, id: 'x' })).rejects.toBeInstanceOf(PullError);
  });
});

describe('models pull --hf-cache (the Hugging Face cache layout)', () => {
  const repoDir = (cache: string) => path.join(cache, repoFolderName(REPO));
  const Q8_FILES = ['config.json', 'generation_config.json', 'onnx/model_quantized.onnx', 'onnx/model_quantized.onnx_data', 'tokenizer.json', 'tokenizer_config.json'];

  it('writes blobs by hash, snapshot links and refs/main only when complete; resumes a cut transfer from the .incomplete blob', async () => {
    const cache = modelsDir('hf-cache');
    const data = 'onnx/model_quantized.onnx_data';
    const dataBlob = path.join(repoDir(cache), 'blobs', blobName(fs.readFileSync(path.join(source, data))));
    hub.cutAfter.set(data, 100_000);
    await expect(pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: root, hfCacheDir: cache })).rejects.toThrow(/onnx_data: download interrupted/);
    // Half a pull is invisible: no snapshot, no ref, nothing to serve; the partial blob waits under huggingface_hub's name for it.
    expect(fs.existsSync(path.join(repoDir(cache), 'snapshots'))).toBe(false);
    expect(fs.existsSync(path.join(repoDir(cache), 'refs'))).toBe(false);
    expect(scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 })).toEqual({ models: [], skipped: [] });
    const partial = fs.statSync(`${dataBlob}.incomplete`).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThanOrEqual(100_000);

    hub.requests.length = 0;
    const result = await pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: root, hfCacheDir: cache });
    const size = fs.statSync(path.join(source, data)).size;
    expect(hub.requests.filter((r) => r.url.includes('onnx_data')).map((r) => r.range)).toContain(`bytes=${partial}-${size - 1}`);
    expect(hub.requests.some((r) => r.url.endsWith('/tokenizer.json'))).toBe(false); // its blob is in: not fetched again

    const snapshot = path.join(repoDir(cache), 'snapshots', hub.commit);
    expect(result).toMatchObject({ id: REPO, dir: snapshot, commit: hub.commit });
    expect(fs.readFileSync(path.join(repoDir(cache), 'refs', 'main'), 'utf8')).toBe(hub.commit);
    expect(listFiles(snapshot)).toEqual(Q8_FILES);
    for (const rel of Q8_FILES) {
      const link = path.join(snapshot, rel);
      const content = fs.readFileSync(path.join(source, rel));
      expect(fs.lstatSync(link).isSymbolicLink(), rel).toBe(true);
      expect(fs.readlinkSync(link), rel).toBe(path.relative(path.dirname(link), path.join(repoDir(cache), 'blobs', blobName(content))));
      expect(fs.readFileSync(link).equals(content), rel).toBe(true);
      expect(result.files[rel]?.size).toBe(content.length);
    }
    expect(fs.readdirSync(path.join(repoDir(cache), 'blobs')).filter((f) => f.endsWith('.incomplete'))).toEqual([]);
    const { models, skipped } = scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    expect(models).toMatchObject([{ id: REPO, task: 'chat', dtype: 'q8', externalDataChunks: 1, dir: snapshot }]);
  });

  it('uses blobs another tool already downloaded, and refuses a corrupted file', async () => {
    const cache = modelsDir('hf-cache-shared');
    // What a Python tool leaves after loading only the tokenizer (its own snapshot of these files).
    writeCachedRepo({ cacheDir: cache, repo: REPO, source, files: ['config.json', 'tokenizer.json', 'tokenizer_config.json'] });
    hub.requests.length = 0;
    hub.corrupt.add('generation_config.json');
    try {
      await expect(pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: root, hfCacheDir: cache })).rejects.toThrow(/generation_config\.json: checksum mismatch \(git-sha1 [0-9a-f]{40}, the hub lists [0-9a-f]{40}\)/);
    } finally {
      hub.corrupt.clear();
    }
    await pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: root, hfCacheDir: cache });
    const fetched = hub.requests.filter((r) => r.url.includes('/resolve/')).map((r) => r.url.replace(/^.*\/resolve\/[^/]+\//, ''));
    expect(fetched.filter((rel) => ['config.json', 'tokenizer.json', 'tokenizer_config.json'].includes(rel))).toEqual([]);
    expect(fetched).toContain('onnx/model_quantized.onnx');
    expect(scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 }).models.map((m) => m.id)).toEqual([REPO]);
  });

  it('the pulled snapshot (external weights, all links) serves what the models/ pull serves', async () => {
    const request: ChatRequest = { model: REPO, messages: [{ role: 'user', content: 'Hello' }], maxTokens: 6, sampling: { temperature: 0 }, stopStrings: [] };
    const service = await startRealService({ modelsDir: path.join(root, 'pulled'), hfCacheDir: path.join(root, 'hf-cache') });
    try {
      const cached = await service.chat(request);
      const local = await service.chat({ ...request, model: 'llama3-tiny-ONNX' });
      expect(cached.outputTokens).toBe(6);
      expect(cached).toEqual(local);
    } finally {
      await service.close();
    }
    // Loaded through its last-position graph, which lives beside the export's blob: onnxruntime
    // took the linked external weights (it refuses a graph whose weights leave its real folder).
    // (Named after its rewrites: src/engines/onnx/graph/prepare-graph.ts.)
    const onnxDir = path.join(root, 'hf-cache', repoFolderName(REPO), 'snapshots', hub.commit, 'onnx');
    // With it, its decoding-step graph (src/engines/onnx/graph/in-place-decode.ts), kept the same way.
    const names = fs.readdirSync(onnxDir).filter((f) => /^model\..*_quantized\.onnx$/.test(f)).sort();
    expect(names).toEqual(['model.fused-attention.last-logits.decode-step_quantized.onnx', 'model.fused-attention.last-logits_quantized.onnx']);
    for (const name of names) {
      const derived = path.join(onnxDir, name);
      expect(fs.lstatSync(derived).isSymbolicLink()).toBe(true);
      expect(path.dirname(fs.realpathSync(derived))).toBe(fs.realpathSync(path.join(root, 'hf-cache', repoFolderName(REPO), 'blobs')));
    }
  });

  it('shares the cache with the hub\'s own client both ways: its snapshotDownload is served and reused, its scanCacheDir reads our pull', async () => {
    // The hub's reader on what pull wrote (the cache of the first test).
    const ours = await scanCacheDir(path.join(root, 'hf-cache'));
    expect(ours.warnings).toEqual([]);
    expect(ours.repos).toHaveLength(1);
    expect(ours.repos[0]!.id).toEqual({ name: REPO, type: 'model' });
    expect(ours.repos[0]!.revisions.map((r) => ({ commit: r.commitOid, refs: r.refs }))).toEqual([{ commit: hub.commit, refs: ['main'] }]);
    // (Its scanner lists a snapshot's top-level files only.)
    const revision = ours.repos[0]!.revisions[0]!;
    expect(revision.files.map((f) => path.relative(revision.path, f.path)).sort()).toEqual(Q8_FILES.filter((f) => !f.includes('/')));
    for (const file of revision.files) expect(path.dirname(file.blob.path)).toBe(fs.realpathSync(path.join(repoDir(path.join(root, 'hf-cache')), 'blobs')));

    // The hub's writer (what huggingface_hub does in Python): the whole repository into a fresh cache.
    const cache = modelsDir('hf-cache-theirs');
    const debug = console.debug;
    console.debug = () => {}; // it announces every file
    try {
      await snapshotDownload({ repo: REPO, cacheDir: cache, hubUrl: hub.url });
    } finally {
      console.debug = debug;
    }
    const { models, skipped } = scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    expect(models).toMatchObject([{ id: REPO, task: 'chat', dir: path.join(repoDir(cache), 'snapshots', hub.commit) }]);
    hub.requests.length = 0;
    await pull({ repo: REPO, revision: 'main', dtype: 'q8', endpoint: hub.url, modelsDir: root, hfCacheDir: cache });
    expect(hub.requests.filter((r) => r.url.includes('/resolve/') || r.url.startsWith('/cdn/'))).toEqual([]); // every blob was there
  });

  it('refuses --id: a cached model is named by its repository', async () => {
    await expect(pull({ repo: REPO, revision: 'main', endpoint: hub.url, modelsDir: root, hfCacheDir: modelsDir('hf-cache-id'), id: 'x' })).rejects.toThrow(/--id does not apply/);
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
    expect(listed.stdout).toMatch(/^ID\s+TASK\s+DTYPE\s+CONTEXT\s+WEIGHTS\s+FOLDER\n/);
    expect(listed.stdout).toMatch(/cli-llama\s+chat\s+q8\s+2048\s+[\d.]+ [kM]B\s+[\d.]+ [kM]B\n/);
    expect((await cli(['rm', 'cli-llama', '--models-dir', dir])).status).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
    const home = modelsDir('cli-home');
    const cached = await cli(['pull', REPO, '--dtype', 'q8', '--hf-cache', '--hub-url', hub.url, '--models-dir', dir], { HF_HOME: home, HF_HUB_CACHE: '', HF_ENDPOINT: 'http://127.0.0.1:9' });
    expect(cached.status, cached.stderr).toBe(0);
    expect(fs.existsSync(path.join(home, 'hub', repoFolderName(REPO), 'refs', 'main'))).toBe(true);
    const both = await cli(['list', '--models-dir', dir], { HF_HOME: home, HF_HUB_CACHE: '' });
    expect(both.stdout).toMatch(new RegExp(`${REPO}\\s+chat\\s+q8\\s+2048\\s+[\\d.]+ [kM]B\\s+[\\d.]+ [kM]B\\n`));
    const rmCached = await cli(['rm', REPO, '--models-dir', dir], { HF_HOME: home, HF_HUB_CACHE: '' });
    expect(rmCached.status).toBe(2);
    expect(rmCached.stderr).toMatch(/is in the Hugging Face cache .*huggingface-cli delete-cache/);
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
    // Serving wrote the rewritten graph (fused attention, last-position logits) and its decoding-step graph beside the model; they are the server's, never packed.
    expect(fs.readdirSync(path.join(from, 'llama3-tiny-ONNX', 'onnx')).filter(isDerivedFile).sort()).toEqual(['model.fused-attention.last-logits.decode-step_quantized.onnx', 'model.fused-attention.last-logits_quantized.onnx']);
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

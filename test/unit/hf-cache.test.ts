/**
 * The Hugging Face cache scanner and the combined scan (models/ and the cache): which snapshot is
 * served, what is passed over, what is skipped and why; where the cache is looked for.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, modelSources } from '../../src/config.js';
import { defaultHubCacheDir, repoFolderName, repoOfFolder, scanHuggingFaceCache } from '../../src/models/hf-cache.js';
import { scanModelSources } from '../../src/models/sources.js';

const COMMIT_A = 'a'.repeat(40);
const COMMIT_B = 'b'.repeat(40);
const embedding = { 'config.json': { architectures: ['BertModel'] }, 'tokenizer.json': {}, 'onnx/model.onnx': '' };

let root: string;
let cache: string;
let modelsDir: string;

/** One snapshot of a cached repository, files as symlinks into blobs/ like huggingface_hub writes them. */
function snapshot(repo: string, commit: string, files: Record<string, unknown>): void {
  const repoDir = path.join(cache, repoFolderName(repo));
  for (const [rel, content] of Object.entries(files)) {
    const blob = path.join(repoDir, 'blobs', `${commit.slice(0, 8)}-${rel.replace(/\//g, '_')}`);
    fs.mkdirSync(path.dirname(blob), { recursive: true });
    fs.writeFileSync(blob, typeof content === 'string' ? content : JSON.stringify(content));
    const link = path.join(repoDir, 'snapshots', commit, rel);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.relative(path.dirname(link), blob), link);
  }
}

function ref(repo: string, name: string, commit: string): void {
  const file = path.join(cache, repoFolderName(repo), 'refs', name);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, commit);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-scan-'));
  cache = path.join(root, 'hub');
  modelsDir = path.join(root, 'models');
  // refs/main picks one of two snapshots: the other one's context length must not show.
  snapshot('org/two-revisions', COMMIT_A, { ...embedding, 'config.json': { architectures: ['BertModel'], max_position_embeddings: 111 } });
  snapshot('org/two-revisions', COMMIT_B, { ...embedding, 'config.json': { architectures: ['BertModel'], max_position_embeddings: 222 } });
  ref('org/two-revisions', 'main', `${COMMIT_B}\n`);
  // Downloaded by commit: no ref, a single snapshot.
  snapshot('org/pinned', COMMIT_A, embedding);
  // No ref and two snapshots: ambiguous.
  snapshot('org/ambiguous', COMMIT_A, embedding);
  snapshot('org/ambiguous', COMMIT_B, embedding);
  // refs/main names a snapshot that is not there.
  snapshot('org/dangling', COMMIT_A, embedding);
  ref('org/dangling', 'main', COMMIT_B);
  // An ONNX repository whose blob is gone (a broken link).
  snapshot('org/broken', COMMIT_A, embedding);
  fs.rmSync(path.join(cache, repoFolderName('org/broken'), 'blobs', `${COMMIT_A.slice(0, 8)}-tokenizer.json`));
  // Another tool is still downloading: the graph is linked, its declared external weights not yet.
  snapshot('org/downloading', COMMIT_A, { ...embedding, 'config.json': { architectures: ['BertModel'], 'transformers.js_config': { use_external_data_format: { 'model.onnx': 2 } } } });
  ref('org/downloading', 'main', COMMIT_A);
  // Not candidates: no onnx/ folder, a dataset, a stray file.
  snapshot('org/pytorch-only', COMMIT_A, { 'config.json': {}, 'model.safetensors': '' });
  fs.mkdirSync(path.join(cache, 'datasets--org--data', 'snapshots', COMMIT_A, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(cache, 'version.txt'), '1');
  // A repository without an org whose id a models/ folder already has; a manifest id is not the cache's id.
  snapshot('clash', COMMIT_A, embedding);
  snapshot('org/with-manifest', COMMIT_A, { ...embedding, 'manifest.json': { id: 'other-name', aliases: ['wm'] } });
  for (const [rel, content] of Object.entries(embedding)) {
    const file = path.join(modelsDir, 'clash', rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(content));
  }
});

describe('scanHuggingFaceCache', () => {
  it('serves the snapshot refs/main names, as org/name; passes over what is not an ONNX model', () => {
    const { models, skipped } = scanHuggingFaceCache({ cacheDir: cache, defaultPoolSize: 1 });
    expect(models.map((m) => m.id)).toEqual(['clash', 'org/pinned', 'org/two-revisions', 'org/with-manifest']);
    const two = models.find((m) => m.id === 'org/two-revisions')!;
    expect(two.contextLength).toBe(222);
    expect(two.dir).toBe(path.join(cache, 'models--org--two-revisions', 'snapshots', COMMIT_B));
    expect(models.find((m) => m.id === 'org/with-manifest')).toMatchObject({ aliases: ['wm'], displayName: 'org/with-manifest' });
    expect(skipped).toEqual([
      { folder: path.join(cache, 'models--org--ambiguous'), reason: 'no refs/main and 2 snapshots; cannot tell which to serve' },
      { folder: path.join(cache, 'models--org--broken'), reason: 'no tokenizer.json' },
      { folder: path.join(cache, 'models--org--dangling'), reason: `refs/main names snapshot ${COMMIT_B}, which is not in snapshots/` },
      {
        folder: path.join(cache, 'models--org--downloading'),
        reason: 'config.json declares 2 external data file(s) for onnx/model.onnx; onnx/model.onnx_data, onnx/model.onnx_data_1 missing (a download that has not finished?)',
      },
    ]);
  });

  it('finds nothing, without an error, when the cache folder does not exist', () => {
    expect(scanHuggingFaceCache({ cacheDir: path.join(root, 'absent'), defaultPoolSize: 1 })).toEqual({ models: [], skipped: [] });
  });

  it('names folders as huggingface_hub does', () => {
    expect(repoFolderName('onnx-community/Qwen2.5-0.5B-Instruct')).toBe('models--onnx-community--Qwen2.5-0.5B-Instruct');
    expect(repoOfFolder('models--onnx-community--Qwen2.5-0.5B-Instruct')).toBe('onnx-community/Qwen2.5-0.5B-Instruct');
    expect(repoOfFolder('models--gpt2')).toBe('gpt2');
    expect(repoOfFolder('datasets--org--data')).toBeUndefined();
  });
});

describe('scanModelSources', () => {
  it('puts models/ first; on an id clash the models/ folder wins and the cache entry is skipped with the reason', () => {
    const { models, skipped } = scanModelSources({ modelsDir, hfCacheDir: cache, defaultPoolSize: 1 });
    expect(models.map((m) => m.id)).toEqual(['clash', 'org/pinned', 'org/two-revisions', 'org/with-manifest']);
    expect(models[0]!.dir).toBe(path.join(modelsDir, 'clash'));
    expect(skipped).toContainEqual({
      folder: path.join(cache, 'models--clash'),
      reason: `model id or alias "clash" is already used by ${path.join(modelsDir, 'clash')} (the models folder wins)`,
    });
    expect(skipped).toHaveLength(5);
  });

  it('reads models/ only when the cache is off', () => {
    expect(scanModelSources({ modelsDir, hfCacheDir: null, defaultPoolSize: 1 })).toEqual({ models: [expect.objectContaining({ id: 'clash' })], skipped: [] });
  });
});

describe('where the cache is', () => {
  const home = '/home/u';
  it('resolves HF_HUB_CACHE, then HF_HOME/hub, then XDG_CACHE_HOME, then ~/.cache, as the Hugging Face tools do', () => {
    expect(defaultHubCacheDir({}, home)).toBe('/home/u/.cache/huggingface/hub');
    expect(defaultHubCacheDir({ XDG_CACHE_HOME: '/x' }, home)).toBe('/x/huggingface/hub');
    expect(defaultHubCacheDir({ XDG_CACHE_HOME: '/x', HF_HOME: '/h' }, home)).toBe('/h/hub');
    expect(defaultHubCacheDir({ HF_HOME: '/h', HUGGINGFACE_HUB_CACHE: '/old' }, home)).toBe('/old');
    expect(defaultHubCacheDir({ HF_HOME: '/h', HF_HUB_CACHE: '/c', HUGGINGFACE_HUB_CACHE: '/old' }, home)).toBe('/c');
  });

  it('is a setting, on by default; flag over environment; off gives no cache folder to scan', () => {
    expect(loadConfig([], { HF_HOME: '/h' })).toMatchObject({ hfCache: true, hfHubCache: '/h/hub' });
    expect(loadConfig(['--hf-hub-cache', '/flag'], { HF_HUB_CACHE: '/env' }).hfHubCache).toBe('/flag');
    expect(modelSources(loadConfig([], { HF_HUB_CACHE: '/env' }))).toMatchObject({ hfCacheDir: '/env', defaultPoolSize: 1 });
    expect(modelSources(loadConfig([], { HF_CACHE: 'false', HF_HUB_CACHE: '/env' })).hfCacheDir).toBeNull();
    expect(modelSources(loadConfig(['--hf-cache', 'false'], {})).hfCacheDir).toBeNull();
  });
});

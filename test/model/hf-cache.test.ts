/**
 * The Hugging Face cache read in place: a cache built by the test in the layout huggingface_hub
 * writes (refs/main, snapshots/<commit>/ symlinks into blobs/) from the bundled models' files is
 * served by a real server as `org/name`, beside the same models in models/, with identical answers;
 * and the real entry point finds it through HF_HOME.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeCachedRepo, type CachedRepo } from '../helpers/hf-cache-fixture.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { CHAT_MODEL, EMBED_MODEL, MODELS_DIR, RERANK_MODEL, ROOT } from '../helpers/paths.js';

const CACHED_CHAT = `test-org/${CHAT_MODEL}`;
const CACHED_EMBED = `test-org/${EMBED_MODEL}`;
const STARTUP_TIMEOUT_MS = 60_000;

let root: string;
let cacheDir: string;
let chatRepo: CachedRepo;
let server: RealServer;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-cache-'));
  cacheDir = path.join(root, 'home', 'hub');
  chatRepo = writeCachedRepo({ cacheDir, repo: CACHED_CHAT, source: path.join(MODELS_DIR, CHAT_MODEL) });
  writeCachedRepo({ cacheDir, repo: CACHED_EMBED, source: path.join(MODELS_DIR, EMBED_MODEL) });
  // What else a cache holds: a PyTorch-only model and a dataset (not candidates, passed over).
  const pytorch = path.join(cacheDir, 'models--test-org--pytorch-only', 'snapshots', 'c'.repeat(40));
  fs.mkdirSync(pytorch, { recursive: true });
  fs.writeFileSync(path.join(pytorch, 'config.json'), '{"architectures":["BertModel"]}');
  fs.writeFileSync(path.join(pytorch, 'model.safetensors'), '');
  fs.mkdirSync(path.join(cacheDir, 'datasets--test-org--some-data', 'snapshots'), { recursive: true });
  server = await startRealServer({ hfCacheDir: cacheDir });
});
afterAll(async () => {
  await server?.close();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.url}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

describe('a Hugging Face cache served in place', () => {
  it('lists the cache models as org/name beside the models/ ones; one is found by its id with the slash as it is or encoded', async () => {
    const list = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; task: string }> };
    expect(list.data.map((m) => m.id).sort()).toEqual([EMBED_MODEL, CHAT_MODEL, RERANK_MODEL, CACHED_EMBED, CACHED_CHAT].sort());
    for (const url of [`/v1/models/${CACHED_CHAT}`, `/v1/models/${encodeURIComponent(CACHED_CHAT)}`]) {
      const res = await fetch(`${server.url}${url}`);
      expect(res.status, url).toBe(200);
      expect(await res.json()).toMatchObject({ id: CACHED_CHAT, task: 'chat', context_length: 32768 });
    }
    const missing = await fetch(`${server.url}/v1/models/test-org/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.message).toContain('test-org/nope');
    // The official clients: both encode the id into the path.
    expect((await new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 }).models.retrieve(CACHED_EMBED)).id).toBe(CACHED_EMBED);
    expect((await new Anthropic({ baseURL: server.url, apiKey: 'x', maxRetries: 0 }).models.retrieve(CACHED_CHAT)).id).toBe(CACHED_CHAT);
  });

  it('chat (both dialects) answers from the cached snapshot exactly as from the same files in models/', async () => {
    const ask = (model: string) => post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'Name three colours.' }], max_tokens: 8, temperature: 0 });
    const [cached, local] = [await ask(CACHED_CHAT), await ask(CHAT_MODEL)];
    expect(cached.status, JSON.stringify(cached.body)).toBe(200);
    expect(cached.body.model).toBe(CACHED_CHAT);
    expect(cached.body.usage).toEqual(local.body.usage);
    expect(cached.body.usage.completion_tokens).toBe(8);
    expect(cached.body.choices[0].message.content).toBe(local.body.choices[0].message.content);

    const message = (model: string) => post('/v1/messages', { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0 }, { 'anthropic-version': '2023-06-01' });
    const [a, b] = [await message(CACHED_CHAT), await message(CHAT_MODEL)];
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.model).toBe(CACHED_CHAT);
    expect(a.body.content).toEqual(b.body.content);
    expect(a.body.usage.output_tokens).toBe(5);
  });

  it('embeddings answer from the cached snapshot with the vectors of the same files in models/', async () => {
    const input = ['The cat sat on the mat.', 'Stock markets fell sharply today.'];
    const [cached, local] = [await post('/v1/embeddings', { model: CACHED_EMBED, input }), await post('/v1/embeddings', { model: EMBED_MODEL, input })];
    expect(cached.status, JSON.stringify(cached.body)).toBe(200);
    expect(cached.body.model).toBe(CACHED_EMBED);
    expect(cached.body.data).toHaveLength(2);
    expect(cached.body.data[0].embedding).toHaveLength(100);
    expect(cached.body.data.map((d: { embedding: number[] }) => d.embedding)).toEqual(local.body.data.map((d: { embedding: number[] }) => d.embedding));
    expect(cached.body.usage).toEqual(local.body.usage);
    // The model in an SDK baseURL (the legacy engines path), its slash as it is.
    const viaEngine = await new OpenAI({ baseURL: `${server.url}/v1/engines/${CACHED_EMBED}`, apiKey: 'x', maxRetries: 0 }).embeddings.create({ model: CACHED_EMBED, input, encoding_format: 'float' });
    expect(viaEngine.data.map((d) => d.embedding)).toEqual(local.body.data.map((d: { embedding: number[] }) => d.embedding));
  });

  it('keeps the derived graph beside the blob it derives from, linked from the snapshot', () => {
    // Named after the rewrites (last-position logits, fused attention): src/engines/onnx/graph/prepare-graph.ts.
    // With it, its decoding-step graph (src/engines/onnx/graph/in-place-decode.ts), kept the same way.
    const derived = fs.readdirSync(path.join(chatRepo.snapshotDir, 'onnx')).filter((f) => f.startsWith('model.') && f.endsWith('.onnx') && f !== 'model.onnx').sort();
    expect(derived).toEqual(['model.fused-attention.last-logits.decode-step.onnx', 'model.fused-attention.last-logits.onnx']);
    for (const name of derived) {
      const link = path.join(chatRepo.snapshotDir, 'onnx', name);
      expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
      expect(path.dirname(fs.realpathSync(link))).toBe(fs.realpathSync(path.join(chatRepo.repoDir, 'blobs')));
    }
    // The snapshot's own files are untouched links.
    expect(fs.lstatSync(path.join(chatRepo.snapshotDir, 'onnx', 'model.onnx')).isSymbolicLink()).toBe(true);
  });
});

describe('the real entry point', () => {
  let child: ChildProcess | undefined;
  afterAll(() => void child?.kill('SIGKILL'));

  it('serves the cache under HF_HOME with an empty models folder; HF_CACHE=false turns it off', async () => {
    const emptyModels = fs.mkdtempSync(path.join(root, 'models-'));
    const start = (env: Record<string, string>) => new Promise<{ code: number | null; stderr: string; url?: string }>((resolve) => {
      const { HF_HUB_CACHE: _ignored, ...inherited } = process.env;
      const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), '--models-dir', emptyModels, '--port', '0', '--log-level', 'warn'], {
        cwd: ROOT,
        env: { ...inherited, HF_HOME: path.join(root, 'home'), ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child = proc;
      let stderr = '';
      const timer = setTimeout(() => resolve({ code: null, stderr }), STARTUP_TIMEOUT_MS);
      proc.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          resolve({ code: null, stderr, url: match[1] });
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });

    const on = await start({});
    expect(on.url, on.stderr).toBeDefined();
    expect(on.stderr).toContain(`${CACHED_CHAT} (chat, loads on first request)`);
    expect(on.stderr).toContain(`${CACHED_EMBED} (embedding, loads on first request)`);
    // The server builds nothing: it says the bundled models are not there and serves what is.
    expect(on.stderr).toMatch(/bundled model tiny-qwen3-random is missing from .*: run `npm run build:models -- --models-dir /);
    expect(fs.readdirSync(emptyModels)).toEqual([]);
    const res = await fetch(`${on.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: CACHED_CHAT, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).usage.completion_tokens).toBe(3);
    child!.kill('SIGKILL');

    // Off: nothing to serve yet; the server waits for models to be added (it rescans), with none listed.
    const off = await start({ HF_CACHE: 'false' });
    expect(off.url, off.stderr).toBeDefined();
    expect(off.stderr).toMatch(/no usable model folders in .* yet/);
    expect(((await (await fetch(`${off.url}/v1/models`)).json()) as { data: unknown[] }).data).toEqual([]);
    child!.kill('SIGKILL');
  }, 2 * STARTUP_TIMEOUT_MS);
});

/**
 * The real entry point as a user starts it: a child process running src/main.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_VERSIONS } from '../../src/models/bundled-versions.js';
import { CHAT_MODEL, EMBED_MODEL, ENGINE, MODELS_DIR, ROOT, SERVED_MODELS_DIR, VISION_MODEL, GEMMA_VISION_MODEL } from '../helpers/paths.js';

const STARTUP_TIMEOUT_MS = 60_000;
let child: ChildProcess | undefined;
afterEach(() => {
  // A detached child leads its own process group (npm start: npm, a shell, cross-env, node): kill it all.
  if (child?.pid && child.spawnargs[0] !== process.execPath) process.kill(-child.pid, 'SIGKILL');
  else child?.kill('SIGKILL');
  child = undefined;
});

/**
 * Starts the server (src/main.ts under tsx, or `npm start` as a user runs it: compiled first) and
 * resolves with its stderr once it prints the listening line.
 */
function start(args: string[], env: Record<string, string> = {}, { npmStart = false } = {}): Promise<{ stderr: () => string; url: string }> {
  const serverArgs = ['--models-dir', SERVED_MODELS_DIR, '--port', '0', '--log-level', 'warn', ...args];
  const [command, argv] = npmStart ? ['npm', ['start', '--', ...serverArgs]] : [process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), ...serverArgs]];
  const proc = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: npmStart,
  });
  child = proc;
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in time:\n${stderr}`)), STARTUP_TIMEOUT_MS);
    proc.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ stderr: () => stderr, url: match[1]! });
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}:\n${stderr}`));
    });
  });
}

describe('src/main.ts', () => {
  it('npm start (the compiled server, built first) serves a chat request', async () => {
    const { url } = await start([], {}, { npmStart: true });
    const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { output_tokens: number } }).usage.output_tokens).toBe(3);
  }, 180_000);

  it('without API keys keeps to loopback even when asked for 0.0.0.0, says so, and exits 0 on SIGTERM', async () => {
    const { stderr, url } = await start(['--host', '0.0.0.0']);
    expect(stderr()).toMatch(/no API keys configured: binding to 127\.0\.0\.1 instead of 0\.0\.0\.0/);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // models/ is up to date (global setup builds it): the bundled-model check says nothing. The GGUF
    // test folder (TEST_CHAT_ENGINE=llama) holds the bundled embedder and reranker but, by design, not
    // the bundled ONNX chat and vision models: there the check names them, and nothing else.
    expect(stderr().match(/bundled model \S+/g) ?? []).toEqual(ENGINE.missingBundled.map((id) => `bundled model ${id}`));
    const res = await fetch(`${url}/v1/models`);
    expect(res.status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('by default loads a model on its first request; --preload loads it at start; X-Model-Keep-Alive: 0 unloads it after the request', async () => {
    // The bundled vision models are served (unloaded until asked) where the folder has them: ONNX's, not the GGUF test folder.
    const vision = Object.fromEntries([VISION_MODEL, GEMMA_VISION_MODEL].filter((id) => !ENGINE.missingBundled.includes(id)).map((id) => [id, 'unloaded']));
    const states = async (url: string) => Object.fromEntries(((await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string; state: string }> }).data.map((m) => [m.id, m.state]));
    const lazy = await start([]);
    expect(lazy.stderr()).toMatch(/glove-sif-100d \(embedding, loads on first request\)/);
    expect(await states(lazy.url)).toEqual({ 'glove-sif-100d': 'unloaded', [CHAT_MODEL]: 'unloaded', 'tiny-bert-reranker-random': 'unloaded', ...vision });
    const embed = (headers: Record<string, string> = {}) =>
      fetch(`${lazy.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: 'glove-sif-100d', input: 'hi' }) });
    expect((await embed()).status).toBe(200);
    expect(await states(lazy.url)).toEqual({ 'glove-sif-100d': 'loaded', [CHAT_MODEL]: 'unloaded', 'tiny-bert-reranker-random': 'unloaded', ...vision });
    expect((await embed({ 'x-model-keep-alive': '0' })).status).toBe(200);
    let state = 'loaded';
    for (let i = 0; i < 100 && state !== 'unloaded'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = (await states(lazy.url))['glove-sif-100d']!;
    }
    expect(state).toBe('unloaded');
    child!.kill('SIGKILL');
    const eager = await start(['--preload', CHAT_MODEL]);
    expect(await states(eager.url)).toEqual({ 'glove-sif-100d': 'unloaded', [CHAT_MODEL]: 'loaded', 'tiny-bert-reranker-random': 'unloaded', ...vision });
  });

  it('with API keys binds as asked and requires a key', async () => {
    const { url, stderr } = await start(['--host', '127.0.0.1'], { API_KEYS: 'sk-main-test' });
    expect(stderr()).not.toMatch(/sk-main-test/);
    expect((await fetch(`${url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${url}/v1/models`, { headers: { authorization: 'Bearer sk-main-test' } })).status).toBe(200);
  });

  it('on SIGTERM finishes a stream in flight, exits 0 and stops listening', async () => {
    const { url } = await start([]);
    const res = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 400, temperature: 0, stream: true, messages: [{ role: 'user', content: 'Go on.' }] }),
    });
    const reader = res.body!.getReader();
    let transcript = '';
    while (!transcript.includes('content_block_delta')) transcript += new TextDecoder().decode((await reader.read()).value);
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child!.kill('SIGTERM');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      transcript += new TextDecoder().decode(value);
    }
    expect(transcript).toMatch(/event: message_delta\ndata: .*"output_tokens":400/);
    expect(transcript.trimEnd().endsWith('data: {"type":"message_stop"}')).toBe(true);
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  it('builds nothing: says which bundled model is stale or missing and what to run, and serves what is there', async () => {
    // A models folder with the embedder stamped by an older builder (its files linked, not copied) and no chat model.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'main-process-models-'));
    try {
      const stale = path.join(dir, EMBED_MODEL);
      fs.mkdirSync(stale);
      for (const name of fs.readdirSync(path.join(MODELS_DIR, EMBED_MODEL))) {
        if (name !== 'manifest.json') fs.symlinkSync(path.join(MODELS_DIR, EMBED_MODEL, name), path.join(stale, name));
      }
      const manifest = JSON.parse(fs.readFileSync(path.join(MODELS_DIR, EMBED_MODEL, 'manifest.json'), 'utf8')) as Record<string, unknown>;
      const oldVersion = BUNDLED_MODEL_VERSIONS[EMBED_MODEL] - 1;
      fs.writeFileSync(path.join(stale, 'manifest.json'), JSON.stringify({ ...manifest, bundled: { version: oldVersion } }));
      const { stderr, url } = await start(['--models-dir', dir]);
      const command = `npm run build:models -- --models-dir ${dir}`;
      expect(stderr()).toContain(`[models] bundled model ${EMBED_MODEL} in ${dir} is stale (built by builder version ${oldVersion}, this checkout builds version ${BUNDLED_MODEL_VERSIONS[EMBED_MODEL]}): run \`${command}\``);
      expect(stderr()).toContain(`[models] bundled model tiny-qwen3-random is missing from ${dir}: run \`${command}\``);
      const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> };
      expect(models.data.map((m) => m.id)).toEqual([EMBED_MODEL]);
      expect(fs.readdirSync(dir)).toEqual([EMBED_MODEL]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad configuration with a usage message and exit code 2', async () => {
    await expect(start(['--port', 'eighty'])).rejects.toThrow(/exited with 2[\s\S]*port[\s\S]*--help/);
  });
});

/**
 * The model lifecycle on a listening server with real workers: a model loads on its first request,
 * unloads after its keep-alive (never under a request), a folder added to the models folder is served
 * without a restart and a removed one stops being served once its requests end, at most
 * maxLoadedModels are loaded. The models folder is a temporary one holding links to the bundled models.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import type { LifecycleOptions } from '../../src/inference/service.js';
import { CHAT_MODEL, EMBED_MODEL, SERVED_MODELS_DIR } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

let dir: string;
let server: RealServer | undefined;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifecycle-'));
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const link = (id: string) => fs.symlinkSync(path.join(SERVED_MODELS_DIR, id), path.join(dir, id));
const unlink = (id: string) => fs.rmSync(path.join(dir, id));

async function start(lifecycle: Partial<LifecycleOptions> = {}, pingIntervalMs?: number) {
  server = await startRealServer({
    modelsDir: dir,
    ...(pingIntervalMs ? { pingIntervalMs } : {}),
    lifecycle: { pinned: [], keepAliveMs: 60_000, maxLoadedModels: 0, loadTimeoutMs: 60_000, rescan: { scan: () => scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models, intervalMs: 50 }, ...lifecycle },
  });
  return server;
}

const embed = (s: RealServer, headers: Record<string, string> = {}) =>
  fetch(`${s.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model: EMBED_MODEL, input: 'hello' }) });
const chat = (s: RealServer, body: Record<string, unknown> = {}) =>
  fetch(`${s.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
const listed = async (s: RealServer) => ((await (await fetch(`${s.url}/v1/models`)).json()) as { data: Array<{ id: string; loaded: boolean; state: string; expires_at: string | null }> }).data;
const stateOf = (s: RealServer, id: string) => s.service.status().models.find((m) => m.id === id)?.state;

/** Polls until `check` holds (the rescan and the idle timers run on their own clocks). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('model lifecycle', () => {
  it('a model loads on its first request and unloads after its keep-alive; the next request loads it again', async () => {
    link(EMBED_MODEL);
    const s = await start({ keepAliveMs: 300 });
    expect(await listed(s)).toMatchObject([{ id: EMBED_MODEL, loaded: false, state: 'unloaded' }]);
    expect((await embed(s)).status).toBe(200);
    const [model] = await listed(s);
    expect(model).toMatchObject({ id: EMBED_MODEL, loaded: true, state: 'loaded' });
    expect(Date.parse(model!.expires_at!)).toBeGreaterThan(Date.now());
    await until(() => stateOf(s, EMBED_MODEL) === 'unloaded', 'the idle model to unload');
    expect(s.service.status().models[0]!.workers).toBe(0);
    expect((await embed(s)).status).toBe(200);
    expect(stateOf(s, EMBED_MODEL)).toBe('loaded');
  });

  it('never unloads under a request: a generation longer than the keep-alive completes', async () => {
    link(CHAT_MODEL);
    const s = await start({ keepAliveMs: 1 });
    const res = await chat(s, { max_tokens: 200, stream: true });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('event: message_stop');
    await until(() => stateOf(s, CHAT_MODEL) === 'unloaded', 'the model to unload after the request');
  });

  it('the X-Model-Keep-Alive header: 0 unloads right after the request, -1 keeps it; a bad value is a 400', async () => {
    link(EMBED_MODEL);
    const s = await start({ keepAliveMs: 60_000 });
    expect((await embed(s, { 'x-model-keep-alive': '0' })).status).toBe(200);
    await until(() => stateOf(s, EMBED_MODEL) === 'unloaded', 'keep-alive 0 to unload');
    expect((await embed(s, { 'x-model-keep-alive': '-1' })).status).toBe(200);
    expect(s.service.status().models[0]!.expiresAt).toBeUndefined();
    const bad = await embed(s, { 'x-model-keep-alive': 'soon' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/x-model-keep-alive: expected a duration/);
  });

  it('a folder added while the server runs is served; a removed one is not, once its request has ended', async () => {
    link(EMBED_MODEL);
    const s = await start();
    expect((await listed(s)).map((m) => m.id)).toEqual([EMBED_MODEL]);
    expect((await chat(s)).status).toBe(404);
    link(CHAT_MODEL);
    await until(async () => (await listed(s)).some((m) => m.id === CHAT_MODEL), 'the added model to be listed');
    expect((await chat(s)).status).toBe(200);
    // Removed while a generation runs: that generation completes, new requests get 404.
    const inflight = chat(s, { max_tokens: 300, stream: true });
    await until(() => (s.service.status().models.find((m) => m.id === CHAT_MODEL)?.inflight ?? 0) > 0, 'the generation to start');
    unlink(CHAT_MODEL);
    await until(async () => !(await listed(s)).some((m) => m.id === CHAT_MODEL), 'the removed model to leave the list');
    expect((await chat(s)).status).toBe(404);
    const res = await inflight;
    expect(await res.text()).toContain('event: message_stop');
  });

  it('a stream that waits for its model to load opens with pings (Messages: ping events; OpenAI: comments), then streams as usual', async () => {
    link(CHAT_MODEL);
    const s = await start({}, 100);
    const anthropic = await (await chat(s, { stream: true })).text();
    expect(anthropic.indexOf('event: ping')).toBeLessThan(anthropic.indexOf('event: message_start'));
    expect(anthropic).toContain('event: message_stop');
    await s.service.unload(CHAT_MODEL);
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 4, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const openai = await res.text();
    expect(openai.startsWith(': ping\n\n')).toBe(true);
    expect(openai.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('a prompt refused after the stream opened is an error event in the stream', async () => {
    link(CHAT_MODEL);
    const s = await start({}, 100);
    const text = await (await chat(s, { stream: true, messages: [{ role: 'user', content: 'word '.repeat(40_000) }] })).text();
    expect(text).toMatch(/event: error\ndata: .*prompt is too long/);
  });

  it('maxLoadedModels 1: loading a second model unloads the least recently used idle one', async () => {
    link(EMBED_MODEL);
    link(CHAT_MODEL);
    const s = await start({ maxLoadedModels: 1 });
    expect((await embed(s)).status).toBe(200);
    expect(stateOf(s, EMBED_MODEL)).toBe('loaded');
    expect((await chat(s)).status).toBe(200);
    expect(stateOf(s, CHAT_MODEL)).toBe('loaded');
    expect(stateOf(s, EMBED_MODEL)).toBe('unloaded');
  });

  it('a pinned model is loaded at start and stays loaded', async () => {
    link(EMBED_MODEL);
    link(CHAT_MODEL);
    const s = await start({ pinned: [EMBED_MODEL], keepAliveMs: 1 });
    expect(stateOf(s, EMBED_MODEL)).toBe('loaded');
    expect(stateOf(s, CHAT_MODEL)).toBe('unloaded');
    expect((await embed(s)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(stateOf(s, EMBED_MODEL)).toBe('loaded');
    expect((await listed(s)).find((m) => m.id === EMBED_MODEL)).toMatchObject({ loaded: true, expires_at: null });
  });
});

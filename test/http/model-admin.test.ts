/**
 * POST /models/load and /models/unload (also under /v1/): llama-server's router-mode spelling, behind
 * the API keys, zod-validated bodies, OpenAI's error envelope. Driven through app.inject with a fake
 * service that keeps a load state per model (the real service's methods are exercised by the
 * playground's browser test on real workers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { modelNotFound } from '../../src/core/errors.js';
import type { ModelStatus } from '../../src/core/types.js';
import { FakeInference } from '../helpers/fake-inference.js';
import { JSON_HEADERS } from '../helpers/inject.js';

const KEY = 'sk-admin';
const AUTH = { ...JSON_HEADERS, authorization: `Bearer ${KEY}` };
const IDLE_MS = 60_000;

/** The fake service, with a load state per model, as the real service's loadModel / unloadModel. */
class AdminFake extends FakeInference {
  readonly loaded = new Set<string>(['fake-chat', 'fake-embed']);
  /** Requests holding a model (an unload is refused while any do). */
  readonly inflight = new Map<string, number>();
  readonly asked: string[] = [];

  override status() {
    return {
      models: super.status().models.map((m): ModelStatus => ({
        ...m,
        state: this.loaded.has(m.id) ? 'loaded' : 'unloaded',
        inflight: this.inflight.get(m.id) ?? 0,
        ...(this.loaded.has(m.id) ? { expiresAt: Date.parse('2030-01-01T00:00:00Z') + IDLE_MS } : {}),
      })),
    };
  }

  private statusOf(name: string): ModelStatus {
    const model = this.findModel(name);
    if (!model) throw modelNotFound(name);
    return this.status().models.find((m) => m.id === model.id)!;
  }

  async loadModel(name: string) {
    const { id } = this.statusOf(name);
    this.asked.push(`load ${id}`);
    this.loaded.add(id);
    return this.statusOf(id);
  }

  async unloadModel(name: string) {
    const { id } = this.statusOf(name);
    this.asked.push(`unload ${id}`);
    const busy = (this.inflight.get(id) ?? 0) > 0;
    if (!busy) this.loaded.delete(id);
    return { busy, status: this.statusOf(id) };
  }
}

async function appWith(options: { modelAdmin?: boolean; apiKeys?: string[]; inference?: FakeInference } = {}) {
  const inference = options.inference ?? new AdminFake();
  const app = await buildApp({
    config: { apiKeys: options.apiKeys ?? [KEY], bodyLimit: 1024 * 1024, pingIntervalMs: 60_000, ...(options.modelAdmin !== undefined ? { modelAdmin: options.modelAdmin } : {}) },
    inference,
  });
  return { app, inference };
}

let app: FastifyInstance;
let fake: AdminFake;
beforeAll(async () => {
  const built = await appWith();
  app = built.app;
  fake = built.inference as AdminFake;
});
afterAll(() => app.close());

const post = (url: string, body: unknown, headers: Record<string, string> = AUTH) =>
  app.inject({ method: 'POST', url, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });

describe('POST /models/load and /models/unload', () => {
  it('unloads and loads a model, answering success and its state (both spellings)', async () => {
    const unloaded = await post('/models/unload', { model: 'fake-chat' });
    expect(unloaded.statusCode).toBe(200);
    expect(unloaded.json()).toEqual({ success: true, model: 'fake-chat', state: 'unloaded', loaded: false, expires_at: null });
    expect((await app.inject({ method: 'GET', url: '/v1/models/fake-chat', headers: AUTH })).json()).toMatchObject({ state: 'unloaded', loaded: false });

    const loaded = await post('/v1/models/load', { model: 'fake-chat' });
    expect(loaded.statusCode).toBe(200);
    expect(loaded.json()).toEqual({ success: true, model: 'fake-chat', state: 'loaded', loaded: true, expires_at: new Date(Date.parse('2030-01-01T00:00:00Z') + IDLE_MS).toISOString() });
    expect((await app.inject({ method: 'GET', url: '/v1/models/fake-chat', headers: AUTH })).json()).toMatchObject({ state: 'loaded', loaded: true });

    expect((await post('/v1/models/unload', { model: 'fake-embed' })).json()).toMatchObject({ success: true, model: 'fake-embed', state: 'unloaded' });
    expect((await post('/models/load', { model: 'fake-embed' })).json()).toMatchObject({ success: true, model: 'fake-embed', state: 'loaded' });
  });

  it('takes an alias, and answers with the model id', async () => {
    expect((await post('/models/unload', { model: 'fake-alias' })).json()).toMatchObject({ success: true, model: 'fake-chat', state: 'unloaded' });
    expect((await post('/models/load', { model: 'fake-alias' })).json()).toMatchObject({ success: true, model: 'fake-chat', state: 'loaded' });
  });

  it('an unknown model is a 404 in the OpenAI envelope', async () => {
    for (const url of ['/models/load', '/models/unload', '/v1/models/load', '/v1/models/unload']) {
      const res = await post(url, { model: 'nope' });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({ error: { message: expect.stringMatching(/nope/), type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
    }
  });

  it('a model in use is not unloaded: a 400 that says why', async () => {
    fake.inflight.set('fake-chat', 2);
    try {
      const res = await post('/models/unload', { model: 'fake-chat' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'model', message: expect.stringMatching(/in use by 2 request/) });
      expect(fake.loaded.has('fake-chat')).toBe(true);
    } finally {
      fake.inflight.delete('fake-chat');
    }
  });

  it('without a key, or with a wrong one, a 401 in the OpenAI envelope (x-api-key is accepted too)', async () => {
    const before = fake.asked.length;
    const none = await post('/models/unload', { model: 'fake-chat' }, JSON_HEADERS);
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'An API key is required.' } });
    const wrong = await post('/v1/models/load', { model: 'fake-chat' }, { ...JSON_HEADERS, authorization: 'Bearer sk-wrong' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ error: { code: 'invalid_api_key', message: 'Incorrect API key provided.' } });
    // Even an Anthropic client's headers get OpenAI's envelope here (as llama-server answers).
    const anthropic = await post('/models/load', { model: 'fake-chat' }, { ...JSON_HEADERS, 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-wrong' });
    expect(anthropic.statusCode).toBe(401);
    expect(anthropic.json()).toHaveProperty('error.code', 'invalid_api_key');
    expect(fake.asked.length).toBe(before);
    expect((await post('/models/load', { model: 'fake-chat' }, { ...JSON_HEADERS, 'x-api-key': KEY })).statusCode).toBe(200);
  });

  it('a wrong body is a 400 naming the field; not JSON, a 400 or a 415', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{}, /^model: Field required/],
      [{ model: 5 }, /^model: expected a string, got the integer 5/],
      [{ model: '' }, /^model: /],
      [{ model: 'x'.repeat(300) }, /^model: /],
      [[], /must be a JSON object/],
      ['"fake-chat"', /must be a JSON object/],
      ['{"model":', /not valid JSON/],
    ];
    for (const [body, message] of cases) {
      const res = await post('/models/load', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(message) });
    }
    const text = await app.inject({ method: 'POST', url: '/models/unload', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'text/plain' }, payload: 'fake-chat' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toHaveProperty('error.type', 'invalid_request_error');
    expect((await app.inject({ method: 'GET', url: '/models/load', headers: AUTH })).statusCode).toBe(404);
  });

  it('modelAdmin false: the routes are not served (404), and GET /v1/models is unchanged', async () => {
    const { app: off } = await appWith({ modelAdmin: false });
    try {
      for (const url of ['/models/load', '/models/unload', '/v1/models/load', '/v1/models/unload']) {
        const res = await off.inject({ method: 'POST', url, headers: AUTH, payload: JSON.stringify({ model: 'fake-chat' }) });
        expect(res.statusCode, url).toBe(404);
        expect(res.json(), url).toHaveProperty('error.code', 'route_not_found');
      }
      expect((await off.inject({ method: 'GET', url: '/v1/models', headers: AUTH })).statusCode).toBe(200);
    } finally {
      await off.close();
    }
  });

  it('a service that cannot load on request answers 400, not 500', async () => {
    const { app: plain } = await appWith({ inference: new FakeInference() });
    try {
      const res = await plain.inject({ method: 'POST', url: '/models/load', headers: AUTH, payload: JSON.stringify({ model: 'fake-chat' }) });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toMatch(/cannot load or unload/);
    } finally {
      await plain.close();
    }
  });

  it('the routes are in the OpenAPI document with their request and response schemas', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of ['/models/load', '/models/unload', '/v1/models/load', '/v1/models/unload']) {
      const op = doc.paths[path]?.post;
      expect(op, path).toBeDefined();
      expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ModelAdminRequest' });
      expect(op.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ModelAdminResult' });
      expect(op.responses['4XX'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OpenAIError' });
    }
    expect(doc.components.schemas.ModelAdminRequest).toMatchObject({ type: 'object', required: ['model'] });
  });
});

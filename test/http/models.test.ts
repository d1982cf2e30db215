import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fakeApp } from '../helpers/inject.js';

let app: FastifyInstance;
beforeAll(async () => ({ app } = await fakeApp()));
afterAll(() => app.close());

describe('model list and service routes', () => {
  it('lists models in a shape both dialects accept', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/models' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ object: 'list', first_id: 'fake-chat', last_id: 'fake-embed', has_more: false });
    expect(body.data[0]).toMatchObject({
      id: 'fake-chat', object: 'model', type: 'model', created: 1_700_000_000, created_at: '2023-11-14T22:13:20.000Z',
      owned_by: 'local', display_name: 'Fake chat', task: 'chat', context_length: 64,
      max_input_tokens: 64, max_tokens: 64, lifecycle: 'active',
    });
    // What Anthropic's Models API carries, true for this model: no thinking switch in its template
    // (a thinking request is still accepted, and answered without thinking), no images.
    expect(body.data[0].capabilities).toMatchObject({ thinking: { supported: false, types: { enabled: { supported: true }, disabled: { supported: true } } }, image_input: { supported: false } });
    expect(body.data[1]).toMatchObject({ id: 'fake-embed', max_tokens: null, capabilities: null });
  });

  it('pages with limit and after_id', async () => {
    const body = (await app.inject({ method: 'GET', url: '/v1/models?limit=1' })).json();
    expect(body).toMatchObject({ data: [{ id: 'fake-chat' }], has_more: true });
    const next = (await app.inject({ method: 'GET', url: '/v1/models?limit=1&after_id=fake-chat' })).json();
    expect(next).toMatchObject({ data: [{ id: 'fake-embed' }], has_more: false });
  });

  it('before_id gives the models just before it; an unknown id is a 400 naming it', async () => {
    const before = (await app.inject({ method: 'GET', url: '/v1/models?limit=1&before_id=fake-embed' })).json();
    expect(before).toMatchObject({ data: [{ id: 'fake-chat' }], has_more: false });
    const all = (await app.inject({ method: 'GET', url: '/v1/models?before_id=fake-chat' })).json();
    expect(all).toMatchObject({ data: [], has_more: false });
    const unknown = await app.inject({ method: 'GET', url: '/v1/models?after_id=nope' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatchObject({ param: 'after_id', message: expect.stringMatching(/`nope`/) });
  });

  it('retrieves one model, and 404s an unknown one in the caller’s dialect', async () => {
    expect((await app.inject({ method: 'GET', url: '/v1/models/fake-embed' })).json().id).toBe('fake-embed');
    const openai = await app.inject({ method: 'GET', url: '/v1/models/nope' });
    expect(openai.statusCode).toBe(404);
    expect(openai.json().error.code).toBe('model_not_found');
    const anthropic = await app.inject({ method: 'GET', url: '/v1/models/nope', headers: { 'anthropic-version': '2023-06-01' } });
    expect(anthropic.statusCode).toBe(404);
    expect(anthropic.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('HEAD / and GET / answer 200; unknown routes 404 with a request id', async () => {
    expect((await app.inject({ method: 'HEAD', url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' });
    const res = await app.inject({ method: 'GET', url: '/v1/nothing' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['request-id']).toMatch(/^req_/);
  });
});

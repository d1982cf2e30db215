/**
 * `ignore_eos`, the benchmark extension (src/http/shared/ignore-eos.ts), on the two OpenAI routes that
 * accept it: the wire field becomes the core's neutral `ignoreEos` (only when true), a value that is
 * not a boolean is a 400 in the OpenAI envelope, and the API reference names it as an extension on both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fakeApp, JSON_HEADERS } from '../helpers/inject.js';
import type { FakeInference } from '../helpers/fake-inference.js';

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => ({ app, fake } = await fakeApp()));
afterAll(() => app.close());

const ROUTES = [
  ['/v1/chat/completions', (extra: object) => ({ model: 'fake-chat', max_tokens: 3, messages: [{ role: 'user', content: 'a b c' }], ...extra })],
  ['/v1/responses', (extra: object) => ({ model: 'fake-chat', max_output_tokens: 3, input: 'a b c', ...extra })],
] as const;
const post = (url: string, body: unknown) => app.inject({ method: 'POST', url, headers: JSON_HEADERS, payload: JSON.stringify(body) });

describe('ignore_eos (benchmark extension)', () => {
  it.each(ROUTES)('%s: true reaches the core as ignoreEos; false, null and absent leave it out', async (url, body) => {
    expect((await post(url, body({ ignore_eos: true }))).statusCode).toBe(200);
    expect(fake.calls.chat.at(-1)!.ignoreEos).toBe(true);
    for (const extra of [{ ignore_eos: false }, { ignore_eos: null }, {}]) {
      expect((await post(url, body(extra))).statusCode).toBe(200);
      expect(fake.calls.chat.at(-1)!).not.toHaveProperty('ignoreEos');
    }
  });

  it.each(ROUTES)('%s: a value that is not a boolean is a 400 naming the field', async (url, body) => {
    const res = await post(url, body({ ignore_eos: 'yes' }));
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/ignore_eos/) });
  });

  it('the API reference lists it on both request schemas, described as a benchmark extension', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const name of ['ChatCompletionRequest', 'ResponsesRequest']) {
      const schema = JSON.stringify(doc.components.schemas[name]);
      expect(schema, name).toMatch(/"ignore_eos":\{[^}]*"description":"Benchmark extension/);
    }
  });
});

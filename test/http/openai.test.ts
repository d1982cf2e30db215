import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fakeApp, JSON_HEADERS } from '../helpers/inject.js';
import type { FakeInference } from '../helpers/fake-inference.js';

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => ({ app, fake } = await fakeApp()));
afterAll(() => app.close());

const ENGINES = '/v1/engines/fake-embed/embeddings';
const post = (body: unknown, url = ENGINES, headers: Record<string, string> = JSON_HEADERS) =>
  app.inject({ method: 'POST', url, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });

function expectOpenAiError(res: Awaited<ReturnType<typeof post>>, status: number, messagePart: RegExp, param?: string | null) {
  expect(res.statusCode).toBe(status);
  expect(res.headers['request-id']).toMatch(/^req_/);
  const body = res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.message).toEqual(expect.any(String));
  expect(body.error.message).toMatch(messagePart);
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body.error;
}

describe('POST embeddings (fake inference)', () => {
  it.each([ENGINES, '/v1/embeddings'])('answers %s with the list shape and usage', async (url) => {
    const res = await post({ model: 'fake-embed', input: ['a b', 'c'] }, url);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [Math.fround(Math.cos(2)), Math.fround(Math.sin(2))] },
        { object: 'embedding', index: 1, embedding: [Math.fround(Math.cos(1)), Math.fround(Math.sin(1))] },
      ],
      model: 'fake-embed',
      usage: { prompt_tokens: 3, total_tokens: 3 },
    });
  });

  it('takes the model from the path when the body has none', async () => {
    expect((await post({ input: 'x' })).statusCode).toBe(200);
  });

  it.each([
    ['a string', 'hello there', [['hello there']]],
    ['strings', ['a', 'b c'], [['a', 'b c']]],
    ['token ids', [1, 2, 3], [[[1, 2, 3]]]],
    ['token-id arrays', [[1], [2, 3]], [[[1], [2, 3]]]],
  ])('accepts input as %s', async (_name, input, expected) => {
    const res = await post({ input });
    expect(res.statusCode).toBe(200);
    expect([fake.calls.embed.at(-1)!.inputs]).toEqual(expected);
  });

  it('encodes base64 as little-endian float32', async () => {
    const float = (await post({ input: 'a b c' })).json().data[0].embedding as number[];
    const b64 = (await post({ input: 'a b c', encoding_format: 'base64' })).json().data[0].embedding as string;
    const bytes = Buffer.from(b64, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    expect(decoded).toEqual(float);
  });

  it('passes dimensions and accepts user', async () => {
    expect((await post({ input: 'x', dimensions: 2, user: 'u1' })).statusCode).toBe(200);
    expect(fake.calls.embed.at(-1)!.dimensions).toBe(2);
  });

  it.each([
    ['malformed JSON', '{"input": [', /not valid JSON/, null],
    ['missing input', { model: 'fake-embed' }, /input: Field required/, 'input'],
    ['empty input array', { input: [] }, /must not be empty/, 'input'],
    ['an empty string', { input: '' }, /empty string/, 'input'],
    ['an empty string item', { input: ['a', ''] }, /input\[1\]/, 'input'],
    ['a mixed array', { input: ['a', 1] }, /input\[1\]/, 'input'],
    ['a number', { input: 5 }, /expected a string.*got the integer 5/, 'input'],
    ['negative token ids', { input: [[-1]] }, /input\[0\]/, 'input'],
    ['too many inputs', { input: Array.from({ length: 2049 }, () => 'a') }, /at most 2048/, 'input'],
    ['an unknown encoding_format', { input: 'a', encoding_format: 'int8' }, /expected "float" or "base64", got the string "int8"/, 'encoding_format'],
    ['encoding_format nested 10,000 levels deep', `{"input": "a", "encoding_format": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`, /nested more than 64 levels/, null],
    ['model a number', { input: 'a', model: 5 }, /^model: expected a string, got the integer 5$/, 'model'],
    ['a huge unknown field name', { input: 'a', ['x'.repeat(100_000)]: 1 }, /^Unrecognized request argument supplied: x{64}… \(100000 characters\)$/, null],
    ['dimensions 0', { input: 'a', dimensions: 0 }, /dimensions/, 'dimensions'],
    ['unsupported dimensions', { input: 'a', dimensions: 7 }, /dimensions/, 'dimensions'],
    ['an unknown field', { input: 'a', foo: 1 }, /Unrecognized request argument supplied: foo/, null],
    ['path/body model mismatch', { model: 'other', input: 'a' }, /path \(`fake-embed`\).*body \(`other`\)/, 'model'],
    ['a chat model', { input: 'a' }, /chat model/, 'model'],
  ])('400 invalid_request_error for %s', async (name, body, message, param) => {
    const url = name === 'a chat model' ? '/v1/engines/fake-chat/embeddings' : ENGINES;
    const error = expectOpenAiError(await post(body, url), 400, message, param);
    expect(error.type).toBe('invalid_request_error');
  });

  it('400 when /v1/embeddings has no model', async () => {
    expectOpenAiError(await post({ input: 'a' }, '/v1/embeddings'), 400, /model: Field required/, 'model');
  });

  it('404 for an unknown model', async () => {
    const error = expectOpenAiError(await post({ input: 'a' }, '/v1/engines/nope/embeddings'), 404, /`nope` does not exist/, 'model');
    expect(error.code).toBe('model_not_found');
  });

  it('415 for a form body', async () => {
    expectOpenAiError(await post('input=a', ENGINES, { 'content-type': 'application/x-www-form-urlencoded' }), 415, /application\/json/);
  });
});

describe('embeddings authentication', () => {
  let secured: FastifyInstance;
  beforeAll(async () => ({ app: secured } = await fakeApp({ apiKeys: ['sk-emb'] })));
  afterAll(() => secured.close());
  const call = (headers: Record<string, string>) =>
    secured.inject({ method: 'POST', url: ENGINES, headers: { ...JSON_HEADERS, ...headers }, payload: '{"input":"a"}' });

  it('accepts the bearer key', async () => {
    expect((await call({ authorization: 'Bearer sk-emb' })).statusCode).toBe(200);
  });

  it.each([
    ['no key', {}, /didn't provide an API key/],
    ['a wrong key', { authorization: 'Bearer sk-nope' }, /Incorrect API key provided/],
    ['x-api-key (chat only)', { 'x-api-key': 'sk-emb' }, /didn't provide/],
  ])('401 with %s', async (_name, headers, message) => {
    const error = expectOpenAiError(await call(headers), 401, message);
    expect(error.code).toBe('invalid_api_key');
  });
});

/**
 * The Responses dialect over app.inject with the fake inference service (test/helpers/fake-inference.ts:
 * replies echo the last user message, one word a token; the context is 64 words): the whole SSE
 * transcript, truncation, the error envelope of every refusal, keys.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fakeApp, JSON_HEADERS, parseSse } from '../helpers/inject.js';
import type { FakeInference } from '../helpers/fake-inference.js';

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => ({ app, fake } = await fakeApp({ apiKeys: ['k'] })));
afterAll(() => app?.close());

const AUTH = { ...JSON_HEADERS, authorization: 'Bearer k' };
const post = (payload: unknown, path = '/v1/responses') => app.inject({ method: 'POST', url: path, headers: AUTH, payload: payload as object });

describe('POST /v1/responses (fake inference)', () => {
  it('streams the typed events in order, each with its sequence number, ending with response.completed', async () => {
    const res = await post({ model: 'fake-chat', input: 'one two three', stream: true });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = parseSse(res.body.split('\n\n').filter((f) => !f.startsWith(':')).join('\n\n'));
    expect(events.map((e) => e.event)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      ...events.filter((e) => e.event === 'response.output_text.delta').map(() => 'response.output_text.delta'),
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events.at(-1)!.data.response;
    expect(done.output[0].content[0].text).toBe(events.find((e) => e.event === 'response.output_text.done')!.data.text);
    expect(done.usage).toEqual({ input_tokens: 3, input_tokens_details: { cached_tokens: 0 }, output_tokens: done.usage.output_tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 3 + done.usage.output_tokens });
  });

  it('a message cut at the output limit ends incomplete in its own output_item.done, as in the final object', async () => {
    const res = await post({ model: 'fake-chat', input: 'one two three four five six', stream: true, max_output_tokens: 2 });
    const events = parseSse(res.body.split('\n\n').filter((f) => !f.startsWith(':')).join('\n\n'));
    const done = events.find((e) => e.event === 'response.output_item.done')!;
    expect(done.data.item.status).toBe('incomplete');
    expect(events.at(-1)!.event).toBe('response.incomplete');
    expect(events.at(-1)!.data.response.output[0].status).toBe('incomplete');
    // The done events still come before the terminal event, in sequence.
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
  });

  it('an error after the stream opened is an error event, then response.failed', async () => {
    fake.failAfterTokens = 1;
    const res = await post({ model: 'fake-chat', input: 'one two three', stream: true });
    fake.failAfterTokens = null;
    const events = parseSse(res.body.split('\n\n').filter((f) => !f.startsWith(':')).join('\n\n'));
    expect(events.slice(-2).map((e) => e.event)).toEqual(['error', 'response.failed']);
    expect(events.at(-1)!.data.response.status).toBe('failed');
  });

  it('truncation "auto" drops the oldest turns until the prompt fits, and says how many; "disabled" is the context error', async () => {
    const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
    const input = [{ role: 'user', content: long }, { role: 'assistant', content: long }, { role: 'user', content: 'short question' }];
    const auto = await post({ model: 'fake-chat', input, truncation: 'auto', max_output_tokens: 4 });
    expect(auto.statusCode, auto.body).toBe(200);
    expect(auto.headers['x-truncated-messages']).toBe('2');
    expect(fake.calls.chat.at(-1)!.messages).toEqual([{ role: 'user', content: 'short question' }]);
    const disabled = await post({ model: 'fake-chat', input, max_output_tokens: 4 });
    expect(disabled.statusCode).toBe(400);
    expect(disabled.json().error).toMatchObject({ type: 'invalid_request_error' });
  });

  it('truncation "auto" finds where to start by bisection: a count per halving, not one per dropped turn', async () => {
    // 16 turns of 8 words and a short question, in a window of 64 words: from message 10 on, it fits.
    const turn = 'a b c d e f g h';
    const input = [...Array.from({ length: 16 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: turn })), { role: 'user', content: 'short question' }];
    const counts = vi.spyOn(fake, 'countTokens');
    const auto = await post({ model: 'fake-chat', input, truncation: 'auto', max_output_tokens: 4 });
    const calls = counts.mock.calls.length;
    counts.mockRestore();
    expect(auto.statusCode, auto.body).toBe(200);
    expect(auto.headers['x-truncated-messages']).toBe('10');
    expect(fake.calls.chat.at(-1)!.messages).toHaveLength(7);
    // 9 places to start (the whole, each later user turn, the last message): the whole, then log2(8) halvings.
    expect(calls).toBe(4);
  });

  it("refusals in OpenAI's envelope: unknown field, wrong type, missing key, unknown stored id, unknown model", async () => {
    const unknown = await post({ model: 'fake-chat', input: 'x', frobnicate: 1 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.message).toMatch(/Unrecognized request argument supplied: frobnicate/);
    const wrongType = await post({ model: 'fake-chat', input: 'x', max_output_tokens: 'many' });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json().error.param).toBe('max_output_tokens');
    const noKey = await app.inject({ method: 'POST', url: '/v1/responses', headers: JSON_HEADERS, payload: { model: 'fake-chat', input: 'x' } });
    expect(noKey.statusCode).toBe(401);
    expect(noKey.json().error.type).toBe('invalid_request_error');
    const missing = await app.inject({ method: 'GET', url: '/v1/responses/resp_nothing', headers: AUTH });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.message).toMatch(/No response found with id 'resp_nothing'/);
    const model = await post({ model: 'no-such-model', input: 'x' });
    expect(model.statusCode).toBe(404);
    expect(model.json().error.code).toBe('model_not_found');
  });
});

describe('the owner of a stored response', () => {
  const create = (on: FastifyInstance, key: string) =>
    on.inject({ method: 'POST', url: '/v1/responses', headers: { ...JSON_HEADERS, authorization: `Bearer ${key}` }, payload: { model: 'fake-chat', input: 'one two' } });
  const items = (on: FastifyInstance, id: string, headers: Record<string, string>) => on.inject({ method: 'GET', url: `/v1/responses/${id}/input_items`, headers });

  it('without keys configured, every client is the same one: the SDK with its placeholder key and a plain curl read the same responses', async () => {
    const { app: open } = await fakeApp();
    try {
      const id = (await create(open, 'x')).json().id as string;
      expect((await items(open, id, {})).statusCode).toBe(200);
      expect((await items(open, id, { authorization: 'Bearer other' })).statusCode).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('with keys configured, a response is its key\'s: another valid key is answered 404', async () => {
    const { app: keyed } = await fakeApp({ apiKeys: ['k', 'k2'] });
    try {
      const id = (await create(keyed, 'k')).json().id as string;
      expect((await items(keyed, id, { authorization: 'Bearer k' })).statusCode).toBe(200);
      expect((await items(keyed, id, { authorization: 'Bearer k2' })).statusCode).toBe(404);
    } finally {
      await keyed.close();
    }
  });
});

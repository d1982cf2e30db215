import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ANTHROPIC_HEADERS, fakeApp, parseSse } from '../helpers/inject.js';
import type { FakeInference } from '../helpers/fake-inference.js';

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => ({ app, fake } = await fakeApp()));
afterAll(() => app.close());

const valid = { model: 'fake-chat', max_tokens: 5, messages: [{ role: 'user', content: 'one two three' }] };
const post = (body: unknown, headers: Record<string, string> = ANTHROPIC_HEADERS, url = '/v1/messages') =>
  app.inject({ method: 'POST', url, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });

function expectAnthropicError(res: Awaited<ReturnType<typeof post>>, status: number, type: string, messagePart?: RegExp) {
  expect(res.statusCode).toBe(status);
  const body = res.json();
  expect(body).toEqual({ type: 'error', error: { type, message: expect.any(String) }, request_id: res.headers['request-id'] });
  expect(body.request_id).toMatch(/^req_[0-9a-f]{24}$/);
  if (messagePart) expect(body.error.message).toMatch(messagePart);
  return body;
}

describe('POST /v1/messages (fake inference)', () => {
  it('answers a valid request with the message shape and real usage from the service', async () => {
    const res = await post(valid);
    expect(res.statusCode).toBe(200);
    expect(res.headers['request-id']).toMatch(/^req_/);
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      model: 'fake-chat',
      content: [{ type: 'text', text: 'one two three' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('passes max_tokens, sampling and stop sequences through to the service', async () => {
    const res = await post({ ...valid, max_tokens: 2, temperature: 0, top_k: 5, top_p: 0.5, stop_sequences: ['x'] });
    expect(res.json().stop_reason).toBe('max_tokens');
    expect(fake.calls.chat.at(-1)).toMatchObject({ maxTokens: 2, sampling: { temperature: 0, topK: 5, topP: 0.5 }, stopStrings: ['x'] });
  });

  it('accepts hints that cannot change a reply here', async () => {
    const res = await post({
      ...valid, cache_control: { type: 'ephemeral' }, service_tier: 'auto', speed: 'standard', inference_geo: 'us',
      diagnostics: { previous_message_id: null }, output_config: { effort: 'low' }, metadata: { user_id: 'u' }, thinking: { type: 'disabled' },
    });
    expect(res.statusCode).toBe(200);
  });

  it('combines consecutive turns of one role and keeps a final assistant prefill', async () => {
    const res = await post({ ...valid, messages: [
      { role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'assistant', content: 'c' }, { role: 'user', content: 'd' }, { role: 'assistant', content: 'e' },
    ] });
    expect(res.statusCode).toBe(200);
    expect(fake.calls.chat.at(-1)!.messages).toEqual([
      { role: 'user', content: 'a\n\nb' }, { role: 'assistant', content: 'c' }, { role: 'user', content: 'd' }, { role: 'assistant', content: 'e' },
    ]);
  });

  it('an empty final assistant message means no prefill: it is dropped, alone or after another assistant turn', async () => {
    for (const content of ['', [], [{ type: 'text', text: '' }]]) {
      const res = await post({ ...valid, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content }] });
      expect(res.statusCode).toBe(200);
      expect(fake.calls.chat.at(-1)!.messages).toEqual([{ role: 'user', content: 'x' }]);
    }
    const res = await post({ ...valid, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Hi' }, { role: 'assistant', content: '' }] });
    expect(res.statusCode).toBe(200);
    expect(fake.calls.chat.at(-1)!.messages).toEqual([{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Hi' }]);
    const count = await post({ model: 'fake-chat', messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: '' }] }, ANTHROPIC_HEADERS, '/v1/messages/count_tokens');
    expect(count.json()).toEqual({ input_tokens: 1 });
  });

  it.each([
    ['a merged prefill ending in whitespace', [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Hi' }, { role: 'assistant', content: ' ' }]],
    ['a prefill ending in whitespace before an empty final turn', [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Hi ' }, { role: 'assistant', content: '' }]],
  ])('400 for %s, as when sent as one message', async (_name, messages) => {
    expectAnthropicError(await post({ ...valid, messages }), 400, 'invalid_request_error', /final assistant content cannot end with trailing whitespace/);
  });

  it('400 for an empty assistant message that is not the last one', async () => {
    const messages = [{ role: 'user', content: 'x' }, { role: 'assistant', content: '' }, { role: 'user', content: 'y' }];
    expectAnthropicError(await post({ ...valid, messages }), 400, 'invalid_request_error', /messages\.1: assistant messages must have non-empty content/);
    const merged = [{ role: 'user', content: 'x' }, { role: 'assistant', content: '' }, { role: 'assistant', content: 'Hi' }];
    expectAnthropicError(await post({ ...valid, messages: merged }), 400, 'invalid_request_error', /messages\.1: assistant messages must have non-empty content/);
  });

  it('ignores unknown anthropic-beta values', async () => {
    expect((await post(valid, { ...ANTHROPIC_HEADERS, 'anthropic-beta': 'made-up-2099-01-01,other' })).statusCode).toBe(200);
  });

  it('accepts vendor-version in place of anthropic-version', async () => {
    const res = await post(valid, { 'content-type': 'application/json', 'vendor-version': '2023-06-01' });
    expect(res.statusCode).toBe(200);
  });

  it('joins text blocks and renders a block-array system prompt', async () => {
    const res = await post({ ...valid, system: [{ type: 'text', text: 'be brief' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'a b' }, { type: 'text', text: ' c' }] }] });
    expect(res.statusCode).toBe(200);
    expect(fake.calls.chat.at(-1)).toMatchObject({ system: 'be brief', messages: [{ role: 'user', content: 'a b c' }] });
  });

  it('400 without a version header', async () => {
    expectAnthropicError(await post(valid, { 'content-type': 'application/json' }), 400, 'invalid_request_error', /anthropic-version/);
  });

  it.each([
    ['malformed JSON', '{"model": ', /not valid JSON/],
    ['an array body', '[1,2]', /JSON object/],
    ['max_tokens 0', { ...valid, max_tokens: 0 }, /max_tokens/],
    ['max_tokens not an integer', { ...valid, max_tokens: 1.5 }, /max_tokens/],
    ['max_tokens a string', { ...valid, max_tokens: '5' }, /^max_tokens: expected a number, got the string "5"$/],
    ['model a number', { ...valid, model: 5 }, /^model: expected a string, got the integer 5$/],
    ['messages an object', { ...valid, messages: {} }, /^messages: expected an array, got an object$/],
    ['a role of the wrong type', { ...valid, messages: [{ role: 7, content: 'x' }] }, /^messages\.0\.role: expected one of "user", "assistant", "system", got the integer 7$/],
    ['a body nested past the limit', { ...valid, metadata: JSON.parse('['.repeat(70) + ']'.repeat(70)) }, /nested more than 64 levels/],
    ['missing max_tokens', { model: 'fake-chat', messages: valid.messages }, /max_tokens: Field required/],
    ['missing model', { max_tokens: 5, messages: valid.messages }, /model: Field required/],
    ['empty messages', { ...valid, messages: [] }, /at least one message/],
    ['an unknown role', { ...valid, messages: [{ role: 'robot', content: 'x' }] }, /^messages\.0\.role: expected one of "user", "assistant", "system", got the string "robot"$/],
    ['only system messages', { ...valid, messages: [{ role: 'system', content: 'x' }] }, /at least one user message/],
    ['empty content', { ...valid, messages: [{ role: 'user', content: '' }] }, /non-empty/],
    ['whitespace-only content', { ...valid, messages: [{ role: 'user', content: '  ' }] }, /non-empty/],
    ['a first assistant message', { ...valid, messages: [{ role: 'assistant', content: 'hi' }, { role: 'user', content: 'x' }] }, /first message must use the "user" role/],
    ['a prefill ending in whitespace', { ...valid, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'Sure, ' }] }, /trailing whitespace/],
    ['temperature above 1', { ...valid, temperature: 1.5 }, /temperature/],
    ['an unknown field', { ...valid, frobnicate: true }, /frobnicate: Extra inputs are not permitted/],
    ['an image block without a source type', { ...valid, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }, /messages\.0\.content\.0\.source\.type: expected "base64" or "url", got nothing/],
    ['a tool_result block in an assistant message', { ...valid, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] }] }, /tool_result blocks belong to user messages/],
    ['a server tool', { ...valid, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /server tools of type `web_search_20250305`/],
    ['a tool without input_schema', { ...valid, tools: [{ name: 't' }] }, /tools\.0\.input_schema: Field required/],
    ['tool_choice naming no tool', { ...valid, tools: [{ name: 't', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'u' } }, /no tool named `u`/],
    ['tool_choice without tools', { ...valid, tool_choice: { type: 'any' } }, /tool_choice: requires `tools`/],
    ['a thinking budget under 1024', { ...valid, max_tokens: 60, thinking: { type: 'enabled', budget_tokens: 100 } }, /thinking\.budget_tokens: must be at least 1024/],
    ['a thinking budget not under max_tokens', { ...valid, thinking: { type: 'enabled', budget_tokens: 1024 } }, /budget_tokens: must be less than max_tokens/],
    ['a PDF document', { ...valid, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } }] }] }, /`document \(base64 source\)`/],
    ['an output format other than json_schema', { ...valid, output_config: { format: { type: 'json_object' } } }, /^output_config\.format\.type: /],
    ['an output format without its schema', { ...valid, output_format: { type: 'json_schema' } }, /^output_format\.schema: /],
    ['max_tokens above the model’s output limit', { ...valid, max_tokens: 1000 }, /^max_tokens: 1000 > 64, which is the maximum allowed number of output tokens for fake-chat$/],
    ['a prompt that fills the context', { ...valid, messages: [{ role: 'user', content: 'word '.repeat(64) }] }, /^prompt is too long: 64 tokens > 63 maximum$/],
  ])('400 invalid_request_error for %s', async (_name, body, message) => {
    expectAnthropicError(await post(body), 400, 'invalid_request_error', message);
  });

  it('404 not_found_error for an unknown model; a huge name is clipped in the message', async () => {
    expectAnthropicError(await post({ ...valid, model: 'nope' }), 404, 'not_found_error', /`nope` does not exist/);
    const body = expectAnthropicError(await post({ ...valid, model: 'm'.repeat(500_000) }), 404, 'not_found_error', /\(500000 characters\)/);
    expect(body.error.message.length).toBeLessThan(300);
  });

  it('resolves model aliases', async () => {
    const res = await post({ ...valid, model: 'fake-alias' });
    expect(res.statusCode).toBe(200);
    expect(res.json().model).toBe('fake-alias');
  });

  it('400 for an embedding model used for chat', async () => {
    expectAnthropicError(await post({ ...valid, model: 'fake-embed' }), 400, 'invalid_request_error', /embedding model/);
  });

  it('415 for a non-JSON content type', async () => {
    const res = await post('hello', { 'content-type': 'text/plain', 'anthropic-version': '2023-06-01' });
    expectAnthropicError(res, 415, 'invalid_request_error', /application\/json/);
  });

  it('413 request_too_large above the body limit', async () => {
    const { app: small } = await fakeApp({ bodyLimit: 2048 });
    const res = await small.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: JSON.stringify({ ...valid, system: 'x'.repeat(4096) }) });
    expectAnthropicError(res, 413, 'request_too_large');
    await small.close();
  });

  it('streams the documented SSE event sequence', async () => {
    const res = await post({ ...valid, stream: true });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['request-id']).toMatch(/^req_/);
    const events = parseSse(res.body);
    for (const e of events) expect(e.data.type).toBe(e.event);
    expect(events.map((e) => e.event)).toEqual([
      'message_start', 'ping', 'content_block_start',
      'content_block_delta', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(events[0]!.data.message).toMatchObject({ role: 'assistant', content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 0 } });
    expect(events[2]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('')).toBe('one two three');
    expect(events[7]!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 3, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('sends ping events at the configured interval while a stream is open', async () => {
    const PING_MS = 20;
    const { app: pinging, fake: slow } = await fakeApp({ pingIntervalMs: PING_MS });
    slow.tokenDelayMs = PING_MS * 4; // each word takes four ping intervals
    const res = await pinging.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: JSON.stringify({ ...valid, stream: true }) });
    const names = parseSse(res.body).map((e) => e.event);
    // One ping when the stream opens, then more between the slow deltas.
    expect(names.filter((n) => n === 'ping').length).toBeGreaterThanOrEqual(4);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    await pinging.close();
  });

  it('a stream that fails after it started ends with an error event', async () => {
    fake.failAfterTokens = 1;
    try {
      const res = await post({ ...valid, stream: true });
      expect(res.statusCode).toBe(200);
      const events = parseSse(res.body);
      expect(events.map((e) => e.event)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'error']);
      expect(events.at(-1)!.data).toEqual({ type: 'error', error: { type: 'api_error', message: expect.not.stringMatching(/\/|at /) } });
    } finally {
      fake.failAfterTokens = null;
    }
  });

  it('a stream refused before it starts is an ordinary JSON error', async () => {
    expectAnthropicError(await post({ ...valid, stream: true, max_tokens: 1000 }), 400, 'invalid_request_error');
  });
});

describe('POST /v1/messages/count_tokens (fake inference)', () => {
  it('returns input_tokens for the body without max_tokens', async () => {
    const res = await post({ model: 'fake-chat', system: 's', messages: valid.messages }, ANTHROPIC_HEADERS, '/v1/messages/count_tokens');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ input_tokens: 4 });
  });

  it('rejects max_tokens like the real API', async () => {
    expectAnthropicError(await post(valid, ANTHROPIC_HEADERS, '/v1/messages/count_tokens'), 400, 'invalid_request_error', /max_tokens/);
  });

  it('400 for a prompt longer than the context: refused, not counted', async () => {
    const long = { model: 'fake-chat', messages: [{ role: 'user', content: 'word '.repeat(65) }] };
    expectAnthropicError(await post(long, ANTHROPIC_HEADERS, '/v1/messages/count_tokens'), 400, 'invalid_request_error',
      /^prompt is too long: 65 tokens > 63 maximum$/);
  });
});

describe('authentication', () => {
  let secured: FastifyInstance;
  beforeAll(async () => ({ app: secured } = await fakeApp({ apiKeys: ['sk-one', 'sk-two'] })));
  afterAll(() => secured.close());
  const call = (headers: Record<string, string>) =>
    secured.inject({ method: 'POST', url: '/v1/messages', headers: { ...ANTHROPIC_HEADERS, ...headers }, payload: JSON.stringify(valid) });

  it.each([
    ['x-api-key', { 'x-api-key': 'sk-two' }],
    ['Authorization: Bearer', { authorization: 'Bearer sk-one' }],
  ])('accepts a configured key in %s', async (_name, headers) => {
    expect((await call(headers)).statusCode).toBe(200);
  });

  it.each([
    ['no key', {}, /required/],
    ['a wrong x-api-key', { 'x-api-key': 'sk-three' }, /invalid x-api-key/],
    ['a wrong bearer key', { authorization: 'Bearer sk-on' }, /invalid/],
  ])('401 authentication_error with %s', async (_name, headers, message) => {
    expectAnthropicError(await call(headers), 401, 'authentication_error', message);
  });

  it('checks the key before reading the body', async () => {
    const res = await secured.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: '{not json' });
    expectAnthropicError(res, 401, 'authentication_error');
  });
});

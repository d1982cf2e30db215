/**
 * The official clients are the judge of wire compatibility: @anthropic-ai/sdk and openai against a
 * listening server on the bundled models, including the error classes they raise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { CHAT_MODEL, EMBED_MODEL, RERANK_MODEL } from '../helpers/paths.js';
import { promptTokens, startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'sk-local-test';
let server: RealServer;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], aliases: { 'claude-sonnet-4-5': CHAT_MODEL, 'claude-haiku-*': CHAT_MODEL } });
});
afterAll(() => server?.close());

const anthropic = (apiKey = KEY) => new Anthropic({ baseURL: server.url, apiKey, maxRetries: 0 });
const openai = (path = `/v1/engines/${EMBED_MODEL}`, apiKey = KEY) => new OpenAI({ baseURL: `${server.url}${path}`, apiKey, maxRetries: 0 });

describe('@anthropic-ai/sdk', () => {
  it('messages.create returns a message with real usage', async () => {
    // The current SDK's types no longer list temperature; the API (and this server) still take it.
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: CHAT_MODEL,
      max_tokens: 5,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...{ temperature: 0 },
    };
    const message = await anthropic().messages.create(params);
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: CHAT_MODEL, stop_reason: 'max_tokens', stop_sequence: null });
    expect(message.id).toMatch(/^msg_/);
    expect(message.content).toHaveLength(1);
    expect(message.content[0]!.type).toBe('text');
    expect(message.usage.output_tokens).toBe(5);
    const count = await anthropic().messages.countTokens({ model: CHAT_MODEL, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello.' }] });
    expect(message.usage.input_tokens).toBe(count.input_tokens);
  });

  it('stream: true yields the same text as the non-streaming call at temperature 0', async () => {
    const params: Anthropic.MessageCreateParamsNonStreaming = {
      model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'Count to three.' }], ...{ temperature: 0 },
    };
    const whole = await anthropic().messages.create(params);
    const stream = anthropic().messages.stream(params);
    const final = await stream.finalMessage();
    expect(final.content).toEqual(whole.content);
    // The second call reads the first's prompt from the prefix cache: the prompt's tokens are split
    // between input_tokens and cache_read_input_tokens, and add up to the same count.
    expect(promptTokens(final.usage)).toBe(promptTokens(whole.usage));
    expect(final.usage.output_tokens).toBe(8);
    expect(final.stop_reason).toBe('max_tokens');
  });

  it('an empty final assistant message means no prefill: the same tokens and reply as without it', async () => {
    const user = { role: 'user' as const, content: 'Say hello.' };
    const params = { model: CHAT_MODEL, max_tokens: 4, ...{ temperature: 0 } };
    const without = await anthropic().messages.create({ ...params, messages: [user] });
    const withEmpty = await anthropic().messages.create({ ...params, messages: [user, { role: 'assistant', content: '' }] });
    expect(promptTokens(withEmpty.usage)).toBe(promptTokens(without.usage));
    expect(withEmpty.content).toEqual(without.content);
    const count = await anthropic().messages.countTokens({ model: CHAT_MODEL, messages: [user, { role: 'assistant', content: '' }] });
    expect(count.input_tokens).toBe(promptTokens(without.usage));
  });

  it('serves a configured alias under the name the client asked for', async () => {
    const message = await anthropic().messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] });
    expect(message.model).toBe('claude-sonnet-4-5');
    expect(message.usage.output_tokens).toBe(2);
  });

  it('an alias pattern catches the dated names a client has hard-wired; a name nothing matches stays a 404', async () => {
    const message = await anthropic().messages.create({ model: 'claude-haiku-4-5-20251001', max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] });
    expect(message.usage.output_tokens).toBe(2);
    await expect(anthropic().messages.create({ model: 'claude-opus-4-1', max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] })).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('models.list sees the bundled models', async () => {
    const ids: string[] = [];
    for await (const model of anthropic().models.list()) ids.push(model.id);
    expect(ids.sort()).toEqual([EMBED_MODEL, CHAT_MODEL, RERANK_MODEL].sort());
  });

  it('raises BadRequestError for max_tokens 0', async () => {
    const error = await anthropic().messages.create({ model: CHAT_MODEL, max_tokens: 0, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(error.requestID).toMatch(/^req_/);
  });

  it('raises AuthenticationError for a wrong key', async () => {
    const error = await anthropic('sk-wrong').messages.create({ model: CHAT_MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(error.status).toBe(401);
  });

  it('raises NotFoundError for an unknown model', async () => {
    const error = await anthropic().messages.create({ model: 'claude-nope', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error.error.error.message).toMatch(/claude-nope/);
  });
});

describe('openai', () => {
  it('embeddings.create through the engines path, base64 (the SDK default) and float agree', async () => {
    const input = ['The cat sat on the mat.', 'A kitten rested on the rug.'];
    const viaDefault = await openai().embeddings.create({ model: EMBED_MODEL, input });
    const viaFloat = await openai().embeddings.create({ model: EMBED_MODEL, input, encoding_format: 'float' });
    expect(viaDefault.object).toBe('list');
    expect(viaDefault.model).toBe(EMBED_MODEL);
    expect(viaDefault.data.map((d) => d.index)).toEqual([0, 1]);
    expect(viaDefault.data[0]!.embedding).toHaveLength(100);
    expect(viaDefault.data.map((d) => d.embedding)).toEqual(viaFloat.data.map((d) => d.embedding.map(Math.fround)));
    expect(viaDefault.usage).toEqual({ prompt_tokens: 14, total_tokens: 14 });
  });

  it('concurrent requests mixing float, base64 and a failing dimensions each get their own answer', async () => {
    const texts = Array.from({ length: 24 }, (_, i) => `request number ${i} talks about ${['rivers', 'music', 'markets', 'gardens'][i % 4]}`);
    const post = (body: object) =>
      fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });
    const alone: number[][] = [];
    for (const text of texts) alone.push((await (await post({ model: EMBED_MODEL, input: text })).json()).data[0].embedding);
    const responses = await Promise.all(texts.map((text, i) => post({ model: EMBED_MODEL, input: text, encoding_format: i % 2 ? 'base64' : 'float', ...(i % 6 === 5 ? { dimensions: 7 } : {}) })));
    for (const [i, res] of responses.entries()) {
      if (i % 6 === 5) {
        expect(res.status).toBe(400);
        continue;
      }
      expect(res.status).toBe(200);
      const embedding = (await res.json()).data[0].embedding;
      const vector = typeof embedding === 'string'
        ? Array.from(new Float32Array(Uint8Array.from(Buffer.from(embedding, 'base64')).buffer))
        : embedding;
      expect(vector).toHaveLength(alone[i]!.length);
      expect(Math.max(...vector.map((v: number, d: number) => Math.abs(v - alone[i]![d]!)))).toBeLessThan(1e-5);
    }
  });

  it('embeddings.create on /v1/embeddings', async () => {
    const result = await openai('/v1').embeddings.create({ model: EMBED_MODEL, input: 'hello world' });
    expect(result.usage.prompt_tokens).toBe(2);
  });

  it('raises BadRequestError, AuthenticationError and NotFoundError', async () => {
    const bad = await openai().embeddings.create({ model: EMBED_MODEL, input: '' }).catch((e) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.param).toBe('input');
    const auth = await openai(undefined, 'sk-wrong').embeddings.create({ model: EMBED_MODEL, input: 'x' }).catch((e) => e);
    expect(auth).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(auth.code).toBe('invalid_api_key');
    const missing = await openai('/v1').embeddings.create({ model: 'text-embedding-3-small', input: 'x' }).catch((e) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.code).toBe('model_not_found');
  });
});

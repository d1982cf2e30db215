/**
 * The Messages stream on the bundled model over a real socket: full SSE transcripts (cut by
 * max_tokens, ended by a stop sequence spanning tokens) and a client that hangs up mid-generation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import { parseSse } from '../helpers/inject.js';
import { CHAT_MODEL, MODELS_DIR, ONNX_CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const POLL_MS = 10;
const GOLDEN_IDS = [99401, 20940, 74234, 92758, 59924, 4908, 9850, 61871, 47218, 103255, 78827, 76584];
const body = (overrides: Record<string, unknown> = {}) => ({
  model: CHAT_MODEL, max_tokens: GOLDEN_IDS.length, temperature: 0, stream: true,
  system: 'You are terse.', messages: [{ role: 'user', content: 'Name three colours.' }], ...overrides,
});

let server: RealServer;
let tokenizer: PreTrainedTokenizer;
beforeAll(async () => {
  server = await startRealServer();
  env.allowRemoteModels = false;
  env.localModelPath = `${MODELS_DIR}/`;
  // The bundled model's tokenizer.json: the GGUF test model carries the same tokenizer (test/model/llama-engine.test.ts).
  tokenizer = await AutoTokenizer.from_pretrained(ONNX_CHAT_MODEL);
});
afterAll(() => server?.close());

const post = (payload: unknown, signal?: AbortSignal) =>
  fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(payload),
    signal,
  });

/** Text each golden token adds when decoded in sequence. */
function pieces(): string[] {
  const decode = (ids: number[]) => (ids.length ? tokenizer.decode(ids) : '');
  return GOLDEN_IDS.map((_, i) => decode(GOLDEN_IDS.slice(0, i + 1)).slice(decode(GOLDEN_IDS.slice(0, i)).length));
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += POLL_MS) {
    if (waited > 30_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

describe('Messages streaming on the bundled model', () => {
  it('a stream cut by max_tokens: the full transcript', async () => {
    const count = await fetch(`${server.url}/v1/messages/count_tokens`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: CHAT_MODEL, system: 'You are terse.', messages: [{ role: 'user', content: 'Name three colours.' }] }),
    }).then((r) => r.json());
    const res = await post(body());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseSse(await res.text());
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'ping', 'content_block_start']);
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(new Set(names.slice(3, -3))).toEqual(new Set(['content_block_delta']));
    expect(events[0]!.data.message.usage.input_tokens).toBe(count.input_tokens);
    const text = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('');
    expect(text).toBe(tokenizer.decode(GOLDEN_IDS, { skip_special_tokens: true }));
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { input_tokens: count.input_tokens, output_tokens: GOLDEN_IDS.length } });
  });

  it('a stop sequence spanning two tokens ends the stream, and none of it is ever sent', async () => {
    const p = pieces();
    // The end of one token's text and the start of the next.
    const at = p.findIndex((piece, i) => i > 0 && piece.length >= 2 && (p[i + 1]?.length ?? 0) >= 2);
    const stop = p[at]!.slice(-2) + p[at + 1]!.slice(0, 2);
    const full = p.join('');
    const expected = full.slice(0, full.indexOf(stop));
    const events = parseSse(await (await post(body({ stop_sequences: ['never-appears', stop] }))).text());
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text as string);
    expect(deltas.join('')).toBe(expected);
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: 'stop_sequence', stop_sequence: stop }, usage: { output_tokens: at + 2 } });

    const whole = await (await post(body({ stream: false, stop_sequences: [stop] }))).json();
    expect(whole).toMatchObject({ content: [{ type: 'text', text: expected }], stop_reason: 'stop_sequence', stop_sequence: stop });
  });

  it('a client that hangs up mid-stream stops its generation; the worker serves the next request', async () => {
    const stats = () => server.service.counters.of(CHAT_MODEL);
    const cancelledBefore = stats().cancelled;
    const MAX = 3000;
    const controller = new AbortController();
    const res = await post(body({ max_tokens: MAX }), controller.signal);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_block_delta')) seen += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await until(() => stats().active === 0, 'the aborted generation to stop');
    expect(stats().cancelled).toBe(cancelledBefore + 1);
    expect(stats().lastCancelledOutputTokens).toBeLessThan(MAX / 10);

    const next = await (await post(body({ stream: false, max_tokens: 1 }))).json();
    expect(next.usage.output_tokens).toBe(1);
  });

  it('count_tokens answers while a long generation holds the model worker', async () => {
    const stats = () => server.service.counters.of(CHAT_MODEL);
    const controller = new AbortController();
    const pending = post(body({ stream: false, max_tokens: 3000 }), controller.signal).catch((e: Error) => e);
    await until(() => stats().active === 1, 'the generation to start');
    const count = await fetch(`${server.url}/v1/messages/count_tokens`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'How many tokens?' }] }),
    });
    expect(count.status).toBe(200);
    expect((await count.json()).input_tokens).toBeGreaterThan(0);
    expect(stats().active).toBe(1); // the generation is still running: counting did not queue behind it
    controller.abort();
    await pending;
    await until(() => stats().active === 0, 'the aborted generation to stop');
  });

  it('a client that hangs up on a non-streaming request stops its generation too', async () => {
    const stats = () => server.service.counters.of(CHAT_MODEL);
    const cancelledBefore = stats().cancelled;
    const controller = new AbortController();
    const pending = post(body({ stream: false, max_tokens: 3000 }), controller.signal).catch((e: Error) => e);
    await until(() => stats().active === 1, 'the generation to start');
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await until(() => stats().active === 0, 'the aborted generation to stop');
    expect(stats().cancelled).toBe(cancelledBefore + 1);
    expect(stats().lastCancelledOutputTokens).toBeLessThan(300);
  });
});

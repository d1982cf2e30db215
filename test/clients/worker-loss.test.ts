/**
 * Losing a worker costs exactly the batch it was decoding: requests that were queued inside it but
 * never began run again on the replacement, and the lost worker is counted once. A deadline frees
 * a request stuck behind another's long prefill without killing the worker that runs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseSse } from '../helpers/inject.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

/** Poll interval while waiting for a stream to reach a point. */
const POLL_MS = 20;
let server: RealServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${server!.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 5, temperature: 0, messages: [{ role: 'user', content: 'Hello' }], ...body }),
    signal,
  });
const say = (content: string) => ({ messages: [{ role: 'user', content }] });

/** Starts a long stream and resolves once it is decoding (its first delta arrived), with the rest of its transcript. */
async function decodingStream(maxTokens: number): Promise<Promise<string>> {
  const res = await post({ ...say('Tell me a long story'), max_tokens: maxTokens, stream: true });
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('content_block_delta')) seen += new TextDecoder().decode((await reader.read()).value);
  return (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return seen;
      seen += new TextDecoder().decode(value);
    }
  })();
}

const restarts = async () => {
  const text = await (await fetch(`${server!.url}/metrics`)).text();
  return Number(/worker_restarts_total\{model="tiny-qwen3-random",reason="crashed"\} (\d+)/.exec(text)?.[1] ?? 0);
};

describe('a worker lost under a batch', () => {
  it('fails the batch it was decoding, runs again what never began, and counts the worker once', async () => {
    server = await startRealServer({ faults: true, generationBatchSize: 8, only: [CHAT_MODEL] });
    const decoding = await decodingStream(3000);
    // Sent together: the crash is committed before the worker reads the next two tasks.
    const [crashed, queuedA, queuedB] = await Promise.all([post(say('[fault:crash] Hello')), post(say('first queued')), post(say('second queued'))]);
    expect(crashed.status).toBe(500);
    const events = parseSse(await decoding);
    console.log(crashed.status, queuedA.status, queuedB.status, events.length, events.filter((e) => e.event === 'message_start').length, server.service.status().models[0]!.workerRestarts, events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.text).join('').length);
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { error: { type: 'api_error' } } });
    for (const queued of [queuedA, queuedB]) {
      expect(queued.status).toBe(200);
      expect((await queued.json()).usage.output_tokens).toBe(5);
    }
    expect(server.service.status().models[0]!.workerRestarts).toBe(1);
    expect(await restarts()).toBe(1);
  });
});

describe('a deadline behind another request’s long prefill', () => {
  const TIMEOUT_MS = 4_000;
  /** How long the waiting request decodes before the long prefill arrives. */
  const HEAD_START_MS = 2_000;
  /** Longer than the waiting request's deadline plus the 2 s hang grace, shorter than the slow request's own. */
  const SLOW_PREFILL_MS = 5_500;

  it('answers the waiting request 504 without killing the worker that runs the long prefill', async () => {
    server = await startRealServer({ faults: true, generationBatchSize: 8, requestTimeoutMs: TIMEOUT_MS, only: [CHAT_MODEL] });
    const waiting = await decodingStream(3000);
    await new Promise((r) => setTimeout(r, HEAD_START_MS));
    const slow = await post({ ...say(`[fault:slow-prefill:${SLOW_PREFILL_MS}] Hello`), max_tokens: 3000 });
    expect(slow.status).toBe(504);
    expect(parseSse(await waiting).at(-1)).toMatchObject({ event: 'error', data: { error: { type: 'timeout_error' } } });
    expect(server.service.status().models[0]!.workerRestarts).toBe(0);
    expect((await post({})).status).toBe(200);
  });
});

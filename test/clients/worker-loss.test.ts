/**
 * Losing a worker costs exactly the batch it was decoding: requests that were queued inside it but
 * never began run again on the replacement, and the lost worker is counted once. A deadline frees
 * a request stuck behind another's long prefill without killing the worker that runs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseSse } from '../helpers/inject.js';
import { CHAT_MODEL, ENGINE } from '../helpers/paths.js';
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

/**
 * Starts a stream and resolves once `until` shows in its transcript, with the promise of the rest.
 * `message_start` goes out when the worker has accepted the prompt, before its prefill.
 */
async function streamUntil(content: string, until: string): Promise<{ rest: Promise<string> }> {
  const res = await post({ ...say(content), max_tokens: 3000, stream: true });
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes(until)) seen += new TextDecoder().decode((await reader.read()).value);
  // Wrapped: an async function returning a promise would wait for it.
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return seen;
      seen += new TextDecoder().decode(value);
    }
  })();
  return { rest };
}

const restarts = async () => {
  const text = await (await fetch(`${server!.url}/metrics`)).text();
  return Number(new RegExp(String.raw`worker_restarts_total\{model="${CHAT_MODEL}",reason="crashed"\} (\d+)`).exec(text)?.[1] ?? 0);
};

describe('a worker lost under a batch', () => {
  /** Holds the first request in its prefill while the others reach the worker. */
  const SLOW_PREFILL_MS = 1_500;

  // On llama.cpp the worker thread's exit under a decode in flight ends the model's process (its
  // native callback throws into the torn-down thread): the server survives it, since GGUF models run
  // in a child process of their own (src/pool/process-pool.ts), and the outcome is the same.
  it('fails the batch it was decoding, runs again what never began, and counts the worker once', async () => {
    server = await startRealServer({ faults: true, generationBatchSize: 8, only: [CHAT_MODEL] });
    // In flight in the worker (its prefill under way) when the crash comes.
    const inFlight = await streamUntil(`[fault:slow-prefill:${SLOW_PREFILL_MS}] Tell me a long story`, 'message_start');
    // These reach the worker during that prefill; the crash is committed before it reads the last two.
    const [crashed, queuedA, queuedB] = await Promise.all([post(say('[fault:crash] Hello')), post(say('first queued')), post(say('second queued'))]);
    expect(crashed.status).toBe(500);
    const events = parseSse(await inFlight.rest);
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

  // Not on llama.cpp: its sequences share one batch, so the fault (which blocks the worker's thread
  // inside one sequence's prefill) holds the waiting sequence's step too; the watchdog then rightly
  // finds it stuck in a forward pass and kills the worker (and with it the model's process), where
  // this test asks that no worker be lost.
  it.skipIf(ENGINE.prefillHoldsOthers)('answers the waiting request 504 without killing the worker that runs the long prefill', async () => {
    server = await startRealServer({ faults: true, generationBatchSize: 8, requestTimeoutMs: TIMEOUT_MS, only: [CHAT_MODEL] });
    const waiting = await streamUntil('Tell me a long story', 'content_block_delta');
    await new Promise((r) => setTimeout(r, HEAD_START_MS));
    const slow = await post({ ...say(`[fault:slow-prefill:${SLOW_PREFILL_MS}] Hello`), max_tokens: 3000 });
    expect(slow.status).toBe(504);
    expect(parseSse(await waiting.rest).at(-1)).toMatchObject({ event: 'error', data: { error: { type: 'timeout_error' } } });
    expect(server.service.status().models[0]!.workerRestarts).toBe(0);
    expect((await post({})).status).toBe(200);
  });
});

/**
 * Faults, limits and operations on real workers: a worker that crashes or hangs fails only its own
 * request and is replaced (readiness says so meanwhile); a full queue answers 529 at once; health,
 * readiness and Prometheus metrics report what happened.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const POLL_MS = 20;
const TIMEOUT_MS = 1_500;
let server: RealServer;
beforeAll(async () => {
  // One generation per worker and no queue: a second request finds the model full.
  server = await startRealServer({ faults: true, requestTimeoutMs: TIMEOUT_MS, maxQueue: 0, generationBatchSize: 1, only: [CHAT_MODEL] });
});
afterAll(() => server?.close());

/** A request whose prompt makes the worker commit `fault` (the test hooks' fault marker, see faultByMarker). */
const withFault = (fault: string) => ({ messages: [{ role: 'user', content: `[fault:${fault}] Hello` }] });

const chat = (extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${server.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 3, temperature: 0, messages: [{ role: 'user', content: 'Hello' }], ...extra }),
    signal,
  });

async function untilReady(): Promise<void> {
  for (let waited = 0; ; waited += POLL_MS) {
    const res = await fetch(`${server.url}/ready`);
    if (res.status === 200) return;
    if (waited > 60_000) throw new Error('never became ready again');
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

const metric = async (pattern: RegExp) => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 0);
};

describe('resilience (real workers)', () => {
  it('reports ready, and serves', async () => {
    const ready = await fetch(`${server.url}/ready`);
    expect(ready.status).toBe(200);
    expect((await ready.json()).models).toEqual([expect.objectContaining({ id: CHAT_MODEL, ready: true, workers: 1, workerRestarts: 0 })]);
    expect((await chat()).status).toBe(200);
  });

  it('a worker that crashes fails only its request (500 api_error), is replaced, and the next request succeeds', async () => {
    const res = await chat(withFault('crash'));
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(body.error.message).not.toMatch(/\/|exit code|at /);
    await untilReady();
    expect((await chat()).status).toBe(200);
    expect(await metric(new RegExp(String.raw`worker_restarts_total\{model="${CHAT_MODEL}",reason="crashed"\} (\d+)`))).toBe(1);
  });

  it('a worker that hangs gets its request a 504 timeout_error, is killed and replaced', async () => {
    const res = await chat(withFault('hang'));
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'timeout_error', message: expect.stringMatching(/restarted/) } });
    await untilReady();
    expect((await chat()).status).toBe(200);
    expect(await metric(new RegExp(String.raw`worker_restarts_total\{model="${CHAT_MODEL}",reason="hung"\} (\d+)`))).toBe(1);
  });

  it('an exception in a worker is a 500 and costs no restart', async () => {
    const before = server.service.status().models[0]!.workerRestarts;
    expect((await chat(withFault('throw'))).status).toBe(500);
    expect(server.service.status().models[0]!.workerRestarts).toBe(before);
    expect((await chat()).status).toBe(200);
  });

  it('a generation past the deadline is stopped: 504, and the worker is free at once', async () => {
    const res = await chat({ max_tokens: 4000 });
    expect(res.status).toBe(504);
    expect((await res.json()).error.type).toBe('timeout_error');
    expect(server.service.counters.of(CHAT_MODEL).lastCancelledOutputTokens).toBeLessThan(4000);
    expect((await chat()).status).toBe(200);
  });

  it('with the queue full, a request is refused at once with 529 overloaded_error and retry-after', async () => {
    const controller = new AbortController();
    const long = chat({ max_tokens: 4000 }, controller.signal).catch((e: Error) => e);
    for (let waited = 0; server.service.counters.of(CHAT_MODEL).active === 0; waited += POLL_MS) await new Promise((r) => setTimeout(r, POLL_MS));
    const refused = await chat();
    expect(refused.status).toBe(529);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    controller.abort();
    await long;
  });

  it('exposes Prometheus metrics for requests, tokens and time to first token', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/http_requests_total\{method="POST",route="\/v1\/messages",status="200"\} \d+/);
    expect(text).toMatch(/http_requests_total\{method="POST",route="\/v1\/messages",status="529"\} 1/);
    expect(text).toMatch(new RegExp(String.raw`model_tokens_total\{model="${CHAT_MODEL}",direction="output"\} \d+`));
    expect(text).toMatch(new RegExp(String.raw`generation_time_to_first_token_seconds_count\{model="${CHAT_MODEL}"\} \d+`));
    expect(text).toMatch(new RegExp(String.raw`model_queue_depth\{model="${CHAT_MODEL}"\} 0`));
    expect(text).toMatch(new RegExp(String.raw`model_ready\{model="${CHAT_MODEL}"\} 1`));
  });
});

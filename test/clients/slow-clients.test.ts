/**
 * Slow clients against the server process (scripts/fuzz/slow.ts): 20 connections that send their
 * headers one byte a second and 20 that send their body one byte a second, while ordinary requests
 * go on. Ordinary requests are answered within 1 s; every slow-header connection is closed within
 * HEADERS_TIMEOUT_MS (+ slack); every slow-body one is answered 408 in an envelope with
 * Connection: close within BODY_TIMEOUT_MS (+ slack); idle kept-alive connections are closed within
 * KEEP_ALIVE_TIMEOUT_MS (+ slack).
 *
 * The test gives the server short timeouts through those settings. Until the server accepts them
 * (they appear in src/config.ts's usage) it skips, saying which are missing: with Node's defaults a
 * slow client holds its connection for a minute or more, longer than a test should wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY } from '../../scripts/fuzz/cases.js';
import { serverSettings, startChildServer, type ChildServer } from '../../scripts/fuzz/server.js';
import { formatSlowSummary, runSlowClients, slowClientSettings } from '../../scripts/fuzz/slow.js';
import { SERVED_MODELS_DIR } from '../helpers/paths.js';

const SLOW = 20;
const TIMEOUTS = { HEADERS_TIMEOUT_MS: 2_000, BODY_TIMEOUT_MS: 3_000, KEEP_ALIVE_TIMEOUT_MS: 2_000 };

const settings = slowClientSettings(await serverSettings(), TIMEOUTS);
const SKIP = settings.missing.length > 0
  ? `SKIPPED: the server does not accept ${settings.missing.join(', ')} yet (src/config.ts); with Node's defaults slow clients hold connections for minutes`
  : '';
if (SKIP) console.warn(`[slow-clients] ${SKIP}`);

let server: ChildServer;
beforeAll(async () => {
  if (!SKIP) // A later --models-dir wins: the GGUF test model's folder under TEST_CHAT_ENGINE=llama (its ordinary requests name FUZZ_CHAT_MODEL).
  if (!SKIP) server = await startChildServer({ args: ['--api-key', API_KEY, '--models-dir', SERVED_MODELS_DIR], env: settings.env });
});
afterAll(async () => {
  await server?.stop();
});

describe(`slow clients (${SLOW} slow-header + ${SLOW} slow-body connections)${SKIP ? ` — ${SKIP}` : ''}`, () => {
  it('ordinary requests are served meanwhile; every slow connection is closed within its timeout, slow bodies with a 408', async (ctx) => {
    if (SKIP) ctx.skip(SKIP);
    const summary = await runSlowClients({ port: server.port, slowHeaders: SLOW, slowBodies: SLOW, ...settings.timeouts });
    console.log(formatSlowSummary(summary));
    expect(summary.violations.map((v) => `${v.count} × ${v.what}${v.example ? ` (e.g. ${v.example})` : ''}`)).toEqual([]);
    const body = summary.kinds.find((k) => k.kind === 'slow body')!;
    expect(body.answered408).toBe(SLOW);
    expect(server.alive()).toBe(true);
  });
});

/**
 * The seeded fuzzer (scripts/fuzz) against the real server process on the bundled models, over raw
 * sockets: first the hand-written cases of scripts/fuzz/known.ts (one test each), then FUZZ_RUNS
 * generated cases per endpoint. Every answer must be < 500, errors in the right envelope (Anthropic,
 * OpenAI, or the neutral one with Connection: close for malformed HTTP), no internals in bodies, and
 * connections closed only when announced. The seed is printed; FUZZ_SEED=N replays a run, and
 * `FUZZ_SEED=N FUZZ_CASE=endpoint:i npm run fuzz` one case.
 *
 * test/http/fuzz.test.ts stays: it drives buildApp through app.inject with a fake inference service
 * (thousands of bodies in a second, fast-check shrinking); this file covers what inject cannot see:
 * the HTTP parser, Node's and Fastify's own refusals, connections, streams and real workers.
 */
import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, ENDPOINTS } from '../../scripts/fuzz/cases.js';
import { formatSummary, runFuzz, type FuzzSummary } from '../../scripts/fuzz/harness.js';
import { knownCases } from '../../scripts/fuzz/known.js';
import { startChildServer, type ChildServer } from '../../scripts/fuzz/server.js';

/** Generated cases per endpoint: small, so the file takes well under 30 s on two shared cores. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = Number(process.env.FUZZ_SEED ?? randomInt(1, 2 ** 31));
/** A bound on each endpoint's run whatever the cases do. */
const ENDPOINT_MAX_MS = 15_000;

let server: ChildServer;
const summaries: FuzzSummary[] = [];
beforeAll(async () => {
  console.log(`[fuzz-server] seed ${SEED} (replay: FUZZ_SEED=${SEED}), ${RUNS} cases per endpoint`);
  server = await startChildServer({ args: ['--api-key', API_KEY] });
});
afterAll(async () => {
  await server?.stop();
});

/** One line per violation class, with a case to replay. */
const violations = (s: FuzzSummary) =>
  s.violations.map((v) => `${v.count} × ${v.check}: ${v.detail} — e.g. ${v.examples[0]!.case} (${v.examples[0]!.label}): ${v.examples[0]!.request.slice(0, 160)} → ${v.examples[0]!.response.slice(0, 160)}`);

describe('fuzzing the server process over sockets', () => {
  describe('known cases', () => {
    it.each(knownCases().map((c) => [c.label, c] as const))('%s', async (_label, c) => {
      const summary = await runFuzz({ port: server.port, seed: SEED, runs: 0, cases: [c], concurrency: 1, serverAlive: server.alive });
      expect(violations(summary)).toEqual([]);
    });
  });

  describe(`seeded cases (seed ${SEED})`, () => {
    it.each(ENDPOINTS)('%s', async (endpoint) => {
      const summary = await runFuzz({ port: server.port, seed: SEED, runs: RUNS, endpoints: [endpoint], concurrency: 2, maxMs: ENDPOINT_MAX_MS, serverAlive: server.alive });
      summaries.push(summary);
      console.log(formatSummary(summary));
      expect(violations(summary), `FUZZ_SEED=${SEED}`).toEqual([]);
    });
  });

  it('the server is alive and ready afterwards', async () => {
    expect(server.alive()).toBe(true);
    const ready = await fetch(`${server.url}/ready`);
    expect(ready.status).toBe(200);
    // Every endpoint was reached: the generated cases are not all refused at the door.
    for (const s of summaries) {
      const ok = Object.values(s.outcomes).reduce((n, row) => n + (row['200'] ?? 0), 0);
      expect(ok, `${s.endpoints.join(',')}: ${JSON.stringify(s.outcomes)}`).toBeGreaterThan(0);
    }
  });
});

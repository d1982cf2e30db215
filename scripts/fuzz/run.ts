/**
 * The fuzzer from the command line, against the real server (src/main.ts as a child process on the
 * bundled models) or one already listening. Writes bench/results/fuzz.md and fuzz.json (and
 * slow-clients.* with --slow).
 *
 *   npm run fuzz                               10,000 cases per endpoint, a random seed (printed)
 *   FUZZ_SEED=123 npm run fuzz                 replay a run
 *   FUZZ_SEED=123 FUZZ_CASE=raw:17 npm run fuzz  replay one case, printing request and answers
 *   FUZZ_RUNS=500 npm run fuzz                 fewer cases per endpoint
 *   npm run fuzz -- --slow 300                 300 slow-header + 300 slow-body connections (not the fuzzer)
 *   npm run fuzz -- --url http://127.0.0.1:8080 --endpoints raw,messages --concurrency 4 --minutes 30
 *
 * Exit status 1 when any violation was found.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { writeResults, type Table } from '../bench/report.js';
import { API_KEY, ENDPOINTS, generateCase, type Endpoint } from './cases.js';
import { formatSummary, HANG_TIMEOUT_MS, runFuzz, type FuzzSummary } from './harness.js';
import { startChildServer, serverSettings, type ChildServer } from './server.js';
import { formatSlowSummary, runSlowClients, slowClientSettings, type SlowSummary } from './slow.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    case: { type: 'string' },
    endpoints: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    minutes: { type: 'string', default: '60' },
    url: { type: 'string' },
    slow: { type: 'string' },
    'slow-seconds': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(`npm run fuzz [-- options]
  --runs N            cases per endpoint (FUZZ_RUNS; default 10,000)
  --seed N            the seed (FUZZ_SEED; default random, printed)
  --case E:I,...      replay these cases only, printing requests and answers (FUZZ_CASE)
  --endpoints A,B     endpoints to fuzz (default all: ${ENDPOINTS.join(', ')})
  --concurrency N     connections working at once (default 4)
  --minutes N         stop starting cases after this long (default 60)
  --url URL           fuzz a server already listening instead of starting src/main.ts
  --slow N            N slow-header + N slow-body connections instead of the fuzzer
  --slow-seconds N    how long to watch the slow connections
Writes bench/results/fuzz.md and fuzz.json (slow-clients.* with --slow); exit status 1 on any violation.
`);
  process.exit(0);
}

const seed = Number(values.seed ?? process.env.FUZZ_SEED ?? randomInt(1, 2 ** 31));
const runs = Number(values.runs ?? process.env.FUZZ_RUNS ?? 10_000);
const only = (values.case ?? process.env.FUZZ_CASE)?.split(',').filter(Boolean);
const endpoints = (values.endpoints?.split(',') ?? ENDPOINTS) as Endpoint[];
for (const e of endpoints) if (!ENDPOINTS.includes(e)) throw new Error(`unknown endpoint ${e} (one of ${ENDPOINTS.join(', ')})`);
const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  let server: ChildServer | undefined;
  let port: number;
  const slow = values.slow !== undefined ? Number(values.slow) : undefined;
  if (values.url) {
    port = Number(new URL(values.url).port);
  } else {
    const env: Record<string, string> = {};
    if (slow !== undefined) {
      const settings = slowClientSettings(await serverSettings());
      Object.assign(env, settings.env);
      say(settings.note);
    }
    say('starting the server (src/main.ts, bundled models)...');
    server = await startChildServer({ args: ['--api-key', API_KEY], env });
    port = server.port;
    say(`server pid ${server.pid} on ${server.url}`);
  }
  try {
    if (slow !== undefined) return await slowRun(port, slow);
    if (only) return await replay(port);
    say(`fuzz: seed ${seed} (replay with FUZZ_SEED=${seed}), ${runs} cases per endpoint over ${endpoints.join(', ')}`);
    const summary = await runFuzz({ port, seed, runs, endpoints, concurrency: Number(values.concurrency), maxMs: Number(values.minutes) * 60_000, serverAlive: server?.alive, log: say });
    write(summary);
    return summary.violationCount > 0 ? 1 : 0;
  } finally {
    await server?.stop();
  }
}

async function replay(port: number): Promise<number> {
  for (const id of only!) {
    const [endpoint, index] = id.split(':');
    const c = generateCase(seed, endpoint as Endpoint, Number(index));
    say(`case ${c.id} (seed ${seed}): ${c.label}`);
    say(`request (${c.bytes.length} bytes): ${JSON.stringify(c.bytes.subarray(0, 2000).toString('latin1'))}${c.bytes.length > 2000 ? '…' : ''}`);
  }
  const summary = await runFuzz({ port, seed, runs: 0, only, concurrency: 1, log: say, verbose: true });
  process.stdout.write(formatSummary(summary) + '\n');
  for (const v of summary.violations) say(`violation: ${v.check}: ${v.detail}\n  response: ${v.examples[0]!.response}`);
  return summary.violationCount > 0 ? 1 : 0;
}

function write(s: FuzzSummary): void {
  const statuses = [...new Set(Object.values(s.outcomes).flatMap((row) => Object.keys(row)))].sort();
  const tables: Table[] = [
    { title: 'Outcomes by endpoint', columns: ['endpoint', ...statuses], rows: Object.entries(s.outcomes).map(([e, row]) => [e, ...statuses.map((st) => row[st] ?? 0)]) },
    {
      title: 'Violations by class',
      columns: ['#', 'check', 'detail', 'count', 'endpoints', 'example case', 'example request'],
      rows: s.violations.map((v, i) => [
        i + 1, v.check, cell(v.detail), v.count, Object.entries(v.endpoints).map(([e, n]) => `${e} ${n}`).join(', '),
        `${v.examples[0]!.case} (${cell(v.examples[0]!.label.slice(0, 80))})`, cell(v.examples[0]!.request.slice(0, 200)),
      ]),
    },
  ];
  writeResults('fuzz', s, tables, [
    `Seed ${s.seed}: ${s.cases} cases (${s.runs} per endpoint${s.stoppedEarly ? ', stopped early at the time limit' : ''}) in ${(s.durationMs / 1000).toFixed(1)} s; ` +
      `**${s.violationCount} violations in ${s.violations.length} classes**. Replay: \`FUZZ_SEED=${s.seed} npm run fuzz\`; one case: \`FUZZ_SEED=${s.seed} FUZZ_CASE=raw:17 npm run fuzz\`.`,
    'Checks: status < 500; 4xx bodies in the envelope of the dialect (Anthropic on /v1/messages paths or with anthropic-version / vendor-version / x-api-key headers, OpenAI otherwise, the neutral one with Connection: close for malformed HTTP); ' +
      'no stack traces or paths; a request asking Connection: close is answered with it; a server that closes a connection announced it; a second request on a kept-alive connection is answered; GET /health on a new connection answers within 2 s throughout. ' +
      `An answer later than its case's timeout (10 s for raw cases, 30 s for others) is counted "slow"; no answer within ${HANG_TIMEOUT_MS / 1000} s is a timeout violation.`,
  ]);
}

async function slowRun(port: number, n: number): Promise<number> {
  const settings = slowClientSettings(await serverSettings());
  const summary = await runSlowClients({ port, slowHeaders: n, slowBodies: n, ...settings.timeouts, log: say, observeMs: values['slow-seconds'] ? Number(values['slow-seconds']) * 1000 : undefined });
  writeSlow(summary, settings.note);
  return summary.violations.length > 0 ? 1 : 0;
}

function writeSlow(s: SlowSummary, note: string): void {
  process.stderr.write(formatSlowSummary(s) + '\n');
  writeResults('slow-clients', s, [
    { title: 'Slow connections', columns: ['kind', 'connections', 'closed by server', 'median close (ms)', 'max close (ms)', 'answered 408', 'answers (status: count)'], rows: s.kinds.map((k) => [k.kind, k.connections, k.closed, k.medianCloseMs, k.maxCloseMs, k.answered408, JSON.stringify(k.statuses)]) },
    { title: 'Normal requests meanwhile', columns: ['requests', 'answered within 1 s', 'p50 ms', 'p99 ms', 'max ms', 'failures'], rows: [[s.normal.requests, s.normal.withinBudget, s.normal.p50, s.normal.p99, s.normal.max, s.normal.failures]] },
    { title: 'Violations', columns: ['violation', 'count'], rows: s.violations.map((v) => [v.what, v.count]) },
  ], [note]);
}

const cell = (t: string) => t.replace(/\|/g, '\\|').replace(/\n/g, ' ');

main().then(
  (code) => process.exit(code),
  (error) => {
    say(`fuzz: ${(error as Error).stack ?? error}`);
    process.exit(2);
  },
);

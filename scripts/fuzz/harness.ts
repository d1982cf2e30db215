/**
 * The seeded fuzzer: sends generated cases (scripts/fuzz/cases.ts) to a listening server over raw
 * sockets, a few keep-alive connections at a time, checks every answer (scripts/fuzz/checks.ts)
 * and the connection around it, and counts outcomes by endpoint and violations by class.
 *
 * Connection rules checked here, beyond each response:
 * - a connection the client did not ask to close, after a response without `Connection: close`,
 *   is used for the next case; if the server closed it, the previous case is charged with an
 *   unannounced close (the next case is retried on a new connection);
 * - on a connection of its own (malformed HTTP), a response without `Connection: close` is followed
 *   by a second request, which must be answered;
 * - every few cases a new connection asks GET /health, which must answer within HEALTH_TIMEOUT_MS.
 *
 * (One file of ~400 lines: runFuzz's workers share the kept connection, the previous case's answer
 * and the tally through closures, and those rules read best beside the code that applies them.)
 */
import { ENDPOINTS, generateCase, type Endpoint, type ExpectedResponse, type FuzzCase } from './cases.js';
import { checkResponse, neutralOnly, type Violation } from './checks.js';
import { announcesClose, RawConnection, type RawResponse } from './raw-client.js';

/** A fresh connection must answer GET /health within this, whatever the fuzzer is doing elsewhere. */
export const HEALTH_TIMEOUT_MS = 2_000;
const HEALTH_EVERY = 25;
/** How long a follow-up request on the same connection may take (the server is idle for it). */
const FOLLOW_UP_TIMEOUT_MS = 3_000;
/** After `Connection: close` was announced or asked, how long the server has to close. */
const CLOSE_TIMEOUT_MS = 2_000;
/** After the client half-closes (FIN), how long the server has to answer or close. */
const FIN_TIMEOUT_MS = 5_000;
const EXAMPLES_PER_CLASS = 3;
/**
 * A case's own timeout (FuzzCase.timeoutMs) marks an answer as slow; only past this is the server
 * taken to have hung (a timeout violation). A request that reaches the model can legitimately wait
 * behind another case's long work on a loaded machine: a worker prefills a prompt whole before it
 * admits the next request (src/engines/onnx/decode/scheduler.ts), and the fuzzer's 1,000-tool prompts are
 * ~29,000 tokens, 10 s to prefill alone on two cores and several times that under load. Slow answers
 * are counted per endpoint ("slow"); what matters here is that every request is answered.
 */
export const HANG_TIMEOUT_MS = 180_000;

export interface FuzzOptions {
  port: number;
  seed: number;
  /** Cases per endpoint. */
  runs: number;
  endpoints?: readonly Endpoint[];
  /** Only these cases ("endpoint:index"), e.g. to replay one. */
  only?: string[];
  /** Hand-written cases to run first (scripts/fuzz/known.ts). */
  cases?: FuzzCase[];
  /** Connections working at once. */
  concurrency?: number;
  /** Stop starting cases after this long (the summary says so). */
  maxMs?: number;
  /** False once the server process has exited: checked after every case. */
  serverAlive?: () => boolean;
  log?: (line: string) => void;
  /** Print every case's request and answers (replays). */
  verbose?: boolean;
  /** How long an answer may take before the server is taken to have hung (default HANG_TIMEOUT_MS). */
  hangTimeoutMs?: number;
}

export interface ViolationExample {
  case: string;
  label: string;
  request: string;
  response: string;
}

export interface ViolationClass {
  check: string;
  detail: string;
  count: number;
  endpoints: Record<string, number>;
  examples: ViolationExample[];
}

export interface FuzzSummary {
  seed: number;
  runs: number;
  endpoints: Endpoint[];
  cases: number;
  durationMs: number;
  stoppedEarly: boolean;
  /** endpoint -> outcome ("200", "400", "no answer", "timeout", "aborted") -> count. */
  outcomes: Record<string, Record<string, number>>;
  violations: ViolationClass[];
  violationCount: number;
  replay: string;
}

const escape = (bytes: Buffer, max: number) => {
  const text = JSON.stringify(bytes.subarray(0, max).toString('latin1'));
  return bytes.length > max ? `${text.slice(0, -1)}…" (${bytes.length} bytes)` : text;
};

const showResponse = (res: RawResponse | undefined, note = '') => {
  if (!res) return note;
  const head = [`HTTP ${res.status}`, ...res.headers.filter(([n]) => !['date', 'keep-alive'].includes(n)).map(([n, v]) => `${n}: ${v}`)].join(' | ');
  return `${head} || ${res.body.subarray(0, 300).toString('utf8')}${res.body.length > 300 ? '…' : ''}${note ? ` (${note})` : ''}`;
};

class Tally {
  readonly outcomes: Record<string, Record<string, number>> = {};
  readonly classes = new Map<string, ViolationClass>();
  count = 0;

  outcome(endpoint: string, key: string): void {
    const row = (this.outcomes[endpoint] ??= {});
    row[key] = (row[key] ?? 0) + 1;
  }

  violation(c: Pick<FuzzCase, 'id' | 'endpoint' | 'label' | 'bytes'>, v: Violation, response: string): void {
    this.count++;
    const key = `${v.check}\u0000${v.detail}`;
    let cls = this.classes.get(key);
    if (!cls) this.classes.set(key, (cls = { check: v.check, detail: v.detail, count: 0, endpoints: {}, examples: [] }));
    cls.count++;
    cls.endpoints[c.endpoint] = (cls.endpoints[c.endpoint] ?? 0) + 1;
    // A few examples, and the first from each endpoint the class reaches.
    const newEndpoint = !cls.examples.some((e) => e.case.startsWith(`${c.endpoint}:`));
    if (cls.examples.length < EXAMPLES_PER_CLASS || newEndpoint) cls.examples.push({ case: c.id, label: c.label, request: escape(c.bytes, 240), response });
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runFuzz(options: FuzzOptions): Promise<FuzzSummary> {
  const { port, seed, runs, concurrency = 4, maxMs = Infinity, log = () => {}, hangTimeoutMs = HANG_TIMEOUT_MS } = options;
  const endpoints = [...(options.endpoints ?? ENDPOINTS)];
  const tally = new Tally();
  const started = performance.now();
  let stoppedEarly = false;

  // Interleave endpoints so that every endpoint advances together.
  const generated: Array<[Endpoint, number]> = options.only
    ? options.only.map((id) => {
        const [endpoint, index] = id.split(':');
        if (!ENDPOINTS.includes(endpoint as Endpoint)) throw new Error(`unknown endpoint in case id ${id}`);
        return [endpoint as Endpoint, Number(index)];
      })
    : Array.from({ length: runs }, (_, i) => endpoints.map((e): [Endpoint, number] => [e, i])).flat();
  const queue: Array<() => FuzzCase> = [...(options.cases ?? []).map((c) => () => c), ...generated.map(([e, i]) => () => generateCase(seed, e, i))];
  let next = 0;
  let done = 0;
  let lastReport = performance.now();

  const health = async (after: FuzzCase) => {
    const t0 = performance.now();
    let conn: RawConnection | undefined;
    try {
      conn = await RawConnection.open(port, '127.0.0.1', HEALTH_TIMEOUT_MS);
      await conn.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const out = await conn.read(Math.max(1, HEALTH_TIMEOUT_MS - (performance.now() - t0)));
      if (out.kind !== 'response' || out.response.status !== 200) {
        tally.violation({ ...after, endpoint: after.endpoint }, { check: 'health', detail: `GET /health on a new connection: ${out.kind === 'response' ? out.response.status : out.kind} within ${HEALTH_TIMEOUT_MS} ms` }, `after case ${after.id}`);
      }
    } catch (error) {
      tally.violation(after, { check: 'health', detail: `GET /health: ${(error as Error).message}` }, `after case ${after.id}`);
    } finally {
      conn?.destroy();
    }
  };

  /** Reads the answers a case is owed; reports what happened. */
  async function readAnswers(conn: RawConnection, c: FuzzCase, expected: ExpectedResponse[]) {
    const responses: RawResponse[] = [];
    let failure: { kind: 'closed' | 'timeout'; partial: Buffer } | undefined;
    let slow = false;
    for (let k = 0; k < expected.length; k++) {
      let out = await conn.read(c.timeoutMs);
      if (out.kind === 'timeout') {
        slow = true;
        out = await conn.read(Math.max(0, hangTimeoutMs - c.timeoutMs));
      }
      if (out.kind !== 'response') {
        failure = out;
        break;
      }
      responses.push(out.response);
      if (announcesClose(out.response)) break;
    }
    if (slow) tally.outcome(c.endpoint, 'slow');
    return { responses, failure };
  }

  async function worker(w: number): Promise<void> {
    let keep: RawConnection | undefined;
    /** The case whose answer was last read on `keep`, and that answer. */
    let prev: { c: FuzzCase; res: RawResponse } | undefined;
    let sinceHealth = 0;
    let lastCase: FuzzCase | undefined;
    while (next < queue.length) {
      if (performance.now() - started > maxMs) {
        stoppedEarly = true;
        break;
      }
      const c = queue[next++]!();
      lastCase = c;
      await runCase(c);
      done++;
      if (options.verbose) log(`${c.id} ${c.label}`);
      if (++sinceHealth >= HEALTH_EVERY) {
        sinceHealth = 0;
        await health(c);
      }
      if (options.serverAlive && !options.serverAlive()) {
        tally.violation(c, { check: 'server exited', detail: 'the server process exited' }, `during or after ${c.id}`);
        next = queue.length;
      }
      if (w === 0 && performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        log(`fuzz: ${done}/${queue.length} cases, ${tally.count} violations, ${Math.round((performance.now() - started) / 1000)} s`);
      }
    }
    // Whatever the last cases did (aborts, malformed HTTP), the server still answers.
    if (lastCase) await health(lastCase);
    // The last kept connection owes one more answer: the second-request check for its last case.
    if (keep && prev) {
      if (keep.closed) chargeClose();
      else await followUp(keep, prev.c, prev.res);
    }
    keep?.destroy();

    async function runCase(c: FuzzCase, retried = false): Promise<void> {
      let conn: RawConnection;
      const reused = !c.fresh && keep !== undefined && !keep.closed;
      if (!c.fresh && keep?.closed && prev) chargeClose();
      try {
        conn = reused ? keep! : await RawConnection.open(port);
      } catch (error) {
        tally.outcome(c.endpoint, 'connect failed');
        tally.violation(c, { check: 'connect', detail: (error as Error).message }, '');
        return;
      }
      if (!c.fresh) keep = conn;
      // On a reused connection, what came before may matter: name it in any violation's example.
      const after = reused && prev ? ` [on a connection reused after ${prev.c.id}]` : '';
      await conn.write(c.bytes, c.responses);

      if (c.action === 'abort-early' || c.action === 'abort-stream') {
        if (c.action === 'abort-stream') await conn.waitBytes(1, c.timeoutMs);
        await sleep(index(c) % 20);
        conn.destroy();
        keep = undefined;
        prev = undefined;
        tally.outcome(c.endpoint, 'aborted');
        return;
      }
      if (c.action === 'fin') conn.socket.end();

      const { responses, failure } = await readAnswers(conn, c, c.responses);
      if (failure && responses.length === 0 && failure.partial.length === 0 && failure.kind === 'closed' && reused && !retried && prev) {
        // The server closed the kept connection: charge the previous answer, retry this case afresh.
        chargeClose();
        return runCase(c, true);
      }
      const last = responses.at(-1);
      const expectClose = c.asksClose || c.action === 'fin' || (last !== undefined && announcesClose(last));
      // Where a close is due, give the server time to make it.
      if (expectClose && !failure) await conn.waitClosed(c.action === 'fin' ? FIN_TIMEOUT_MS : CLOSE_TIMEOUT_MS);
      if (expectClose && !failure && !conn.closed && c.action !== 'fin' && last) {
        const why = c.asksClose ? 'the request asked Connection: close' : 'the answer announced Connection: close';
        tally.violation(c, { check: 'close not made', detail: `${why}, but the server kept the connection open ${CLOSE_TIMEOUT_MS} ms after the ${last.status}` }, showResponse(last) + after);
      }
      responses.forEach((res, k) => {
        tally.outcome(c.endpoint, String(res.status));
        for (const v of checkResponse(c, c.responses[k]!, res, k === responses.length - 1 && !failure)) tally.violation(c, v, showResponse(res) + after);
      });
      if (options.verbose) for (const res of responses) log(`  ${showResponse(res)}`);
      if (!failure && last && conn.leftover > 0) {
        // Bytes beyond the answers owed (a body on a HEAD answer, an unasked response): the connection is unusable.
        const head = c.responses[responses.length - 1]!.head;
        tally.violation(c, { check: 'extra bytes', detail: `${head ? 'a body on the answer to a HEAD request' : 'bytes after the last answer'} (${last.status})` }, showResponse(last));
        conn.destroy();
        if (conn === keep) keep = undefined;
        prev = undefined;
        return;
      }

      if (failure) {
        tally.outcome(c.endpoint, failure.kind === 'timeout' ? 'timeout' : responses.length > 0 ? 'closed early' : 'no answer');
        const owed = c.responses.length - responses.length;
        if (failure.kind === 'timeout') {
          tally.violation(c, { check: 'timeout', detail: `no answer within ${Math.max(c.timeoutMs, hangTimeoutMs)} ms (${owed} of ${c.responses.length} owed)${failure.partial.length ? ', partial response' : ''}` }, escape(failure.partial, 200) + after);
        } else if (failure.partial.length > 0) {
          tally.violation(c, { check: 'truncated', detail: 'connection closed in the middle of a response' }, escape(failure.partial, 200) + after);
        } else if (c.action !== 'fin') {
          tally.violation(c, { check: 'no answer', detail: `server closed the connection without answering${responses.length ? ` (${owed} of ${c.responses.length} requests unanswered)` : ''}` }, showResponse(last) + after);
        }
        conn.destroy();
        if (conn === keep) keep = undefined;
        prev = undefined;
        return;
      }
      if (c.action === 'fin') {
        if (!conn.closed) tally.violation(c, { check: 'hang after FIN', detail: `connection still open ${FIN_TIMEOUT_MS} ms after the client half-closed` }, showResponse(last));
        conn.destroy();
        return;
      }
      if (expectClose) {
        // An announced or asked-for close that did not happen costs the client nothing; drop the connection.
        conn.destroy();
        if (conn === keep) keep = undefined;
        prev = undefined;
        return;
      }
      if (c.fresh) {
        // A connection of its own: the answer did not announce a close, so a second request must be answered.
        if (c.then) await thenRequest(conn, c, last!);
        else await followUp(conn, c, last!);
        conn.destroy();
        return;
      }
      prev = { c, res: last! };
    }

    function chargeClose(): void {
      if (prev) unannouncedClose(prev.c, prev.res);
      keep?.destroy();
      keep = undefined;
      prev = undefined;
    }

    /** The case's own second request, sent once the first answers are in, and checked like them. */
    async function thenRequest(conn: RawConnection, c: FuzzCase, last: RawResponse): Promise<void> {
      if (conn.closed) return unannouncedClose(c, last);
      await conn.write(c.then!.bytes, [c.then!.response]);
      const out = await conn.read(FOLLOW_UP_TIMEOUT_MS);
      if (out.kind === 'response') {
        tally.outcome(c.endpoint, String(out.response.status));
        if (c.then!.response.envelopes.includes('neutral') || announcesClose(out.response)) await conn.waitClosed(CLOSE_TIMEOUT_MS);
        for (const v of checkResponse(c, c.then!.response, out.response, true)) tally.violation(c, v, `second request: ${showResponse(out.response)}`);
        return;
      }
      tally.outcome(c.endpoint, out.kind === 'timeout' ? 'timeout' : 'no answer');
      const what = out.kind === 'timeout' ? `not answered within ${FOLLOW_UP_TIMEOUT_MS} ms` : 'answered by closing the connection';
      tally.violation(c, { check: out.kind === 'timeout' ? 'follow-up request' : 'no answer', detail: `the second request on the connection (after a ${last.status}) was ${what}` }, showResponse(last));
    }

    async function followUp(conn: RawConnection, c: FuzzCase, last: RawResponse): Promise<void> {
      if (!conn.closed) {
        await conn.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        const out = await conn.read(FOLLOW_UP_TIMEOUT_MS);
        if (out.kind === 'response') return;
        if (out.kind === 'timeout') {
          tally.violation(c, { check: 'follow-up request', detail: `a second request on the connection after a ${last.status} was not answered within ${FOLLOW_UP_TIMEOUT_MS} ms` }, showResponse(last));
          return;
        }
      }
      unannouncedClose(c, last);
    }
  }

  /** The server closed a connection after `res`, which did not say Connection: close. */
  function unannouncedClose(c: FuzzCase, res: RawResponse): void {
    // A refusal of malformed HTTP without Connection: close was already charged as such.
    if (c.responses.some(neutralOnly)) return;
    tally.violation(c, { check: 'unannounced close', detail: `server closed the connection after a ${res.status} without Connection: close` }, showResponse(res));
  }

  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, (_, w) => worker(w)));
  const classes = [...tally.classes.values()].sort((a, b) => b.count - a.count);
  return {
    seed,
    runs,
    endpoints,
    cases: done,
    durationMs: Math.round(performance.now() - started),
    stoppedEarly,
    outcomes: tally.outcomes,
    violations: classes,
    violationCount: tally.count,
    replay: `FUZZ_SEED=${seed} FUZZ_CASE=<endpoint:index> npm run fuzz`,
  };
}

const index = (c: FuzzCase) => Number(c.id.split(':')[1]) || 0;

/** The summary as Markdown tables: outcomes by endpoint, violations by class with an example each. */
export function formatSummary(s: FuzzSummary): string {
  const statuses = [...new Set(Object.values(s.outcomes).flatMap((row) => Object.keys(row)))].sort();
  const lines = [
    `fuzz seed ${s.seed}: ${s.cases} cases (${s.runs} per endpoint${s.stoppedEarly ? ', stopped early at the time limit' : ''}) in ${(s.durationMs / 1000).toFixed(1)} s; ${s.violationCount} violations in ${s.violations.length} classes`,
    `replay: FUZZ_SEED=${s.seed} (one case: FUZZ_CASE=endpoint:index)`,
    '',
    `| endpoint | ${statuses.join(' | ')} |`,
    `|---|${statuses.map(() => '---:').join('|')}|`,
    ...Object.entries(s.outcomes).map(([e, row]) => `| ${e} | ${statuses.map((st) => row[st] ?? 0).join(' | ')} |`),
    '',
  ];
  if (s.violations.length > 0) {
    lines.push('| # | check | detail | count | endpoints | example case | example request |', '|---:|---|---|---:|---|---|---|');
    s.violations.forEach((v, i) => {
      const ex = v.examples[0]!;
      const cell = (t: string) => t.replace(/\|/g, '\\|').replace(/\n/g, ' ');
      lines.push(`| ${i + 1} | ${v.check} | ${cell(v.detail)} | ${v.count} | ${Object.entries(v.endpoints).map(([e, n]) => `${e} ${n}`).join(', ')} | ${ex.case} (${cell(ex.label.slice(0, 80))}) | ${cell(ex.request.slice(0, 160))} |`);
    });
    lines.push('');
  }
  return lines.join('\n');
}

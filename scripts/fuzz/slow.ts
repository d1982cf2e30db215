/**
 * Slow clients: N connections that send a request line and then one header byte per interval
 * (slow headers), N that send complete headers with Content-Length 1000 and then one body byte per
 * interval (slow body), and meanwhile ordinary requests on new connections. The server must keep
 * answering the ordinary requests within NORMAL_BUDGET_MS, close every slow-header connection within
 * its headers timeout (+ slack), and answer every slow-body one 408 in an envelope within its body
 * timeout (+ slack), announcing Connection: close. Where the server has a keep-alive timeout, idle
 * kept-alive connections must be closed within it too.
 */
import { API_KEY, CHAT_MODEL, EMBED_MODEL } from './cases.js';
import { describeBody } from './checks.js';
import { announcesClose, header, RawConnection, type RawResponse } from './raw-client.js';

/** An ordinary request must be answered within this while slow clients hold connections. */
export const NORMAL_BUDGET_MS = 1_000;
/** A timeout may fire this late (timer granularity, a busy event loop, the check interval). */
export const DEFAULT_SLACK_MS = 2_000;
/** Without a configured timeout, watch the slow connections this long, then report what is still open. */
const DEFAULT_OBSERVE_MS = 20_000;

/** The server settings this check needs (src/config.ts field names as environment variables). */
export const SLOW_SETTINGS = ['HEADERS_TIMEOUT_MS', 'BODY_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS'] as const;

export interface SlowTimeouts {
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
}

/**
 * The timeouts to give the server (environment variables) and expect from it. Values already in
 * the environment win; otherwise short ones, so a run takes seconds. Settings the server does not
 * list in its usage are left out, and `missing` names them.
 */
export function slowClientSettings(accepted: Set<string>, defaults = { HEADERS_TIMEOUT_MS: 3_000, BODY_TIMEOUT_MS: 4_000, KEEP_ALIVE_TIMEOUT_MS: 3_000 }) {
  const env: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of SLOW_SETTINGS) {
    if (accepted.has(name)) env[name] = process.env[name] ?? String(defaults[name]);
    else missing.push(name);
  }
  const num = (name: string) => (env[name] !== undefined ? Number(env[name]) : undefined);
  const timeouts: SlowTimeouts = { headersTimeoutMs: num('HEADERS_TIMEOUT_MS'), bodyTimeoutMs: num('BODY_TIMEOUT_MS'), keepAliveTimeoutMs: num('KEEP_ALIVE_TIMEOUT_MS') };
  const note = missing.length === 0
    ? `server timeouts: ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(', ')}`
    : `the server does not accept ${missing.join(', ')} yet (not in \`src/main.ts --help\`): its Node/Fastify defaults apply` +
      (Object.keys(env).length ? `; set: ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(', ')}` : '');
  return { env, timeouts, missing, note };
}

export interface SlowOptions extends SlowTimeouts {
  port: number;
  slowHeaders: number;
  slowBodies: number;
  /** One byte per this many ms. */
  byteIntervalMs?: number;
  slackMs?: number;
  /** How long to watch at most; by default the longest expected timeout plus slack (20 s if none is known). */
  observeMs?: number;
  /** Concurrent ordinary clients. */
  normalClients?: number;
  log?: (line: string) => void;
}

export interface SlowKind {
  kind: 'slow headers' | 'slow body' | 'idle keep-alive';
  connections: number;
  closed: number;
  medianCloseMs: number;
  maxCloseMs: number;
  answered408: number;
  statuses: Record<string, number>;
}

export interface SlowSummary {
  options: Omit<SlowOptions, 'log'>;
  observedMs: number;
  kinds: SlowKind[];
  normal: { requests: number; withinBudget: number; p50: number; p99: number; max: number; failures: number };
  violations: Array<{ what: string; count: number; example?: string }>;
}

interface Slow {
  kind: SlowKind['kind'];
  conn?: RawConnection;
  openedAt: number;
  /** The route's dialect: which envelope a 408 may use (besides the neutral one). */
  dialect: 'anthropic' | 'openai';
  failed?: string;
}

const ROUTES = [
  { path: '/v1/embeddings', dialect: 'openai' as const, headers: ['Content-Type: application/json', `Authorization: Bearer ${API_KEY}`] },
  { path: '/v1/messages', dialect: 'anthropic' as const, headers: ['Content-Type: application/json', 'anthropic-version: 2023-06-01', `x-api-key: ${API_KEY}`] },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (values: number[], p: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!) : 0;
};

/** One ordinary request on a new connection; its latency, or why it failed. */
async function normalRequest(port: number, i: number): Promise<{ ms: number; error?: string }> {
  const started = performance.now();
  const kinds = [
    () => 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n',
    () => `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`,
    () => {
      const body = JSON.stringify({ model: EMBED_MODEL, input: `normal request ${i}` });
      return `POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${API_KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    },
    () => {
      const body = JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: `normal request ${i}` }] });
      return `POST /v1/messages/count_tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\nx-api-key: ${API_KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    },
  ];
  let conn: RawConnection | undefined;
  try {
    conn = await RawConnection.open(port, '127.0.0.1', 10_000);
    await conn.write(kinds[i % kinds.length]!());
    const out = await conn.read(10_000);
    const ms = performance.now() - started;
    if (out.kind !== 'response') return { ms, error: out.kind === 'timeout' ? 'no answer within 10 s' : 'closed without answer' };
    if (out.response.status !== 200) return { ms, error: `status ${out.response.status}` };
    return { ms };
  } catch (error) {
    return { ms: performance.now() - started, error: (error as Error).message };
  } finally {
    conn?.destroy();
  }
}

function checkAnswer(slow: Slow, res: RawResponse | undefined): string | undefined {
  if (!res) return slow.kind === 'slow body' ? 'closed without a 408 answer' : undefined;
  if (slow.kind === 'slow body' && res.status !== 408) return `answered ${res.status}, not 408`;
  if (res.status < 400) return `answered ${res.status}`;
  const described = describeBody(res.body);
  const fits = described === 'neutral envelope' || (slow.dialect === 'anthropic' ? described === 'Anthropic envelope' : described === 'OpenAI envelope');
  if (!fits) return `${res.status} answer is ${described}, not the ${slow.dialect} or neutral envelope`;
  if (!announcesClose(res)) return `${res.status} answer without Connection: close (Connection: ${header(res, 'connection') ?? 'none'})`;
  return undefined;
}

export async function runSlowClients(options: SlowOptions): Promise<SlowSummary> {
  const { port, slowHeaders, slowBodies, byteIntervalMs = 1_000, slackMs = DEFAULT_SLACK_MS, normalClients = 2, log = () => {} } = options;
  const limits = {
    'slow headers': options.headersTimeoutMs,
    'slow body': options.bodyTimeoutMs,
    'idle keep-alive': options.keepAliveTimeoutMs,
  } as const;
  const known = Object.values(limits).filter((v): v is number => v !== undefined);
  const observeMs = options.observeMs ?? (known.length ? Math.max(...known) + slackMs + 1_000 : DEFAULT_OBSERVE_MS);
  const started = performance.now();
  const slows: Slow[] = [];
  const violations = new Map<string, { count: number; example?: string }>();
  const violation = (what: string, example?: string) => {
    const v = violations.get(what) ?? { count: 0, example };
    v.count++;
    violations.set(what, v);
  };

  // Open the slow connections in batches, so the listen backlog is not the thing being tested.
  const open = async (kind: Slow['kind'], i: number) => {
    const route = ROUTES[i % ROUTES.length]!;
    const slow: Slow = { kind, openedAt: performance.now(), dialect: route.dialect };
    slows.push(slow);
    try {
      slow.conn = await RawConnection.open(port, '127.0.0.1', 10_000);
      slow.openedAt = performance.now();
      if (kind === 'slow headers') {
        await slow.conn.write(`POST ${route.path} HTTP/1.1\r\nHost: x\r\nX-Slow: `);
      } else if (kind === 'slow body') {
        await slow.conn.write(`POST ${route.path} HTTP/1.1\r\nHost: x\r\n${route.headers.join('\r\n')}\r\nContent-Length: 1000\r\n\r\n{`);
      } else {
        await slow.conn.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
        const out = await slow.conn.read(10_000);
        if (out.kind !== 'response') slow.failed = `keep-alive request: ${out.kind}`;
        slow.openedAt = performance.now(); // idle from here
      }
    } catch (error) {
      slow.failed = (error as Error).message;
    }
  };
  const plan: Array<[Slow['kind'], number]> = [
    ...Array.from({ length: slowHeaders }, (_, i): [Slow['kind'], number] => ['slow headers', i]),
    ...Array.from({ length: slowBodies }, (_, i): [Slow['kind'], number] => ['slow body', i]),
    ...(options.keepAliveTimeoutMs !== undefined ? Array.from({ length: Math.min(20, slowHeaders) }, (_, i): [Slow['kind'], number] => ['idle keep-alive', i]) : []),
  ];
  for (let at = 0; at < plan.length; at += 50) {
    await Promise.all(plan.slice(at, at + 50).map(([kind, i]) => open(kind, i)));
    await sleep(20);
  }
  log(`slow clients: ${slows.length} connections open (${slowHeaders} slow headers, ${slowBodies} slow body) in ${Math.round(performance.now() - started)} ms; watching up to ${observeMs} ms`);

  // One byte per interval on every slow connection still open.
  const drip = setInterval(() => {
    for (const s of slows) {
      if (!s.conn || s.conn.closed || s.kind === 'idle keep-alive') continue;
      s.conn.socket.write(s.kind === 'slow headers' ? 'a' : ' ');
    }
  }, byteIntervalMs);

  // Ordinary requests meanwhile.
  const latencies: number[] = [];
  let failures = 0;
  let stop = false;
  const normal = Array.from({ length: normalClients }, async (_, c) => {
    for (let i = c; !stop; i += normalClients) {
      const { ms, error } = await normalRequest(port, i);
      latencies.push(ms);
      if (error) {
        failures++;
        violation(`ordinary request failed while slow clients were connected`, error);
      } else if (ms > NORMAL_BUDGET_MS) {
        violation(`ordinary request not answered within ${NORMAL_BUDGET_MS} ms`, `${Math.round(ms)} ms`);
      }
      await sleep(50);
    }
  });

  const deadline = started + observeMs;
  while (performance.now() < deadline && slows.some((s) => s.conn && !s.conn.closed)) await sleep(100);
  stop = true;
  clearInterval(drip);
  await Promise.all(normal);
  const observedMs = Math.round(performance.now() - started);

  const kinds: SlowKind[] = [];
  for (const kind of ['slow headers', 'slow body', 'idle keep-alive'] as const) {
    const group = slows.filter((s) => s.kind === kind);
    if (group.length === 0) continue;
    const closeMs: number[] = [];
    const statuses: Record<string, number> = {};
    let answered408 = 0;
    const limit = limits[kind];
    for (const s of group) {
      if (!s.conn || s.failed) {
        violation(`${kind}: could not set up the connection`, s.failed);
        continue;
      }
      let res: RawResponse | undefined;
      if (kind !== 'idle keep-alive') {
        const out = await s.conn.read(0);
        res = out.kind === 'response' ? out.response : undefined;
        statuses[res ? String(res.status) : s.conn.closed ? 'closed, no answer' : 'still open'] = (statuses[res ? String(res.status) : s.conn.closed ? 'closed, no answer' : 'still open'] ?? 0) + 1;
        if (res?.status === 408) answered408++;
      }
      if (s.conn.closed) {
        const ms = s.conn.closedAt - s.openedAt;
        closeMs.push(ms);
        if (limit !== undefined && ms > limit + slackMs) violation(`${kind}: closed after more than ${limit} + ${slackMs} ms`, `${Math.round(ms)} ms`);
        const bad = checkAnswer(s, res);
        if (bad) violation(`${kind}: ${bad}`, res ? `${res.status} ${res.body.subarray(0, 120).toString()}` : undefined);
      } else {
        violation(limit !== undefined ? `${kind}: still open after ${observedMs} ms (timeout ${limit} ms + ${slackMs} ms slack)` : `${kind}: still open after ${observedMs} ms (no timeout configured)`);
      }
      s.conn.destroy();
    }
    kinds.push({ kind, connections: group.length, closed: closeMs.length, medianCloseMs: pct(closeMs, 50), maxCloseMs: pct(closeMs, 100), answered408, statuses });
  }
  const ok = latencies.filter((ms) => ms <= NORMAL_BUDGET_MS).length - failures;
  return {
    options: { port, slowHeaders, slowBodies, byteIntervalMs, slackMs, observeMs, normalClients, headersTimeoutMs: options.headersTimeoutMs, bodyTimeoutMs: options.bodyTimeoutMs, keepAliveTimeoutMs: options.keepAliveTimeoutMs },
    observedMs,
    kinds,
    normal: { requests: latencies.length, withinBudget: Math.max(0, ok), p50: pct(latencies, 50), p99: pct(latencies, 99), max: pct(latencies, 100), failures },
    violations: [...violations].map(([what, v]) => ({ what, count: v.count, example: v.example })),
  };
}

export function formatSlowSummary(s: SlowSummary): string {
  const lines = [
    `slow clients: ${s.options.slowHeaders} slow-header + ${s.options.slowBodies} slow-body connections, watched ${s.observedMs} ms`,
    ...s.kinds.map((k) => `  ${k.kind}: ${k.closed}/${k.connections} closed by the server (median ${k.medianCloseMs} ms, max ${k.maxCloseMs} ms); answers ${JSON.stringify(k.statuses)}`),
    `  ordinary requests meanwhile: ${s.normal.requests} (${s.normal.withinBudget} within ${NORMAL_BUDGET_MS} ms), p50 ${s.normal.p50} ms, p99 ${s.normal.p99} ms, max ${s.normal.max} ms, ${s.normal.failures} failed`,
    ...(s.violations.length ? ['  violations:', ...s.violations.map((v) => `    ${v.count} × ${v.what}${v.example ? ` (e.g. ${v.example})` : ''}`)] : ['  no violations']),
  ];
  return lines.join('\n');
}

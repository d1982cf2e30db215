/**
 * Soak: the server process on the bundled models under a steady mixed load for a long time, with
 * its memory sampled every few seconds, to see whether memory is bounded.
 *
 *   npm run soak                                  10 minutes at 10 requests/s
 *   npm run soak -- --minutes 60 --rate 20        an hour at 20 requests/s
 *   npm run soak -- --minutes 2 --sample-seconds 2
 *   npm run soak -- --prompt-cache-bytes 0        the prompt cache off (default: the server's, 1 GiB per worker)
 *
 * Load (open loop: a request starts every 1/rate s whatever the others do, up to MAX_IN_FLIGHT):
 * chat JSON and streamed (max_tokens 1-8), count_tokens, embeddings of one input and of batches,
 * requests that fail (bad JSON, unknown model, unknown route), and client aborts (a stream dropped
 * after its first bytes, a JSON request dropped before its answer): soak-load.ts.
 *
 * Samples: resident memory from /proc/PID/status (VmRSS), and from the server's Prometheus /metrics
 * the main thread's V8 heap in use (nodejs_heap_size_used_bytes), the worker threads' heaps in use
 * (worker_heap_used_bytes: each worker's latest report) and external memory
 * (nodejs_external_memory_bytes). What is left, RSS - heaps - external, is reported as "native":
 * onnxruntime's arenas and buffers, code, allocator slack. And the
 * KV the prompt caches hold (prompt_cache_bytes), which grows by design up to --prompt-cache-bytes
 * per worker: RSS less that KV shows whether anything else grows.
 *
 * Verdict: after a warm-up (the first 20% of the run, or until the prompt caches are full when they
 * fill within the first three quarters), a least-squares line through each series;
 * memory is called bounded when the RSS line's growth over the measured window, slope × minutes,
 * is under 5% of mean RSS (a falling line is no leak; the verdict then says the run was still
 * settling). Results: bench/results/soak.json and soak.md.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { API_KEY } from '../fuzz/cases.js';
import { startChildServer } from '../fuzz/server.js';
import { percentile, writeResults, type Table } from './report.js';
import { kindOf, MIX, send, type Kind, type Outcome } from './soak-load.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '10' },
    'sample-seconds': { type: 'string', default: '5' },
    'warmup-fraction': { type: 'string', default: '0.2' },
    /** Bounded share of mean RSS that the fitted drift over the measured window may reach. */
    'drift-limit': { type: 'string', default: '0.05' },
    'prompt-cache-bytes': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
  allowPositionals: false,
});
if (values.help) {
  process.stdout.write(`npm run soak [-- options]
  --minutes N               length of the run (default 10)
  --rate N                  requests started per second, open loop (default 10)
  --sample-seconds N        memory sample interval (default 5)
  --warmup-fraction F       share of the run left out of the fits (default 0.2)
  --drift-limit F           fitted RSS drift, as a share of mean RSS, still called bounded (default 0.05)
  --prompt-cache-bytes N    the server's prompt cache per worker (default: the server's own, 1 GiB; 0 turns it off)
Writes bench/results/soak.md and soak.json.
`);
  process.exit(0);
}
const MINUTES = Number(values.minutes);
const RATE = Number(values.rate);
const SAMPLE_MS = Number(values['sample-seconds']) * 1000;
const WARMUP = Number(values['warmup-fraction']);
const DRIFT_LIMIT = Number(values['drift-limit']);
/** Requests in flight at most; past it a scheduled request is skipped (and counted), so the client stays bounded too. */
const MAX_IN_FLIGHT = 64;
const MiB = 2 ** 20;
if (!(MINUTES > 0 && RATE > 0 && SAMPLE_MS > 0)) throw new Error('--minutes, --rate and --sample-seconds must be positive');

// ---------------------------------------------------------------------------------------------
// Samples and fits

interface Sample { t: number; rssMiB: number; anonMiB: number; fileMiB: number; heapMiB: number; workerHeapMiB: number; externalMiB: number; nativeMiB: number; cacheMiB: number; rssLessCacheMiB: number; promRssMiB: number; requests: number; load1: number }

/** VmRSS and its anonymous and file-backed parts (kB) from /proc/PID/status. */
function procStatus(pid: number): { rss: number; anon: number; file: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/** The sum of a metric's samples over its labels (one per model); undefined when it has none. */
function metricSum(text: string, name: string): number | undefined {
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)`, 'gm'))].map((m) => Number(m[1]));
  return values.length ? values.reduce((a, b) => a + b, 0) : undefined;
}

async function getText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return res.text();
}

/** Least-squares line y = a + b·x; returns the slope and its standard error. */
function fit(xs: number[], ys: number[]): { slope: number; stderr: number } {
  const n = xs.length;
  if (n < 3) return { slope: NaN, stderr: NaN };
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i]! - mx) ** 2;
    sxy += (xs[i]! - mx) * (ys[i]! - my);
  }
  const slope = sxy / sxx;
  let sse = 0;
  for (let i = 0; i < n; i++) sse += (ys[i]! - (my + slope * (xs[i]! - mx))) ** 2;
  return { slope, stderr: Math.sqrt(sse / (n - 2) / sxx) };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const loadStart = os.loadavg();
  process.stderr.write(`soak: starting the server; ${MINUTES} min at ${RATE} requests/s, a sample every ${SAMPLE_MS / 1000} s\n`);
  const cacheArgs = values['prompt-cache-bytes'] !== undefined ? ['--prompt-cache-bytes', values['prompt-cache-bytes']] : [];
  // The server as `npm start` runs it (compiled, its environment): memory is what a user's server holds.
  const server = await startChildServer({ args: ['--api-key', API_KEY, ...cacheArgs], compiled: true });
  const base = new URL(server.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  const outcomes: Outcome[] = [];
  const samples: Sample[] = [];
  let inFlight = 0;
  let skipped = 0;
  let started = 0;
  const t0 = performance.now();
  const endAt = t0 + MINUTES * 60_000;

  const sample = async () => {
    const t = (performance.now() - t0) / 60_000;
    const proc = procStatus(server.pid);
    const rss = proc.rss / 1024;
    let text = '';
    try {
      text = await getText(`${server.url}/metrics`);
    } catch {
      /* a missed sample shows as NaN */
    }
    const heap = metric(text, 'nodejs_heap_size_used_bytes') / MiB;
    const external = metric(text, 'nodejs_external_memory_bytes') / MiB;
    // Absent until a worker first reports its cache: none held.
    const cache = text ? (metricSum(text, 'prompt_cache_bytes') ?? 0) / MiB : NaN;
    const workerHeap = text ? (metricSum(text, 'worker_heap_used_bytes') ?? 0) / MiB : NaN;
    samples.push({ t, rssMiB: rss, anonMiB: proc.anon / 1024, fileMiB: proc.file / 1024, heapMiB: heap, workerHeapMiB: workerHeap, externalMiB: external, nativeMiB: rss - heap - workerHeap - external, cacheMiB: cache, rssLessCacheMiB: rss - cache, promRssMiB: metric(text, 'process_resident_memory_bytes') / MiB, requests: outcomes.length, load1: os.loadavg()[0]! });
  };

  await sample();
  const sampler = setInterval(() => void sample(), SAMPLE_MS);
  const progress = setInterval(() => {
    const last = samples.at(-1)!;
    process.stderr.write(`soak: ${last.t.toFixed(1)} min, ${outcomes.length} requests done, ${inFlight} in flight, RSS ${last.rssMiB.toFixed(0)} MiB, heap ${last.heapMiB.toFixed(1)} MiB, load ${last.load1.toFixed(2)}\n`);
  }, 30_000);

  // Open loop: one request every 1/RATE s.
  const pending = new Set<Promise<void>>();
  const interval = 1000 / RATE;
  for (let next = performance.now(); next < endAt; next += interval) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (!server.alive()) break;
    if (inFlight >= MAX_IN_FLIGHT) {
      skipped++;
      continue;
    }
    inFlight++;
    started++;
    const p: Promise<void> = send(base, agent, kindOf()).then((o) => {
      outcomes.push(o);
      inFlight--;
      pending.delete(p);
    });
    pending.add(p);
  }
  await Promise.all(pending);
  await sample();
  clearInterval(sampler);
  clearInterval(progress);
  agent.destroy();
  const alive = server.alive();
  const loadEnd = os.loadavg();
  await server.stop();

  // Fits after the warm-up: the first share of the run, and until the prompt caches are full when they
  // fill during the run (they grow by design up to their budget; past it, entries are replaced).
  const peakCache = Math.max(0, ...samples.map((s) => (Number.isFinite(s.cacheMiB) ? s.cacheMiB : 0)));
  const cacheFull = peakCache > 0 ? samples.find((s) => s.cacheMiB >= 0.95 * peakCache)!.t : 0;
  const fullBeforeEnd = cacheFull < 0.75 * MINUTES;
  const measuredFrom = Math.max(WARMUP * MINUTES, fullBeforeEnd ? cacheFull : 0);
  const measured = samples.filter((s) => s.t >= measuredFrom && Number.isFinite(s.heapMiB));
  const window = measured.length ? measured.at(-1)!.t - measured[0]!.t : 0;
  const meanRss = measured.reduce((a, s) => a + s.rssMiB, 0) / Math.max(1, measured.length);
  const series = [['RSS', 'rssMiB'], ['RSS anonymous', 'anonMiB'], ['RSS file-backed', 'fileMiB'], ['V8 heap used (main thread)', 'heapMiB'], ['V8 heap used (worker threads)', 'workerHeapMiB'], ['external', 'externalMiB'], ['native (onnxruntime arenas, buffers)', 'nativeMiB'], ['prompt cache KV held', 'cacheMiB'], ['RSS less prompt cache KV', 'rssLessCacheMiB']] as const;
  const fits = series.map(([name, key]) => {
    const ys = measured.map((s) => s[key]);
    const { slope, stderr } = fit(measured.map((s) => s.t), ys);
    const mean = ys.reduce((a, b) => a + b, 0) / Math.max(1, ys.length);
    const drift = slope * window;
    return { series: name, slopeMiBPerMin: slope, stderrMiBPerMin: stderr, meanMiB: mean, driftMiB: drift, driftPctOfRss: (Math.abs(drift) / meanRss) * 100, perHourMiB: slope * 60 };
  });
  const rssFit = fits[0]!;
  // Growth is what matters: a line that falls (load-time memory handed back) is no leak, but says the warm-up was not over.
  const bounded = Number.isFinite(rssFit.slopeMiBPerMin) && rssFit.driftMiB < DRIFT_LIMIT * meanRss;
  const settling = bounded && -rssFit.driftMiB >= DRIFT_LIMIT * meanRss;
  const verdict = !alive
    ? 'the server process exited during the run'
    : measured.length < 3
      ? 'too few samples after the warm-up to fit a line'
      : settling
        ? `bounded, still settling: RSS fell ${(-rssFit.driftMiB).toFixed(1)} MiB over the ${window.toFixed(1)} min after warm-up (${rssFit.slopeMiBPerMin.toFixed(2)} ± ${rssFit.stderrMiBPerMin.toFixed(2)} MiB/min, ${rssFit.driftPctOfRss.toFixed(1)}% of mean RSS ${meanRss.toFixed(0)} MiB): no growth, but memory given back after the warm-up dominates; a longer run fits the plateau`
      : bounded
        ? `bounded: RSS drift over the ${window.toFixed(1)} min after warm-up (from minute ${measuredFrom.toFixed(1)}) is ${rssFit.driftMiB.toFixed(1)} MiB (${rssFit.driftPctOfRss.toFixed(1)}% of mean RSS ${meanRss.toFixed(0)} MiB, limit ${(DRIFT_LIMIT * 100).toFixed(0)}%); ` +
          `slope ${rssFit.slopeMiBPerMin.toFixed(2)} ± ${rssFit.stderrMiBPerMin.toFixed(2)} MiB/min${Math.abs(rssFit.slopeMiBPerMin) < 2 * rssFit.stderrMiBPerMin ? ', within noise (under two standard errors)' : ''}`
        : `NOT shown bounded: RSS grows ${rssFit.slopeMiBPerMin.toFixed(2)} ± ${rssFit.stderrMiBPerMin.toFixed(2)} MiB/min, ${rssFit.driftMiB.toFixed(1)} MiB over ${window.toFixed(1)} min (${rssFit.driftPctOfRss.toFixed(1)}% of mean RSS, limit ${(DRIFT_LIMIT * 100).toFixed(0)}%); run longer to tell a slow leak from warm-up`;

  // Tables.
  const tableEvery = MINUTES < 5 ? 1 / 3 : 1;
  const rows: Sample[] = [];
  for (const s of samples) if (rows.length === 0 || s.t - rows.at(-1)!.t >= tableEvery - 1e-9 || s === samples.at(-1)) rows.push(s);
  const kinds = [...new Set(outcomes.map((o) => o.kind))];
  const statuses = [...new Set(outcomes.map((o) => o.status))].sort();
  const count = (k: Kind, st: string) => outcomes.filter((o) => o.kind === k && o.status === st).length;
  const tables: Table[] = [
    {
      title: 'Verdict',
      columns: ['memory', 'criterion', 'server alive at the end'],
      rows: [[verdict, `RSS slope × minutes after warm-up < ${(DRIFT_LIMIT * 100).toFixed(0)}% of mean RSS (warm-up: first ${(WARMUP * 100).toFixed(0)}%, or until the prompt caches are full: here ${measuredFrom.toFixed(1)} min)`, alive ? 'yes' : 'NO']],
    },
    {
      title: 'Fitted slopes after warm-up (least squares)',
      columns: ['series', 'slope MiB/min', '± std. error', 'mean MiB', `drift over ${window.toFixed(1)} min MiB`, 'drift % of mean RSS', 'per hour MiB'],
      rows: fits.map((f) => [f.series, f.slopeMiBPerMin.toFixed(3), f.stderrMiBPerMin.toFixed(3), f.meanMiB.toFixed(1), f.driftMiB.toFixed(2), f.driftPctOfRss.toFixed(2), f.perHourMiB.toFixed(1)]),
    },
    {
      title: `Samples (every ${tableEvery === 1 ? 'minute' : '20 s'}; all ${samples.length} in soak.json)`,
      columns: ['minute', 'RSS MiB', 'anon MiB', 'file MiB', 'heap used MiB', 'worker heaps MiB', 'external MiB', 'native MiB', 'prompt cache KV MiB', 'requests done', 'load 1 min'],
      rows: rows.map((s) => [s.t.toFixed(2), s.rssMiB.toFixed(1), s.anonMiB.toFixed(1), s.fileMiB.toFixed(1), s.heapMiB.toFixed(1), s.workerHeapMiB.toFixed(1), s.externalMiB.toFixed(1), s.nativeMiB.toFixed(1), s.cacheMiB.toFixed(1), s.requests, s.load1.toFixed(2)]),
    },
    {
      title: 'Requests by kind and status',
      columns: ['kind', ...statuses, 'p50 ms', 'p99 ms'],
      rows: kinds.map((k) => {
        const ms = outcomes.filter((o) => o.kind === k && o.status !== 'aborted').map((o) => o.ms);
        return [k, ...statuses.map((st) => count(k, st)), ms.length ? Math.round(percentile(ms, 50)) : '-', ms.length ? Math.round(percentile(ms, 99)) : '-'];
      }),
    },
  ];
  const achieved = outcomes.length / ((performance.now() - t0) / 1000);
  writeResults(
    'soak',
    { minutes: MINUTES, rate: RATE, achievedRate: achieved, started, skipped, sampleSeconds: SAMPLE_MS / 1000, warmupFraction: WARMUP, driftLimit: DRIFT_LIMIT, loadAverageStart: loadStart, loadAverageEnd: loadEnd, alive, verdict, bounded, fits, samples, statusCounts: Object.fromEntries(kinds.map((k) => [k, Object.fromEntries(statuses.map((st) => [st, count(k, st)]).filter(([, n]) => n))])) },
    tables,
    [
      `Prompt cache: ${values['prompt-cache-bytes'] === undefined ? 'the server default (1 GiB per worker)' : values['prompt-cache-bytes'] === '0' ? 'off' : `${values['prompt-cache-bytes']} bytes per worker`}. ` +
        `${MINUTES} min at ${RATE} requests/s (achieved ${achieved.toFixed(1)}/s; ${started} started, ${skipped} skipped with ${MAX_IN_FLIGHT} in flight). Mix: ${MIX.map(([w, k]) => `${k} ${w}%`).join(', ')}.`,
      `Load average (1, 5, 15 min) at start ${loadStart.map((l) => l.toFixed(2)).join(', ')}; at end ${loadEnd.map((l) => l.toFixed(2)).join(', ')} (the machine is shared: other processes count too).`,
      'RSS is VmRSS of the server process (its worker threads included), split into anonymous and file-backed pages (RssAnon, RssFile); heap and external are the main thread\'s and worker heaps the worker threads\' V8 heaps in use (each worker\'s latest report), from /metrics; native = RSS - heaps - external (onnxruntime arenas and buffers, allocator slack, code).',
      `**${verdict}**`,
    ],
  );
  if (!alive) process.exitCode = 1;
}

main().catch((error) => {
  process.stderr.write(`soak: ${(error as Error).stack ?? error}\n`);
  process.exit(2);
});

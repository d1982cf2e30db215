/**
 * Claude Code's first turn against the server: the captured request body (24 tools, ~75k characters;
 * test/fixtures/clients/claude-code-print-json.json) replayed as sent — tools, system, thinking,
 * metadata, context_management, output_config, `?beta=true` and its anthropic-beta header — with
 * only `model` set to the subject, `max_tokens: 1` and `stream: true`. Measures time to the first
 * streamed token, the server's peak RSS during the request and the prompt's token count, for chunked
 * prefill at several chunk sizes against one pass (the baseline), in the same run, interleaved.
 *
 *   npm run bench:agent [-- --subjects tiny-qwen3-random,smollm2-135m-shape-32k-q8 --chunks 512,2048,100000 --runs 3
 *                           --sweep 'tiny-qwen3-random=0,8,16;smollm2-135m-shape-32k-q8=0' --budget-minutes 19 --memory-budget-gib 12 --machine-floor-gib 1.2]
 *
 * Subjects: the bundled tiny-qwen3-random (./models), and smollm2-135m-shape-32k-q8 (bench/models,
 * built if absent): SmolLM2-135M's layers, 8-bit, with a 32,768-position window and the Qwen3
 * tokenizer and template, so the prompt is the real ~18.7k tokens (see bench-lm.ts). Qwen2.5-0.5B's
 * shape (32k positions too) would take several times as long per request as SmolLM2-135M's, which
 * already takes minutes here.
 *
 * Each chunk size is its own server (src/main.ts in a child process, PREFILL_CHUNK_TOKENS set), all
 * of a subject's servers up at once; runs go round-robin over them (run r of every chunk size, then
 * run r+1), each after a pause, so drift on a shared machine hits every configuration alike.
 *
 * The first token: with thinking on (the request's adaptive thinking, and a template with a thinking
 * switch) the server forces the first token to be the open tag `<think>`, which streams no text, so
 * with max_tokens 1 the stream has no content_block_delta: after message_start, the first event is
 * the content block the single token ends in (an empty one). Time to first token is therefore to the
 * first content-block event (content_block_start or content_block_delta): the prefill's own token.
 *
 * Memory: the server's VmRSS is sampled every 20 ms during the request (/proc/PID/status); the delta
 * is the sampled peak minus VmRSS just before the request. The kernel's own high-water mark (VmHWM,
 * reset before each request through /proc/PID/clear_refs) is recorded beside it: a sampler can miss
 * a spike shorter than 20 ms, VmHWM cannot. What a request allocates is mostly still held after it
 * (onnxruntime's arena, garbage the JS heap has not collected), so a repeat's delta over "before"
 * says little: the peak over the server's idle RSS (after start-up and warm-up) is reported too, and
 * the ratios use it. The shorter prompts of the sweep run first, ascending, on their own servers; the
 * full request gets fresh ones.
 *
 * A one-pass prefill of a long prompt materialises the attention scores of every head at once
 * (heads x tokens^2 x 4 bytes per layer: ~5.6 GB for 4 heads at 18.7k tokens), which can exceed
 * the machine. So every server runs under an address-space limit (prlimit --as): its virtual size
 * after start-up plus a budget (--memory-budget-gib, at most what the machine has free less 3 GiB).
 * An allocation past it fails inside onnxruntime, the request gets an error, and the run is
 * reported as failed at that budget, instead of the kernel's OOM killer picking a process on a
 * machine other work shares.
 *
 * (One file of ~470 lines: a script run top to bottom, whose replay, servers under their memory
 * limits, tables and notes share its options and the captured request, and read best in that order.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_MODELS, ensureBundledModels } from '../builders/bundled/index.js';
import { median, writeResults, type Table } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    subjects: { type: 'string', default: 'tiny-qwen3-random,smollm2-135m-shape-32k-q8' },
    chunks: { type: 'string', default: '512,2048,100000' },
    runs: { type: 'string', default: '3' },
    'memory-budget-gib': { type: 'string', default: '12' },
    /** Stop a request (kill its server) when the machine's MemAvailable falls below this. */
    'machine-floor-gib': { type: 'string', default: '1.2' },
    /**
     * Wall-clock budget: a subject's next round of runs starts only if the last round, once more,
     * still ends within it (the first round always runs). Claude Code's prompt on the SmolLM2-135M
     * layer stack takes minutes per request on two busy cores.
     */
    'budget-minutes': { type: 'string', default: '19' },
    fixture: { type: 'string', default: 'test/fixtures/clients/claude-code-print-json.json' },
    /**
     * Shorter prompts first, for memory and time against prompt length and a one-pass baseline that
     * fits: the same request with only its first N tools, one run each per chunk size ("" for none).
     */
    sweep: { type: 'string', default: 'tiny-qwen3-random=0,8,16;smollm2-135m-shape-32k-q8=0' },
    name: { type: 'string', default: 'agent-prompt' },
  },
});
const SUBJECTS = values.subjects!.split(',');
const CHUNKS = values.chunks!.split(',').map(Number);
/** The chunk size that stands for one pass (the baseline of the ratios): the largest. */
const ONE_PASS = Math.max(...CHUNKS);
const RUNS = Number(values.runs);
const BUDGET_MS = Number(values['budget-minutes']) * 60_000;
const SWEEP = new Map(values.sweep!.split(';').filter(Boolean).map((entry) => {
  const [subject, tools] = entry.split('=');
  return [subject!, tools ? tools.split(',').map(Number) : []];
}));
const SAMPLE_MS = 20;
/** Pause before each measured request: idle onnxruntime threads of the server that ran last spin a while on the shared cores. */
const SETTLE_MS = 1000;
const GiB = 2 ** 30;
/** A request is stopped (its server killed) when the machine's MemAvailable falls below this. */
const MACHINE_FLOOR_BYTES = Number(values['machine-floor-gib']) * GiB;
const MACHINE_MEMORY_LOW = 'stopped: machine memory low';

// --- the captured request ---
interface Captured { method: string; path: string; url: string; headers: Record<string, string>; body: Record<string, unknown> }
const fixture = JSON.parse(fs.readFileSync(path.resolve(values.fixture!), 'utf8')) as { firstTurn: { url: string }; requests: Captured[] };
const found = fixture.requests.find((r) => r.method === 'POST' && r.path === '/v1/messages');
if (!found) throw new Error(`${values.fixture}: no POST /v1/messages`);
const captured: Captured = found;
// Hop-by-hop and per-connection headers are the client's own; the API key was redacted at capture
// and the servers here run without keys.
const DROPPED = new Set(['host', 'content-length', 'connection', 'accept-encoding', 'x-api-key']);
const headers = Object.fromEntries(Object.entries(captured.headers).filter(([k]) => !DROPPED.has(k)));
const capturedTools = captured.body.tools as unknown[];
const bodyFor = (model: string, tools = capturedTools.length) => JSON.stringify({ ...captured.body, tools: capturedTools.slice(0, tools), model, max_tokens: 1, stream: true });

// --- models ---
const bundledDir = path.resolve('models');
const benchDir = path.resolve('bench/models');
ensureBundledModels({ modelsDir: bundledDir });
const benchSubjects = BENCH_MODELS.filter((m) => SUBJECTS.includes(m.manifest.id));
if (benchSubjects.length) ensureBundledModels({ modelsDir: benchDir, models: benchSubjects });
const folderOf = (subject: string) => (fs.existsSync(path.join(bundledDir, subject)) ? path.join(bundledDir, subject) : path.join(benchDir, subject));

// --- process memory ---
const statusOf = (pid: number) => fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kib = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
const rssMiB = (pid: number) => kib(statusOf(pid), 'VmRSS') / 1024;
const memAvailableBytes = () => kib(fs.readFileSync('/proc/meminfo', 'utf8'), 'MemAvailable') * 1024;
/** Resets the process's VmHWM to its current RSS (Linux >= 4.0, clear_refs value 5). */
const resetPeak = (pid: number) => {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
};

interface Run {
  chunk: number;
  run: number;
  ok: boolean;
  error?: string;
  inputTokens: number;
  /** Request sent to message_start (parse, template, tokenize, queue). */
  startMs: number;
  /** message_start to the first content-block event (prefill and the first token). */
  prefillMs: number;
  /** Request sent to the first content-block event (content_block_start or content_block_delta). */
  ttftMs: number;
  /** Request sent to the first content_block_delta (NaN when there is none, as with max_tokens 1 and thinking on). */
  firstDeltaMs: number;
  totalMs: number;
  /** The first content-block event: content_block_start(type) or content_block_delta(type). */
  firstEvent?: string;
  rssBeforeMiB: number;
  /** Sampled peak VmRSS minus the server's VmRSS when idle after start-up and warm-up. */
  peakOverIdleMiB: number;
  /** Sampled peak VmRSS minus VmRSS before the request. */
  peakDeltaMiB: number;
  /** VmHWM (reset before the request) minus VmRSS before it; NaN when the reset is not allowed. */
  hwmDeltaMiB: number;
  rssAfterMiB: number;
  samples: number;
  /** On failure: what the server logged meanwhile (the reason; the client only sees api_error). */
  serverLog?: string;
}

function replay(server: ServerProcess & { idleMiB: number }, chunk: number, run: number, body: string, hwmReset: boolean): Promise<Run> {
  const pid = server.pid;
  if (hwmReset) resetPeak(pid);
  const before = rssMiB(pid);
  let peak = before;
  let samples = 0;
  let stoppedForMemory: string | undefined;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
      samples++;
      // The address-space limit bounds each server, not the machine: several servers holding what
      // their past requests took, plus other work, can still run it out. Stop the one measured.
      const available = memAvailableBytes();
      if (!stoppedForMemory && available < MACHINE_FLOOR_BYTES) {
        stoppedForMemory = `${MACHINE_MEMORY_LOW}: MemAvailable ${(available / GiB).toFixed(2)} GiB with the server at ${rssMiB(pid).toFixed(0)} MiB; server killed`;
        process.kill(pid, 'SIGKILL');
      }
    } catch {
      // the process is gone; the request's error says why
    }
  }, SAMPLE_MS);
  return new Promise((resolve) => {
    const started = performance.now();
    let messageStart = NaN;
    let firstBlock = NaN;
    let firstEvent: string | undefined;
    let firstDelta = NaN;
    let inputTokens = NaN;
    let error: string | undefined;
    let buffer = '';
    const finish = () => {
      clearInterval(sampler);
      const totalMs = performance.now() - started;
      let after = NaN;
      let hwm = NaN;
      try {
        const status = statusOf(pid);
        after = kib(status, 'VmRSS') / 1024;
        peak = Math.max(peak, after);
        if (hwmReset) hwm = kib(status, 'VmHWM') / 1024;
      } catch {
        error ??= 'server process gone';
      }
      if (stoppedForMemory) error = stoppedForMemory;
      const ok = !error && Number.isFinite(firstBlock);
      resolve({
        chunk, run, ok, ...(ok ? {} : { error: error ?? 'no content block' }), inputTokens,
        startMs: messageStart, prefillMs: firstBlock - messageStart, ttftMs: firstBlock, firstDeltaMs: firstDelta, totalMs,
        ...(firstEvent ? { firstEvent } : {}),
        rssBeforeMiB: before, peakOverIdleMiB: peak - server.idleMiB, peakDeltaMiB: peak - before, hwmDeltaMiB: hwm - before, rssAfterMiB: after, samples,
      });
    };
    const req = http.request(`${server.url}${new URL(captured.url, 'http://x').pathname}?beta=true`, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          const now = performance.now() - started;
          if (event === 'message_start') {
            messageStart = now;
            inputTokens = (JSON.parse(data!) as { message: { usage: { input_tokens: number } } }).message.usage.input_tokens;
          } else if (event === 'content_block_start' || event === 'content_block_delta') {
            const parsed = JSON.parse(data!) as { content_block?: { type: string }; delta?: { type: string } };
            if (Number.isNaN(firstBlock)) {
              firstBlock = now;
              firstEvent = `${event}(${parsed.content_block?.type ?? parsed.delta?.type})`;
            }
            if (event === 'content_block_delta' && Number.isNaN(firstDelta)) firstDelta = now;
          } else if (event === 'error') {
            error = data;
          }
        }
      });
      res.on('end', () => {
        if (res.statusCode !== 200) error = `HTTP ${res.statusCode}: ${buffer.slice(0, 400)}`;
        finish();
      });
      res.on('error', (e) => {
        error = String(e);
        finish();
      });
    });
    req.on('error', (e) => {
      error = String(e);
      finish();
    });
    req.end(body);
  });
}

/** A warm-up request: no tools, a few tokens, so the worker has loaded and run once before any measurement. */
function warmUp(server: ServerProcess, model: string): Promise<void> {
  const body = JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/v1/messages`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`warm-up: HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const settle = () => sleep(SETTLE_MS);
/** Stops a server once; does not wait forever for one that has already exited. */
const stopped = new WeakSet<ServerProcess>();
const stopQuietly = async (server: ServerProcess) => {
  if (stopped.has(server)) return;
  stopped.add(server);
  await Promise.race([server.stop().catch(() => {}), sleep(15_000)]);
};
const loadAverage = () => os.loadavg().map((l) => Number(l.toFixed(2)));
const fmt = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '—');
const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? (a / b).toFixed(2) : '—');
const chunkLabel = (chunk: number) => (chunk === ONE_PASS ? `one pass (${chunk})` : String(chunk));
/** Why a run failed, from its error and the server's log: a refused allocation, or the server process dying of one. */
const failure = (error: string | undefined) =>
  error?.includes(MACHINE_MEMORY_LOW) ? `${MACHINE_MEMORY_LOW} (MemAvailable < ${MACHINE_FLOOR_BYTES / GiB} GiB)`
  : /Failed to allocate memory/.test(error ?? '') ? 'out of memory budget: allocation refused'
  : /FATAL|Allocation failed|AllocateExternalBackingStore|aborted|socket hang up/i.test(error ?? '') ? 'server crashed: allocation past its memory budget'
  : 'failed';

const loadAtStart = loadAverage();
const benchStarted = performance.now();
const data: Record<string, unknown> = {
  fixture: values.fixture, url: `${new URL(captured.url, 'http://x').pathname}?beta=true`, anthropicBeta: headers['anthropic-beta'],
  bodyChars: bodyFor('x').length - 1, tools: capturedTools.length, chunks: CHUNKS, runs: RUNS, sampleMs: SAMPLE_MS, settleMs: SETTLE_MS,
  loadAverageAtStart: loadAtStart, subjects: {},
};
const rows: Array<Array<string | number>> = [];
const sweepRows: Array<Array<string | number>> = [];
const detailRows: Array<Array<string | number>> = [];
let budgetGiB = NaN;
const roundsBySubject: Record<string, number> = {};

for (const subject of SUBJECTS) {
  const config = JSON.parse(fs.readFileSync(path.join(folderOf(subject), 'config.json'), 'utf8')) as Record<string, number>;
  const heads = config.num_attention_heads!;
  /** One layer's attention scores in the largest forward pass: heads x min(chunk, prompt) x prompt x 4 bytes. */
  const scoresMiB = (chunk: number, tokens: number) => (heads * Math.min(chunk, tokens) * tokens * 4) / 2 ** 20;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-agent-'));
  fs.symlinkSync(folderOf(subject), path.join(dir, subject));
  const budget = Math.min(Number(values['memory-budget-gib']) * GiB, memAvailableBytes() - 3 * GiB);
  budgetGiB = budget / GiB;

  let servers = new Map<number, ServerProcess & { idleMiB: number }>();
  const idleMiB: Record<string, Record<number, number>> = {};
  let hwmReset = true;
  /** Fresh servers, one per chunk size, each warmed up and put under its address-space limit. */
  const startServers = async (phase: string) => {
    servers = new Map();
    // One after another: the first writes the last-position graph, the others reuse it.
    for (const chunk of CHUNKS) {
      const server = await startServerProcess(['--models-dir', dir], {
        REQUEST_TIMEOUT_MS: '0', PREFILL_CHUNK_TOKENS: String(chunk),
      });
      await warmUp(server, subject);
      const limit = Math.floor(kib(statusOf(server.pid), 'VmSize') * 1024 + budget);
      execFileSync('prlimit', ['--pid', String(server.pid), `--as=${limit}`]);
      hwmReset &&= resetPeak(server.pid);
      servers.set(chunk, Object.assign(server, { idleMiB: rssMiB(server.pid) }));
    }
    idleMiB[phase] = Object.fromEntries([...servers].map(([chunk, s]) => [chunk, s.idleMiB]));
    process.stderr.write(`${subject}: servers up for the ${phase} (idle RSS ${Object.values(idleMiB[phase]!).map((v) => v.toFixed(0)).join(' / ')} MiB), address-space budget ${budgetGiB.toFixed(1)} GiB over start-up, load ${loadAverage().join(' ')}\n`);
  };
  /** Chunk sizes that failed, with the error and the server's log. */
  const failed = new Map<number, string>();
  const measure = async (chunk: number, run: number, body: string, label: string) => {
    await settle();
    const server = servers.get(chunk)!;
    const logFrom = server.stderr().length;
    const result = await replay(server, chunk, run, body, hwmReset);
    if (!result.ok) {
      const log = server.stderr().slice(logFrom);
      result.serverLog = log.length > 4000 ? `${log.slice(0, 2000)}\n…\n${log.slice(-2000)}` : log;
    }
    process.stderr.write(`${subject} ${label} chunk ${chunk}: ${result.ok ? `${result.inputTokens} tokens, TTFT ${fmt(result.ttftMs)} ms (message_start ${fmt(result.startMs)} ms), peak RSS +${fmt(result.peakDeltaMiB)} MiB over before, +${fmt(result.peakOverIdleMiB)} over idle (VmHWM +${fmt(result.hwmDeltaMiB)})` : `failed: ${result.error}`} · load ${loadAverage().join(' ')}\n`);
    // A configuration that fails (out of its memory budget, most likely) fails the same way on a longer prompt.
    if (!result.ok) {
      failed.set(chunk, `${result.error ?? 'failed'} ${result.serverLog ?? ''}`);
      // Free what the failed server holds (its arena, grown to the budget) while the others run on.
      await stopQuietly(server);
    }
    return result;
  };

  // Shorter prompts first (ascending), so that memory the allocator keeps after a request (see
  // "held after") never hides what a later, longer one needs: peak over idle is each prompt's own.
  const sweep: Array<Run & { tools: number }> = [];
  const sweepTools = (SWEEP.get(subject) ?? []).filter((t) => t < capturedTools.length);
  if (sweepTools.length) {
    await startServers('sweep');
    for (const tools of sweepTools) {
      for (const chunk of CHUNKS) {
        if (failed.has(chunk)) continue;
        sweep.push({ ...(await measure(chunk, 0, bodyFor(subject, tools), `${tools} tools`)), tools });
      }
    }
    // The full request gets fresh servers: what the sweep left held must not count as its baseline.
    await Promise.all([...servers.values()].map(stopQuietly));
  }
  await startServers('full request');
  const runs: Run[] = [];
  const body = bodyFor(subject);
  let rounds = 0;
  for (let r = 0; r < RUNS; r++) {
    const roundStarted = performance.now();
    for (const chunk of CHUNKS) {
      if (failed.has(chunk)) continue;
      runs.push(await measure(chunk, r, body, `run ${r + 1}`));
    }
    rounds++;
    const roundMs = performance.now() - roundStarted;
    if (r + 1 < RUNS && performance.now() - benchStarted + roundMs > BUDGET_MS) {
      process.stderr.write(`${subject}: stopping after ${rounds} round(s): another (${(roundMs / 1000).toFixed(0)} s) would pass the ${values['budget-minutes']}-minute budget\n`);
      break;
    }
  }
  roundsBySubject[subject] = rounds;
  await Promise.all([...servers.values()].map(stopQuietly));
  fs.rmSync(dir, { recursive: true, force: true });

  const tokens = runs.find((x) => Number.isFinite(x.inputTokens))?.inputTokens ?? NaN;
  const of = (chunk: number) => runs.filter((x) => x.chunk === chunk && x.ok);
  const stat = (chunk: number, f: (x: Run) => number) => (of(chunk).length ? median(of(chunk).map(f)) : NaN);
  // Ratios to one pass; where one pass could not run, to the largest chunk that did (named in the row).
  const baseChunk = [...CHUNKS].sort((a, b) => b - a).find((c) => of(c).length > 0) ?? ONE_PASS;
  const base = { ttft: stat(baseChunk, (x) => x.ttftMs), peak: stat(baseChunk, (x) => x.peakOverIdleMiB) };
  for (const chunk of CHUNKS) {
    const ok = of(chunk);
    const attempted = runs.filter((x) => x.chunk === chunk).length;
    const ttft = stat(chunk, (x) => x.ttftMs);
    const overIdle = stat(chunk, (x) => x.peakOverIdleMiB);
    const prefill = stat(chunk, (x) => x.prefillMs);
    rows.push([
      subject, fmt(tokens), chunkLabel(chunk), fmt(Math.ceil(tokens / chunk)),
      `${ok.length}/${attempted}${failed.has(chunk) ? ` (${failure(failed.get(chunk))})` : ''}`,
      fmt(ttft), fmt(stat(chunk, (x) => x.startMs)), fmt(prefill), fmt((tokens / prefill) * 1000),
      fmt(stat(chunk, (x) => x.peakDeltaMiB)), fmt(overIdle), fmt(stat(chunk, (x) => x.rssAfterMiB - servers.get(chunk)!.idleMiB)), fmt(scoresMiB(chunk, tokens)),
      chunkLabel(baseChunk), ratio(ttft, base.ttft), ratio(overIdle, base.peak),
    ]);
  }
  const sweepBase = (tools: number) => sweep.find((x) => x.tools === tools && x.chunk === ONE_PASS && x.ok);
  for (const x of sweep) {
    const b = sweepBase(x.tools);
    sweepRows.push([
      subject, x.tools, fmt(x.inputTokens), chunkLabel(x.chunk), x.ok ? 'ok' : failure(`${x.error} ${x.serverLog}`), fmt(x.ttftMs), fmt((x.inputTokens / x.prefillMs) * 1000),
      fmt(x.peakOverIdleMiB), fmt(scoresMiB(x.chunk, x.inputTokens)), ratio(x.ttftMs, b?.ttftMs ?? NaN), ratio(x.peakOverIdleMiB, b?.peakOverIdleMiB ?? NaN),
    ]);
  }
  for (const x of runs) {
    detailRows.push([
      subject, chunkLabel(x.chunk), x.run + 1, x.ok ? 'ok' : failure(`${x.error} ${x.serverLog}`), fmt(x.ttftMs), fmt(x.startMs), fmt(x.totalMs),
      fmt(x.rssBeforeMiB), fmt(x.peakDeltaMiB), fmt(x.peakOverIdleMiB), fmt(x.hwmDeltaMiB), fmt(x.rssAfterMiB), x.firstEvent ?? '—',
    ]);
  }
  (data.subjects as Record<string, unknown>)[subject] = {
    folder: path.relative(process.cwd(), folderOf(subject)), maxPositions: config.max_position_embeddings, vocabSize: config.vocab_size,
    layers: config.num_hidden_layers, heads, kvHeads: config.num_key_value_heads, headDim: config.head_dim, promptTokens: tokens,
    fitsWindow: tokens < config.max_position_embeddings!,
    kvCacheMiB: (2 * config.num_hidden_layers! * config.num_key_value_heads! * config.head_dim! * 4 * tokens) / 2 ** 20,
    rounds, idleRssMiB: idleMiB, addressSpaceBudgetBytes: budget, vmHwmReset: hwmReset,
    failures: Object.fromEntries(failed), sweep, runs,
  };
}
const loadAtEnd = loadAverage();
data.loadAverageAtEnd = loadAtEnd;
data.wallSeconds = (performance.now() - benchStarted) / 1000;

const notes = [
  `Load average (1, 5, 15 min) at start ${loadAtStart.join(', ')}, at end ${loadAtEnd.join(', ')} on ${os.availableParallelism()} cores shared with other work: absolute times are noisy; within a subject every chunk size was measured interleaved (run r of each, then run r+1), each request after a ${SETTLE_MS} ms pause. Wall time ${fmt(data.wallSeconds as number)} s; up to ${RUNS} rounds per subject within a ${values['budget-minutes']}-minute budget (rounds run: ${Object.entries(roundsBySubject).map(([s, n]) => `${s} ${n}`).join(', ')}).`,
  `Request: ${values.fixture} (Claude Code 2.1.197's first turn: ${capturedTools.length} tools, ${data.bodyChars} characters) POSTed to ${data.url} with its captured headers (anthropic-beta included), the body as captured except model (the subject), max_tokens 1 and stream true. One server per chunk size (PREFILL_CHUNK_TOKENS; ${ONE_PASS} is one pass for these prompts), each warmed with a short request first.`,
  'TTFT: request sent to the first content-block event. With thinking on (adaptive, through the Qwen3 template\'s switch) the server forces the first token to `<think>`, which streams no text, so with max_tokens 1 there is no content_block_delta at all: the first event after message_start is the (empty) content block that the one token ends in, sent as soon as the prefill\'s token is taken. "To message_start" is the part before the prefill (body parse, chat template, tokenizing ~75k characters); prefill is message_start to that event.',
  `Memory: the server's VmRSS sampled every ${SAMPLE_MS} ms during the request. Peak Δ: peak minus VmRSS just before the request (what the brief asked for); peak over idle: peak minus the server's VmRSS after start-up and warm-up; held after: VmRSS after the request minus idle. Memory a request takes is mostly still held after it (onnxruntime's arena, uncollected JS buffers: held after ≈ peak over idle), so later runs of a configuration show a small peak Δ: the ratios use peak over idle. The sweep ran on its own servers; the full request on fresh ones. Scores: one layer's attention-scores tensor in the largest forward pass (heads × chunk × prompt tokens × 4 bytes); the graph (explicit MatMul → Mul → Add mask → Softmax) holds several of that size at once.`,
  `Every server runs under an address-space limit (prlimit --as: its size after start-up plus ${fmt(budgetGiB, 1)} GiB, i.e. min(${values['memory-budget-gib']} GiB, free memory − 3 GiB)), so a prefill that needs more fails in onnxruntime's allocator with an error (or, when the allocation that fails is V8's, the server process aborts) instead of waking the OOM killer on a shared machine; and a request during which the machine's MemAvailable falls below ${MACHINE_FLOOR_BYTES / GiB} GiB is stopped by killing its server. A configuration that failed is not run again (nor on longer prompts). Ratios are to one pass, or where one pass failed to the largest chunk size that ran ("ratios to"). A median of two runs is the lower one (report.ts percentile).`,
];
const tables: Table[] = [
  {
    title: `Claude Code's first turn: time to first token and server memory by prefill chunk (medians of the runs that ran: ${Object.entries(roundsBySubject).map(([s, n]) => `${s} ${n}`).join(', ')})`,
    columns: ['subject', 'prompt tokens', 'chunk', 'passes', 'runs ok', 'TTFT ms', 'to message_start ms', 'prefill ms', 'prefill tok/s', 'peak RSS Δ MiB', 'peak over idle MiB', 'held after MiB', 'scores MiB / layer', 'ratios to', 'TTFT ratio', 'peak over idle ratio'],
    rows,
  },
  ...(sweepRows.length ? [{
    title: 'The same request with its first N tools only (shorter prompts, one run each, ascending, before the full runs): time and memory against prompt length',
    columns: ['subject', 'tools', 'prompt tokens', 'chunk', 'result', 'TTFT ms', 'prefill tok/s', 'peak over idle MiB', 'scores MiB / layer', 'TTFT / one pass', 'peak / one pass'],
    rows: sweepRows,
  }] : []),
  {
    title: 'Every run of the full request',
    columns: ['subject', 'chunk', 'run', 'result', 'TTFT ms', 'to message_start ms', 'total ms', 'RSS before MiB', 'peak Δ MiB', 'peak over idle MiB', 'VmHWM Δ MiB', 'RSS after MiB', 'first event'],
    rows: detailRows,
  },
];
writeResults(values.name!, data, tables, notes);

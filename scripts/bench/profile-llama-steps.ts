/**
 * Where a decoding step's time goes on the llama.cpp engine (issue 41): the engine (src/engines/llama/
 * runner.ts) in this process on a GGUF file, `--streams` sequences decoding at once, with node-llama-cpp's
 * addon calls timed from JavaScript: the batch sizes actually sent to llama_decode, the time of each
 * decode call (llama.cpp's compute, on its threads), of each sampleToken call (the sampler chain over
 * the vocabulary, on libuv's pool), and the wall time per step, whose remainder is JavaScript and
 * scheduling (node-llama-cpp's dispatch, the runner, the callbacks).
 *
 *   npx tsx scripts/bench/profile-llama-steps.ts [--gguf FILE] [--streams 1,8] [--tokens 64] [--threads 2] [--mask]
 *
 * Each table also gives the CPU time per token, all threads and the JavaScript thread's (Linux /proc):
 * on a loaded machine the wall times swing, CPU time much less.
 *
 * `--mask`: every sequence has a logits mask that allows every token but the end ids (what ignore_eos
 * costs: a small logit bias). Prints one table per stream count; writes nothing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { loadLlamaModel } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import type { LogitsMask, SequenceSpec } from '../../src/engines/sequence.js';
import { scanModels } from '../../src/models/registry.js';
import { ensureTestGguf, TEST_GGUF_FILE, TEST_GGUF_MODEL } from '../builders/gguf/test-model.js';

const { values } = parseArgs({
  options: {
    gguf: { type: 'string' },
    streams: { type: 'string', default: '1,8' },
    tokens: { type: 'string', default: '64' },
    prompt: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
    mask: { type: 'boolean', default: false },
    'server-env': { type: 'string', default: '' },
  },
});
const TOKENS = Number(values.tokens);
const STREAMS = values.streams!.split(',').map(Number);
let gguf = values.gguf && path.resolve(values.gguf);
if (!gguf) {
  const modelsDir = path.resolve('test-artifacts/models-gguf');
  ensureTestGguf({ bundledDir: path.resolve('models'), modelsDir, embedModelsDir: path.resolve('test-artifacts/models-gguf-embed') });
  gguf = path.join(modelsDir, TEST_GGUF_MODEL, TEST_GGUF_FILE);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-llama-'));
fs.mkdirSync(path.join(dir, 'm'));
fs.symlinkSync(gguf, path.join(dir, 'm', path.basename(gguf)));
fs.writeFileSync(path.join(dir, 'm', 'manifest.json'), JSON.stringify({ contextLength: 4096 }));
const info = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models[0]!;
const settings = Object.fromEntries(values['server-env']!.split(',').filter(Boolean).map((kv) => kv.split('=')));
const engine = { ...ENGINE_DEFAULTS, intraOpThreads: Number(values.threads), generationBatchSize: Math.max(...STREAMS), ...settings };
const loaded = await loadLlamaModel(info, engine as typeof ENGINE_DEFAULTS);
const runner = llamaEngine(loaded);

// The addon's context (its methods are read-only): behind a proxy that times the calls node-llama-cpp
// makes. The first room's (./layout.ts): the profiled streams fit it.
const holder = loaded.contexts?.[0] as unknown as { _ctx: Record<string, (...args: unknown[]) => unknown> };
const ctx = holder._ctx;
const log = { batches: [] as number[], decodeMs: [] as number[], sampleMs: [] as number[] };
let pending = 0;
const timed = async (into: number[], call: () => unknown) => {
  const t = performance.now();
  try {
    return await call();
  } finally {
    into.push(performance.now() - t);
  }
};
const wrappers: Record<string, (...args: unknown[]) => unknown> = {
  initBatch: (size) => ((pending = size as number), ctx.initBatch!(size)),
  decodeBatch: () => (log.batches.push(pending), timed(log.decodeMs, () => ctx.decodeBatch!())),
  sampleToken: (...args) => timed(log.sampleMs, () => ctx.sampleToken!(...args)),
};
holder._ctx = new Proxy(ctx, {
  get: (target, prop) => wrappers[prop as string] ?? (typeof target[prop as string] === 'function' ? target[prop as string]!.bind(target) : target[prop as string]),
});

const vocab = loaded.vocabSize;
const noEnd: LogitsMask = new Uint32Array(Math.ceil(vocab / 32)).fill(-1 >>> 0);
for (const id of loaded.eosTokenIds) noEnd[id >>> 5]! &= ~(1 << (id & 31));
const spec = (variant: number): SequenceSpec => ({
  promptIds: Array.from({ length: Number(values.prompt) }, (_, i) => 1000 + ((i * 7919 + variant * 104729) % 30000)),
  maxTokens: TOKENS,
  sampling: { doSample: false, temperature: 0, topK: 0, topP: 1 },
  onToken: () => false,
  cancelled: () => false,
  ...(values.mask ? { logitsMask: () => noEnd } : {}),
});
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const mean = (xs: number[]) => (xs.length ? sum(xs) / xs.length : NaN);

/**
 * CPU time (ms) of each of this process's threads, by thread id, from /proc (Linux; empty elsewhere):
 * robust to a loaded machine where wall times are not. The JavaScript thread is the process's own id;
 * llama.cpp's decode and sampleToken run on libuv's pool threads (one llama.cpp thread: the pool
 * thread itself).
 */
function threadCpuMs(): Map<string, number> {
  const tick = 10; // USER_HZ 100
  const out = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const fields = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      out.set(tid, (Number(fields[11]) + Number(fields[12])) * tick);
    }
  } catch { /* not Linux */ }
  return out;
}

for (const streams of [...STREAMS, ...STREAMS]) {
  log.batches = [];
  log.decodeMs = [];
  log.sampleMs = [];
  const cpuBefore = threadCpuMs();
  const started = performance.now();
  await Promise.all(Array.from({ length: streams }, (_, i) => runner.run(spec(i + streams * 10))));
  const wall = performance.now() - started;
  const cpu = [...threadCpuMs()].map(([tid, ms]) => [tid, ms - (cpuBefore.get(tid) ?? 0)] as const);
  const jsCpu = cpu.find(([tid]) => tid === String(process.pid))?.[1] ?? NaN;
  const allCpu = sum(cpu.map(([, ms]) => ms));
  // Steps after the prefills: the batches of one token per sequence.
  const steps = log.batches.map((b, i) => [b, log.decodeMs[i]!] as const).filter(([b]) => b <= streams);
  const decodeSteps = steps.length;
  process.stdout.write([
    `${streams} streams × ${TOKENS} tokens${values.mask ? ', masked' : ''}: wall ${wall.toFixed(0)} ms, ${((streams * TOKENS * 1000) / wall).toFixed(1)} tok/s aggregate (load ${os.loadavg()[0]!.toFixed(1)})`,
    `  decode calls ${log.batches.length} (of them one-token steps ${decodeSteps}), mean step batch ${mean(steps.map(([b]) => b)).toFixed(2)} tokens (ideal ${streams}); batch sizes: ${JSON.stringify(histogram(steps.map(([b]) => b)))}`,
    `  llama_decode per step ${mean(steps.map(([, ms]) => ms)).toFixed(2)} ms, all decode calls ${sum(log.decodeMs).toFixed(0)} ms = ${((100 * sum(log.decodeMs)) / wall).toFixed(0)}% of wall`,
    `  sampleToken ${log.sampleMs.length} calls, mean ${mean(log.sampleMs).toFixed(2)} ms, sum ${sum(log.sampleMs).toFixed(0)} ms`,
    `  wall per step ${(wall / Math.max(1, decodeSteps)).toFixed(2)} ms; outside decode ${(((wall - sum(log.decodeMs)) / Math.max(1, decodeSteps))).toFixed(2)} ms per step`,
    `  CPU per token: ${(allCpu / (streams * TOKENS)).toFixed(2)} ms in all threads, of it ${(jsCpu / (streams * TOKENS)).toFixed(2)} ms on the JavaScript thread (the rest: llama.cpp on libuv's pool, V8's helpers)`,
    '',
  ].join('\n'));
}

function histogram(xs: number[]): Record<number, number> {
  const h: Record<number, number> = {};
  for (const x of xs) h[x] = (h[x] ?? 0) + 1;
  return h;
}
for (const context of loaded.contexts ?? []) await context.dispose();
await loaded.model.dispose();
fs.rmSync(dir, { recursive: true, force: true });
process.exit(0);

/**
 * Rerank throughput on a cross-encoder (the bundled tiny-bert-reranker-random, which
 * scripts/builders/bundled/test-reranker.ts builds: BERT shape, random weights, real WordPiece
 * tokenizer), all measured in one run:
 * - 32 concurrent requests of 1 query x 10 documents, dynamic batching on against off (off: one
 *   request's pairs per forward pass); goal >= 2x on two cores;
 * - where those 32 requests' time goes: the HTTP floor (the same 32 bodies refused by validation,
 *   so no worker runs), and the worker's rerank code in process (src/engines/onnx/rerank.ts) on the
 *   same 320 pairs: tokenizing alone, all 32 requests in one call (batching on) against 32 calls of
 *   one (off), which bounds what batching can gain whatever the server does;
 * - 1 query x 100 documents in one request: the server against transformers.js scoring the same
 *   pairs in process (tokenizer pairs, one forward pass); goal >= 0.95x.
 * The servers run as child processes (src/main.ts under tsx), one per setting, both at once on a
 * models folder holding only the reranker (linked from models/), their bursts taking turns, so
 * other work on a shared machine weighs on both alike; server CPU time per burst is reported too.
 *
 *   npm run bench:rerank [-- --rounds 3 --bursts 20] [--intra-op-threads 1]
 *
 * Results: bench/results/rerank.{json,md}, naming the CPU and its instruction sets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AutoModel, AutoTokenizer, env, Tensor, type PreTrainedModel, type PreTrainedTokenizer } from '@huggingface/transformers';
import { BUNDLED_MODELS, ensureBundledModels } from '../builders/bundled/index.js';
import { TEST_RERANKER_SHAPE } from '../builders/bundled/test-reranker.js';
import { rerankPairs } from '../../src/engines/onnx/rerank.js';
import type { LoadedModel } from '../../src/engines/onnx/loaded-model.js';
import { median, writeResults } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, bursts: { type: 'string', default: '20' }, 'intra-op-threads': { type: 'string' } } });
/** Passed to both servers (--intra-op-threads); the results then go to rerank-intra-op-N.{json,md}. */
const INTRA_OP = values['intra-op-threads'];
const ROUNDS = Number(values.rounds);
/** Bursts of 32 requests per server start; a setting's figure is their median. */
const BURSTS = Number(values.bursts);
const MODEL = 'tiny-bert-reranker-random';
const CONCURRENT = 32;
/** The server's default --embed-batch-tokens: the worker's padded tokens per forward pass. */
const MAX_BATCH_TOKENS = 16_384;
const WORDS = 'the cat sleeps on the sofa while a kitten naps by the sunny window and the dog sits on the rug near the couch'.split(' ');
const doc = (i: number, length: number) => Array.from({ length }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ') + '.';
const QUERY = 'where do cats sleep?';
const ten = (r: number) => Array.from({ length: 10 }, (_, i) => doc(r * 10 + i, 12));
const hundred = Array.from({ length: 100 }, (_, i) => doc(i, 12));
/** Times the 1 x 100 request is measured, each way (median). */
const HUNDRED_REPEATS = 9;

ensureBundledModels({ modelsDir: path.resolve('models'), models: BUNDLED_MODELS.filter((m) => m.manifest.id === MODEL), log: () => {} });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-rerank-'));
fs.symlinkSync(path.resolve('models', MODEL), path.join(dir, MODEL));

async function post(url: string, body: unknown, status = 200): Promise<void> {
  const res = await fetch(`${url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== status) throw new Error(`rerank answered ${res.status}: ${await res.text()}`);
  await res.json();
}

/**
 * CPU ms a process has used (user + system, every thread: the server's worker threads count), from
 * /proc (clock ticks of 10 ms); NaN where there is no /proc. Unlike wall time, barely moved by other
 * work on the machine.
 */
function processCpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU ms this process (the client) spent on the last burst: it shares the machine's cores with the server. */
let clientCpuMs = 0;

/** ms for CONCURRENT requests sent at once, each built by `body`. */
async function burst(url: string, body: (r: number) => unknown, status = 200): Promise<number> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENT }, (_, r) => post(url, body(r), status)));
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  clientCpuMs = (used.user + used.system) / 1000;
  return elapsed;
}

interface ServerFigures {
  /** Requests per second of CONCURRENT requests of 1 x 10 (from the median burst). */
  concurrentRps: number;
  /** ms of CONCURRENT requests of the same bodies that validation refuses (no worker runs). */
  httpFloorMs: number;
  /** ms of one 1 x 100 request. */
  hundredMs: number;
  /** CPU ms the benchmark's client (fetch) spent per burst of ranked requests. */
  clientCpuMs: number;
  /** CPU ms the server process (main thread and workers) spent per burst of ranked requests, averaged over the bursts. */
  serverCpuMs: number;
}

const ranked = (r: number) => ({ model: MODEL, query: QUERY, documents: ten(r) });
const refused = (r: number) => ({ model: MODEL, query: '', documents: ten(r) });

/** One server's bursts, gathered while the other setting's server takes turns with it. */
class Subject {
  readonly bursts: number[] = [];
  readonly floors: number[] = [];
  readonly client: number[] = [];
  serverCpu = 0;
  constructor(readonly server: ServerProcess) {}

  async warmUp(): Promise<void> {
    await burst(this.server.url, ranked);
    await burst(this.server.url, refused, 400);
  }

  async measure(): Promise<void> {
    const cpu = processCpuMs(this.server.pid);
    this.bursts.push(await burst(this.server.url, ranked));
    this.serverCpu += processCpuMs(this.server.pid) - cpu;
    this.client.push(clientCpuMs);
    this.floors.push(await burst(this.server.url, refused, 400));
  }

  async figures(): Promise<ServerFigures> {
    await post(this.server.url, { model: MODEL, query: QUERY, documents: hundred });
    const times: number[] = [];
    for (let i = 0; i < HUNDRED_REPEATS; i++) {
      const t = performance.now();
      await post(this.server.url, { model: MODEL, query: QUERY, documents: hundred });
      times.push(performance.now() - t);
    }
    return { concurrentRps: CONCURRENT / (median(this.bursts) / 1000), httpFloorMs: median(this.floors), hundredMs: median(times), clientCpuMs: median(this.client), serverCpuMs: this.serverCpu / this.bursts.length };
  }
}

/**
 * Both settings' servers at once, their bursts taking turns (the order swapped every time), so both
 * see the same moments of whatever else runs on the machine; each pair of neighbouring bursts gives
 * one on/off ratio.
 */
async function serverRuns(): Promise<{ on: ServerFigures; off: ServerFigures; ratios: number[] }> {
  const start = (batching: boolean) =>
    startServerProcess(['--models-dir', dir, '--hf-cache', 'false', '--embed-batching', String(batching), ...(INTRA_OP ? ['--intra-op-threads', INTRA_OP] : [])]);
  const [on, off] = [new Subject(await start(true)), new Subject(await start(false))];
  try {
    await on.warmUp();
    await off.warmUp();
    for (let i = 0; i < BURSTS; i++) {
      for (const subject of i % 2 === 0 ? [on, off] : [off, on]) await subject.measure();
    }
    const ratios = on.bursts.map((ms, i) => off.bursts[i]! / ms);
    return { on: await on.figures(), off: await off.figures(), ratios };
  } finally {
    await on.server.stop();
    await off.server.stop();
  }
}

const timed = async (work: () => unknown, repeats = 5): Promise<number> => {
  await work();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    await work();
    times.push(performance.now() - t);
  }
  return median(times);
};

interface InProcessFigures {
  /** The worker's rerank code on the 320 pairs of the 32 requests: tokenizing and building the tensors only (a model that answers zeros). */
  tokenizeMs: number;
  /** The worker's former tokenizing of the same 320 pairs: transformers.js's pair call per pair, and the document again for its count. */
  pairCallMs: number;
  /** The worker's rerank code: all 32 requests in one call (batching on). */
  workerOnMs: number;
  /** The worker's rerank code: 32 calls of one request (batching off). */
  workerOffMs: number;
  /** transformers.js in process: the 100 pairs tokenized as pairs and scored in one forward pass. */
  hundredMs: number;
  /** The worker's rerank code on the 1 x 100 request. */
  workerHundredMs: number;
}

async function inProcess(): Promise<InProcessFigures> {
  env.allowRemoteModels = false;
  env.localModelPath = `${dir}/`;
  const tokenizer: PreTrainedTokenizer = await AutoTokenizer.from_pretrained(MODEL);
  // The servers' thread setting, when one is given, so both sides run the same onnxruntime threads.
  const model: PreTrainedModel = await AutoModel.from_pretrained(MODEL, { dtype: 'fp32', ...(INTRA_OP ? { session_options: { intraOpNumThreads: Number(INTRA_OP), interOpNumThreads: 1 } } : {}) });
  const inputNames = ['input_ids', 'attention_mask', 'token_type_ids'];
  const info = { id: MODEL, contextLength: TEST_RERANKER_SHAPE.maxPositions };
  const loaded = { tokenizer, model, inputNames, info } as unknown as LoadedModel;
  const zeros = { tokenizer, inputNames, info, model: async (feeds: Record<string, Tensor>) => ({ logits: new Tensor('float32', new Float32Array(feeds.input_ids!.dims[0]!), [feeds.input_ids!.dims[0]!, 1]) }) } as unknown as LoadedModel;
  const requests = Array.from({ length: CONCURRENT }, (_, r) => ({ query: QUERY, documents: ten(r) }));
  const options = { maxBatchTokens: MAX_BATCH_TOKENS, truncate: false };
  const figures: InProcessFigures = {
    tokenizeMs: await timed(() => rerankPairs(zeros, requests, options)),
    pairCallMs: await timed(() =>
      requests.map((r) =>
        r.documents.map((d) => [tokenizer._call(r.query, { text_pair: d, return_token_type_ids: true, return_tensor: false }), tokenizer.encode(d, { add_special_tokens: false })]),
      ),
    ),
    workerOnMs: await timed(() => rerankPairs(loaded, requests, options)),
    workerOffMs: await timed(async () => {
      for (const request of requests) await rerankPairs(loaded, [request], options);
    }),
    hundredMs: await timed(async () => {
      const inputs = tokenizer(Array(hundred.length).fill(QUERY), { text_pair: hundred, padding: true, truncation: true });
      await model(inputs);
    }, HUNDRED_REPEATS),
    workerHundredMs: await timed(() => rerankPairs(loaded, [{ query: QUERY, documents: hundred }], options), HUNDRED_REPEATS),
  };
  await model.dispose();
  return figures;
}

const rounds: Array<{ on: ServerFigures; off: ServerFigures; ratios: number[]; inProcess: InProcessFigures; loadAverage: number }> = [];
for (let round = 0; round < ROUNDS; round++) {
  const { on, off, ratios } = await serverRuns();
  rounds.push({ on, off, ratios, inProcess: await inProcess(), loadAverage: os.loadavg()[0]! });
  console.log(`round ${round + 1}: ${JSON.stringify(rounds.at(-1))}`);
}
fs.rmSync(dir, { recursive: true, force: true });
const of = (pick: (r: (typeof rounds)[number]) => number) => median(rounds.map(pick));
/** The median of every neighbouring pair of bursts' ratio, over all rounds. */
const batchingRatio = median(rounds.flatMap((r) => r.ratios));
const inProcessRatio = of((r) => r.inProcess.hundredMs / r.on.hundredMs);
const ms = (rps: number) => (CONCURRENT / rps) * 1000;
const setting = INTRA_OP ? `, both servers with --intra-op-threads ${INTRA_OP}` : '';
writeResults(INTRA_OP ? `rerank-intra-op-${INTRA_OP}` : 'rerank', { model: MODEL, concurrent: CONCURRENT, bursts: BURSTS, intraOpThreads: INTRA_OP ?? 'default', rounds }, [
  {
    title: `Rerank on the bundled test cross-encoder (${MODEL}: BERT shape, hidden ${TEST_RERANKER_SHAPE.hiddenSize}, ${TEST_RERANKER_SHAPE.numLayers} layers), medians of ${ROUNDS} rounds${setting}`,
    columns: ['measure', 'value', 'goal'],
    rows: [
      [`${CONCURRENT} concurrent 1x10 requests, batching on (req/s)`, of((r) => r.on.concurrentRps), ''],
      [`${CONCURRENT} concurrent 1x10 requests, batching off (req/s)`, of((r) => r.off.concurrentRps), ''],
      ['batching on / off (median over neighbouring bursts)', batchingRatio, '>= 2'],
      ['one 1x100 request through the server (ms)', of((r) => r.on.hundredMs), ''],
      ['the same 100 pairs by transformers.js in process (ms)', of((r) => r.inProcess.hundredMs), ''],
      ['  the worker\'s rerank code on them in process (ms)', of((r) => r.inProcess.workerHundredMs), ''],
      ['server speed / in process (in-process ms over server ms)', inProcessRatio, '>= 0.95'],
    ],
  },
  {
    title: `Where the ${CONCURRENT} concurrent 1x10 requests' time goes (ms for all ${CONCURRENT}; the worker's code timed in process)`,
    columns: ['measure', 'ms'],
    rows: [
      ['through the server, batching on', of((r) => ms(r.on.concurrentRps))],
      ['through the server, batching off', of((r) => ms(r.off.concurrentRps))],
      ['HTTP floor: the same bodies refused by validation (no worker), batching on', of((r) => r.on.httpFloorMs)],
      ['server CPU (main thread and workers) per burst, batching on', of((r) => r.on.serverCpuMs)],
      ['server CPU (main thread and workers) per burst, batching off', of((r) => r.off.serverCpuMs)],
      ['server CPU off / on', of((r) => r.off.serverCpuMs / r.on.serverCpuMs)],
      ['the benchmark client\'s own CPU per burst of ranked requests (fetch, on the same 2 cores)', of((r) => r.on.clientCpuMs)],
      ['worker code: tokenizing the 320 pairs and building tensors (a model answering zeros)', of((r) => r.inProcess.tokenizeMs)],
      ['  the worker\'s former tokenizing (transformers.js pair call per pair, the document again for its count), for comparison', of((r) => r.inProcess.pairCallMs)],
      ['worker code: the 32 requests in one call (as batching on gives it)', of((r) => r.inProcess.workerOnMs)],
      ['worker code: 32 calls of one request (as batching off gives it)', of((r) => r.inProcess.workerOffMs)],
      ['worker code alone, off / on (tokenizing and forward passes; the rest of the gain is per-task cost)', of((r) => r.inProcess.workerOffMs / r.inProcess.workerOnMs)],
    ],
  },
], [
  'The test reranker is tiny: a forward pass costs little next to HTTP and tokenizing, so the ratios measure the server\'s own overhead more than the model.',
  `Load average (1 min) at the end of each round: ${rounds.map((r) => r.loadAverage.toFixed(2)).join(', ')} (2 cores; other work on the machine shows here).`,
]);
console.log(`batching on/off ${batchingRatio.toFixed(2)}, server/in-process ${inProcessRatio.toFixed(2)}`);

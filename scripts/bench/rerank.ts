/**
 * Rerank throughput on a cross-encoder (the BERT-shaped test reranker scripts/builders/bundled/
 * test-reranker.ts builds: random weights, real WordPiece tokenizer), all measured in one run:
 * - 32 concurrent requests of 1 query x 10 documents, dynamic batching on against off (off: one
 *   request's pairs per forward pass); goal >= 2x on two cores;
 * - 1 query x 100 documents in one request: the server against transformers.js scoring the same
 *   pairs in process (tokenizer pairs, one forward pass); goal >= 0.95x.
 * The server runs as a child process (src/main.ts under tsx), once per setting, on a models folder
 * holding only the reranker.
 *
 *   npm run bench:rerank [-- --rounds 3]
 *
 * Results: bench/results/rerank.{json,md}, naming the CPU and its instruction sets.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AutoModel, AutoTokenizer, env } from '@huggingface/transformers';
import { buildTestReranker } from '../builders/bundled/test-reranker.js';
import { median, writeResults } from './report.js';
import { startServerProcess } from './server-process.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const MODEL = 'test-reranker';
const CONCURRENT = 32;
const WORDS = 'the cat sleeps on the sofa while a kitten naps by the sunny window and the dog sits on the rug near the couch'.split(' ');
const doc = (i: number, length: number) => Array.from({ length }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ') + '.';
const QUERY = 'where do cats sleep?';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-rerank-'));
buildTestReranker({ dir: path.join(dir, MODEL), progress: () => {} });

async function rerank(url: string, documents: string[]): Promise<void> {
  const res = await fetch(`${url}/v1/rerank`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, query: QUERY, documents }) });
  if (res.status !== 200) throw new Error(`rerank answered ${res.status}: ${await res.text()}`);
  await res.json();
}

/** Requests per second of CONCURRENT requests of 1 x 10, and the time of one 1 x 100 request (ms). */
async function serverRun(batching: boolean): Promise<{ concurrentRps: number; hundredMs: number }> {
  const server = await startServerProcess(['--models-dir', dir, '--hf-cache', 'false', '--embed-batching', String(batching)]);
  try {
    const ten = (r: number) => Array.from({ length: 10 }, (_, i) => doc(r * 10 + i, 12));
    await rerank(server.url, ten(0)); // warm-up
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, (_, r) => rerank(server.url, ten(r))));
    const concurrentRps = CONCURRENT / ((performance.now() - started) / 1000);
    const hundred = Array.from({ length: 100 }, (_, i) => doc(i, 12));
    await rerank(server.url, hundred);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await rerank(server.url, hundred);
      times.push(performance.now() - t);
    }
    return { concurrentRps, hundredMs: median(times) };
  } finally {
    await server.stop();
  }
}

/** transformers.js in process: the same 100 pairs tokenized as pairs and scored in one forward pass (ms). */
async function inProcess(): Promise<number> {
  env.allowRemoteModels = false;
  env.localModelPath = `${dir}/`;
  const tokenizer = await AutoTokenizer.from_pretrained(MODEL);
  const model = await AutoModel.from_pretrained(MODEL, { dtype: 'fp32' });
  const hundred = Array.from({ length: 100 }, (_, i) => doc(i, 12));
  const score = async () => {
    const inputs = tokenizer(Array(hundred.length).fill(QUERY), { text_pair: hundred, padding: true, truncation: true });
    await model(inputs);
  };
  await score();
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await score();
    times.push(performance.now() - t);
  }
  await model.dispose();
  return median(times);
}

const rounds: Array<{ on: Awaited<ReturnType<typeof serverRun>>; off: Awaited<ReturnType<typeof serverRun>>; inProcessMs: number }> = [];
for (let round = 0; round < ROUNDS; round++) {
  const on = await serverRun(true);
  const off = await serverRun(false);
  const inProcessMs = await inProcess();
  rounds.push({ on, off, inProcessMs });
  console.log(`round ${round + 1}: ${JSON.stringify(rounds.at(-1))}`);
}
fs.rmSync(dir, { recursive: true, force: true });
const batchingRatio = median(rounds.map((r) => r.on.concurrentRps / r.off.concurrentRps));
const inProcessRatio = median(rounds.map((r) => r.inProcessMs / r.on.hundredMs));
writeResults('rerank', { model: MODEL, concurrent: CONCURRENT, rounds }, [{
  title: `Rerank on the test cross-encoder (BERT shape, hidden 32, 2 layers), medians of ${ROUNDS} rounds`,
  columns: ['measure', 'value', 'goal'],
  rows: [
    [`${CONCURRENT} concurrent 1x10 requests, batching on (req/s)`, median(rounds.map((r) => r.on.concurrentRps)), ''],
    [`${CONCURRENT} concurrent 1x10 requests, batching off (req/s)`, median(rounds.map((r) => r.off.concurrentRps)), ''],
    ['batching on / off', batchingRatio, '>= 2'],
    ['one 1x100 request through the server (ms)', median(rounds.map((r) => r.on.hundredMs)), ''],
    ['the same 100 pairs by transformers.js in process (ms)', median(rounds.map((r) => r.inProcessMs)), ''],
    ['server speed / in process (in-process ms over server ms)', inProcessRatio, '>= 0.95'],
  ],
}], ['The test reranker is tiny: a forward pass costs little next to HTTP and tokenizing, so the ratios measure the server\'s own overhead more than the model.']);
console.log(`batching on/off ${batchingRatio.toFixed(2)}, server/in-process ${inProcessRatio.toFixed(2)}`);

/**
 * Embedding throughput and latency under concurrency, in one run on this machine:
 *   (a) the server with dynamic batching, (b) the server with batching off (one task per request),
 *   (c) the same model called in-process with transformers.js, in batches of the concurrency's size.
 * Clients send one input per request in a closed loop; c concurrent clients for a fixed time.
 *
 *   npm run bench:embeddings [-- --seconds 4 --concurrency 1,4,16,64 --subjects glove-sif-100d,minilm-l6-shape-random]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AutoModel, AutoTokenizer, Tensor } from '@huggingface/transformers';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { BENCH_MODELS, ensureBundledModels } from '../builders/bundled/index.js';
import { percentile, writeResults } from './report.js';
import { startServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '1,4,16,64' },
    subjects: { type: 'string', default: 'glove-sif-100d,minilm-l6-shape-random' },
    'intra-op-threads': { type: 'string', default: '0' },
    'ort-allow-spinning': { type: 'string', default: 'true' },
    'batch-wait-ms': { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = values.concurrency!.split(',').map(Number);
const SUBJECTS = values.subjects!.split(',');

ensureBundledModels({ modelsDir: path.resolve('models') });
ensureBundledModels({ modelsDir: path.resolve('bench/models'), models: BENCH_MODELS });
// One models folder holding both subjects (symlinks), for the server processes.
const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-models-'));
for (const [dir, id] of [['models', 'glove-sif-100d'], ['bench/models', 'minilm-l6-shape-random']] as const) {
  fs.symlinkSync(path.resolve(dir, id), path.join(modelsDir, id));
}

// Deterministic English-like inputs: about 10 and about 200 tokens.
const VOCAB = 'the a of river city people music market bright quiet storm garden paper engine report friend window history simple ancient travel morning answer science little number orange between several through'.split(' ');
function text(seed: number, words: number): string {
  let x = seed * 2654435761 >>> 0;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out.push(VOCAB[x % VOCAB.length]!);
  }
  return out.join(' ') + '.';
}
const LENGTHS = { short: 9, long: 199 } as const;

interface Figures { perSecond: number; p50: number; p99: number; samples: number }

/** A lean keep-alive HTTP client (node:http): the load generator shares the machine's two cores with the server. */
function poster(url: string, concurrency: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(`${url}/v1/embeddings`);
  return (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks)}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
}

async function loadHttp(url: string, model: string, words: number, concurrency: number): Promise<Figures> {
  const send = poster(url, concurrency);
  const post = async (seed: number) => {
    const started = performance.now();
    await send(JSON.stringify({ model, input: text(seed, words), encoding_format: 'base64' }));
    return performance.now() - started;
  };
  for (let i = 0; i < concurrency; i++) await post(i); // warm up connections and the model
  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  let seed = 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < deadline) latencies.push(await post(seed++));
  }));
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), samples: latencies.length };
}

async function loadInProcess(model: string, words: number, batch: number): Promise<Figures> {
  useLocalModels(modelsDir);
  const tokenizer = await AutoTokenizer.from_pretrained(model);
  const encoder = await AutoModel.from_pretrained(model, { dtype: 'fp32' });
  const run = async (seed: number) => {
    const started = performance.now();
    const texts = Array.from({ length: batch }, (_, i) => text(seed + i, words));
    const inputs = tokenizer(texts, { padding: true }) as Record<string, Tensor>;
    const feeds: Record<string, Tensor> = { input_ids: inputs.input_ids!, attention_mask: inputs.attention_mask! };
    if (inputs.token_type_ids) feeds.token_type_ids = inputs.token_type_ids;
    const { last_hidden_state: hidden } = await encoder(feeds);
    // Mean pooling over real tokens and L2 normalisation, as the server does.
    const [b, s, d] = hidden.dims as number[];
    const data = hidden.data as Float32Array;
    const mask = inputs.attention_mask!.data as BigInt64Array;
    for (let r = 0; r < b!; r++) {
      const v = new Float32Array(d!);
      let n = 0;
      for (let t = 0; t < s!; t++) {
        if (mask[r * s! + t] === 0n) continue;
        n++;
        for (let k = 0; k < d!; k++) v[k]! += data[(r * s! + t) * d! + k]!;
      }
      let norm = 0;
      for (let k = 0; k < d!; k++) norm += (v[k]! / n) ** 2;
      for (let k = 0; k < d!; k++) v[k] = v[k]! / n / Math.sqrt(norm);
    }
    return performance.now() - started;
  };
  await run(0);
  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  let seed = 1000;
  while (performance.now() < deadline) {
    latencies.push(await run(seed));
    seed += batch;
  }
  const elapsed = (performance.now() - started) / 1000;
  await encoder.dispose();
  return { perSecond: (latencies.length * batch) / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), samples: latencies.length * batch };
}

const serverEnv = { INTRA_OP_THREADS: values['intra-op-threads']!, ORT_ALLOW_SPINNING: values['ort-allow-spinning']!, ...(values['batch-wait-ms'] ? { EMBED_BATCH_WAIT_MS: values['batch-wait-ms'] } : {}) };
type Mode = 'batching' | 'unbatched' | 'inProcess';
const results: Array<{ subject: string; length: string; concurrency: number } & Record<Mode, Figures>> = [];
const servers = {
  batching: await startServerProcess(['--models-dir', modelsDir, '--embed-batching', 'on'], serverEnv),
  unbatched: await startServerProcess(['--models-dir', modelsDir, '--embed-batching', 'off'], serverEnv),
};
try {
  for (const subject of SUBJECTS) {
    for (const [length, words] of Object.entries(LENGTHS)) {
      for (const concurrency of CONCURRENCY) {
        const row = {
          subject, length, concurrency,
          batching: await loadHttp(servers.batching.url, subject, words, concurrency),
          unbatched: await loadHttp(servers.unbatched.url, subject, words, concurrency),
          inProcess: await loadInProcess(subject, words, concurrency),
        };
        results.push(row);
        process.stderr.write(`${subject} ${length} c=${concurrency}: ${row.batching.perSecond.toFixed(1)} / ${row.unbatched.perSecond.toFixed(1)} / ${row.inProcess.perSecond.toFixed(1)} emb/s\n`);
      }
    }
  }
} finally {
  await servers.batching.stop();
  await servers.unbatched.stop();
  fs.rmSync(modelsDir, { recursive: true, force: true });
}

writeResults('embeddings', results, SUBJECTS.map((subject) => ({
  title: subject,
  columns: ['input', 'concurrency', '(a) batching emb/s', 'p50 ms', 'p99 ms', '(b) unbatched emb/s', 'p50 ms', 'p99 ms', '(c) in-process emb/s', 'batch p50 ms', 'a/b', 'a/c'],
  rows: results.filter((r) => r.subject === subject).map((r) => [
    r.length, r.concurrency,
    r.batching.perSecond, r.batching.p50, r.batching.p99,
    r.unbatched.perSecond, r.unbatched.p50, r.unbatched.p99,
    r.inProcess.perSecond, r.inProcess.p50,
    r.batching.perSecond / r.unbatched.perSecond, r.batching.perSecond / r.inProcess.perSecond,
  ]),
})), [
  `Each client sends one input per request (short ≈ ${LENGTHS.short + 1} words, long ≈ ${LENGTHS.long + 1} words), in a closed loop for ${SECONDS} s; encoding_format base64.`,
  '(a) and (b) are src/main.ts in a child process (1 worker per model, onnxruntime default threads); (c) is transformers.js in the bench process on the same files, one batch of `concurrency` inputs at a time, with the same pooling.',
  'Targets: (a)/(b) ≥ 3 at concurrency 16 on short inputs; (a)/(c) ≥ 0.85.',
]);

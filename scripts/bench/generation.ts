/**
 * Generation speed of causal LMs of real shapes (SmolLM2-135M; Qwen2.5-0.5B on request), fp32 and
 * 8-bit: the server (src/main.ts in a child process, over HTTP/SSE) against transformers.js driving
 * the same files in-process, in the same run; decode speed also as a fraction of the memory-bandwidth
 * bound measured here. Every run generates the full max_tokens (the end-of-turn token is suppressed).
 *
 *   npm run bench:generation [-- --subjects smollm2-135m-shape-fp32,smollm2-135m-shape-q8 --runs 3]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AutoModelForCausalLM, AutoTokenizer, BaseStreamer, Tensor } from '@huggingface/transformers';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { BENCH_MODELS, ensureBundledModels } from '../builders/bundled/index.js';
import { median, writeResults } from './report.js';
import { startServerProcess, streamOnce, type ServerProcess, type StreamRun } from './server-process.js';
import { measureBandwidth } from './bandwidth.js';

const { values } = parseArgs({
  options: {
    subjects: { type: 'string', default: 'smollm2-135m-shape-fp32,smollm2-135m-shape-q8' },
    runs: { type: 'string', default: '5' },
    prompts: { type: 'string', default: '32,512,2048' },
    concurrency: { type: 'string', default: '1,2,4,8' },
    'decode-tokens': { type: 'string', default: '32' },
    workers: { type: 'string', default: '1' },
    'intra-op-threads': { type: 'string', default: '0' },
    'last-position-logits': { type: 'string', default: 'true' },
    name: { type: 'string', default: 'generation' },
  },
});
const SUBJECTS = values.subjects!.split(',');
const RUNS = Number(values.runs);
const PROMPTS = values.prompts!.split(',').map(Number);
const CONCURRENCY = values.concurrency!.split(',').map(Number);
const DECODE = Number(values['decode-tokens']);
const benchModels = path.resolve('bench/models');
ensureBundledModels({ modelsDir: path.resolve('models') }); // the word list comes from the bundled GloVe model
ensureBundledModels({ modelsDir: benchModels, models: BENCH_MODELS.filter((m) => SUBJECTS.includes(m.manifest.id)) });

// The chat template adds 5 tokens (<|im_start|> user ... <|im_end|> <|im_start|> assistant).
const WORDS = 'the river city people music market garden paper engine report friend window history morning answer science number between several through'.split(' ');
const promptOf = (tokens: number) => Array.from({ length: tokens - 5 }, (_, i) => WORDS[(i * 7) % WORDS.length]).join(' ');

type Run = Omit<StreamRun, 'totalMs'>;

/**
 * Both sides run on the same two cores, one after the other. onnxruntime's idle threads spin for a
 * while after a run, so whichever side ran last slows the next one's first milliseconds (measured:
 * +20 ms on a 35 ms prefill). Every measured run starts after this pause, on an idle machine.
 */
const SETTLE_MS = 250;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

class Timing extends BaseStreamer {
  first = NaN;
  last = NaN;
  private calls = 0;
  constructor(private readonly started: number) {
    super();
  }
  override put() {
    this.calls++;
    if (this.calls === 2) this.first = performance.now() - this.started; // call 1 is the prompt
    this.last = performance.now() - this.started;
  }
  override end() {}
}

const rssMiB = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024, peak: Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024 };
};

const bandwidthOneCore = await measureBandwidth(1);
const bandwidth = await measureBandwidth(os.availableParallelism());
process.stderr.write(`memory bandwidth (copy): ${(bandwidthOneCore / 1e9).toFixed(1)} GB/s one thread, ${(bandwidth / 1e9).toFixed(1)} GB/s all cores\n`);
const data: Record<string, unknown> = { bandwidthBytesPerSecond: bandwidth, bandwidthOneThreadBytesPerSecond: bandwidthOneCore };
const tables = [];

for (const subject of SUBJECTS) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-gen-'));
  fs.symlinkSync(path.join(benchModels, subject), path.join(dir, subject));
  const server: ServerProcess & { pid?: number } = await startServerProcess(['--models-dir', dir], {
    REQUEST_TIMEOUT_MS: '0', MAX_QUEUE: '64', WORKERS_PER_MODEL: values.workers!, INTRA_OP_THREADS: values['intra-op-threads']!,
    LAST_POSITION_LOGITS: values['last-position-logits']!,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  useLocalModels(dir);
  const before = rssMiB(process.pid).rss;
  const tokenizer = await AutoTokenizer.from_pretrained(subject);
  const config = JSON.parse(fs.readFileSync(path.join(benchModels, subject, 'config.json'), 'utf8'));
  const model = await AutoModelForCausalLM.from_pretrained(subject, { dtype: config['transformers.js_config'].dtype });
  const baselineRss = rssMiB(process.pid).rss - before;

  const baselineRun = async (content: string, maxTokens: number, batch = 1): Promise<Run> => {
    // Timed from the chat template on, as the server's TTFT includes rendering and tokenizing the prompt.
    const started = performance.now();
    const text = tokenizer.apply_chat_template([{ role: 'user', content }], { tokenize: false, add_generation_prompt: true }) as string;
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const timing = new Timing(started);
    await model.generate({
      input_ids: new Tensor('int64', BigInt64Array.from(Array.from({ length: batch }, () => ids).flat().map(BigInt)), [batch, ids.length]),
      attention_mask: new Tensor('int64', new BigInt64Array(batch * ids.length).fill(1n), [batch, ids.length]),
      max_new_tokens: maxTokens, min_new_tokens: maxTokens, do_sample: false, streamer: timing,
    } as Record<string, unknown>);
    return { ttftMs: timing.first, decodeTps: (batch * (maxTokens - 1)) / ((timing.last - timing.first) / 1000), inputTokens: ids.length };
  };

  // Weights read per decoded token: every weight except the embedding table (one row is gathered).
  const files = fs.readdirSync(path.join(benchModels, subject, 'onnx')).map((f) => fs.statSync(path.join(benchModels, subject, 'onnx', f)).size);
  const embeddingBytes = config.vocab_size * config.hidden_size * 4;
  const weightBytes = files.reduce((a, b) => a + b, 0) - embeddingBytes;
  const kvBytesPerPosition = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4;

  const rows: Array<Array<string | number>> = [];
  const subjectData: Record<string, unknown> = { weightBytes, kvBytesPerPosition, baselineRssMiB: baselineRss };
  for (const tokens of PROMPTS) {
    const content = promptOf(tokens);
    // Warm-up at full length: onnxruntime sizes its arenas on the first runs of each shape.
    await streamOnce(server.url, subject, content, DECODE, agent);
    await baselineRun(content, DECODE);
    const s: Run[] = [];
    const b: Run[] = [];
    for (let r = 0; r < RUNS; r++) {
      await settle();
      s.push(await streamOnce(server.url, subject, content, DECODE, agent));
      await settle();
      b.push(await baselineRun(content, DECODE));
    }
    const sT = median(s.map((x) => x.ttftMs));
    const bT = median(b.map((x) => x.ttftMs));
    const sD = median(s.map((x) => x.decodeTps));
    const bD = median(b.map((x) => x.decodeTps));
    const bound = bandwidth / (weightBytes + kvBytesPerPosition * (s[0]!.inputTokens + DECODE / 2));
    subjectData[`prompt${tokens}`] = { server: s, baseline: b, boundTps: bound };
    rows.push([
      s[0]!.inputTokens, sT, bT, sT - bT, (s[0]!.inputTokens / sT) * 1000 / ((b[0]!.inputTokens / bT) * 1000),
      sD, bD, sD / bD, bound, sD / bound,
    ]);
    process.stderr.write(`${subject} prompt ${tokens}: TTFT ${sT.toFixed(0)} / ${bT.toFixed(0)} ms, decode ${sD.toFixed(1)} / ${bD.toFixed(1)} tok/s\n`);
  }
  const concurrencyRows: Array<Array<string | number>> = [];
  const short = promptOf(PROMPTS[0]!);
  for (const c of CONCURRENCY) {
    await settle();
    const t = performance.now();
    await Promise.all(Array.from({ length: c }, () => streamOnce(server.url, subject, short, DECODE, agent)));
    const serverAggregate = (c * DECODE) / ((performance.now() - t) / 1000);
    await settle();
    const t2 = performance.now();
    await baselineRun(short, DECODE, c);
    const baselineAggregate = (c * DECODE) / ((performance.now() - t2) / 1000);
    concurrencyRows.push([c, serverAggregate, baselineAggregate, serverAggregate / baselineAggregate]);
    process.stderr.write(`${subject} concurrency ${c}: ${serverAggregate.toFixed(1)} / ${baselineAggregate.toFixed(1)} tok/s\n`);
  }
  const serverMem = server.pid ? rssMiB(server.pid) : { rss: NaN, peak: NaN };
  subjectData.serverRssMiB = serverMem;
  subjectData.concurrency = concurrencyRows;
  data[subject] = subjectData;
  tables.push({
    title: `${subject}: single stream (median of ${RUNS}), ${DECODE} tokens generated`,
    columns: ['prompt tokens', 'server TTFT ms', 'in-process TTFT ms', 'TTFT overhead ms', 'prefill ratio', 'server decode tok/s', 'in-process decode tok/s', 'decode ratio', 'bandwidth bound tok/s', 'server / bound'],
    rows,
  });
  tables.push({
    title: `${subject}: aggregate decode tok/s (${PROMPTS[0]}-token prompts; server: ${values.workers} worker(s), intra-op threads ${values['intra-op-threads']}; in-process: one batch) · server RSS ${serverMem.rss.toFixed(0)} MiB (peak ${serverMem.peak.toFixed(0)}), model in-process +${baselineRss.toFixed(0)} MiB`,
    columns: ['concurrent requests', 'server tok/s', 'in-process batch tok/s', 'ratio'],
    rows: concurrencyRows,
  });
  await model.dispose();
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

writeResults(values.name!, data, tables, [
  `Memory bandwidth measured by this script (256 MiB copies, best of 8): ${(bandwidth / 1e9).toFixed(1)} GB/s with one copying thread per core at once (${(bandwidthOneCore / 1e9).toFixed(1)} GB/s from one thread). The bound is that bandwidth / (weight bytes read per token + KV cache bytes at the mean context).`,
  `Server: src/main.ts in a child process, ${values.workers} worker(s) per model, intra-op threads ${values['intra-op-threads']} (0: onnxruntime's default), last-position logits ${values['last-position-logits']}, streamed over loopback HTTP. TTFT is request to first content_block_delta; prefill ratio is server prefill tokens/s over in-process.`,
  'In-process: transformers.js generate on the same files in the bench process (KV cache, greedy). TTFT from the chat template to the first token.',
  `Server and in-process runs alternate, each after a ${SETTLE_MS} ms pause (onnxruntime threads of the side that ran last otherwise still spin on the shared cores).`,
]);

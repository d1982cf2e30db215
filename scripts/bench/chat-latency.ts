/**
 * Time to first streamed token and decode speed of the bundled chat model: the server over HTTP
 * (SSE) against transformers.js driving the same model in-process, measured in the same run.
 *
 *   npm run bench:chat [-- --runs 15]
 */
import { parseArgs } from 'node:util';
import path from 'node:path';
import { AutoModelForCausalLM, AutoTokenizer, BaseStreamer, Tensor } from '@huggingface/transformers';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { buildApp, closeApp } from '../../src/app.js';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { LocalInferenceService } from '../../src/inference/service.js';
import { ensureBundledModels } from '../builders/bundled/index.js';
import { scanModels } from '../../src/models/registry.js';
import { median, writeResults } from './report.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, 'intra-op-threads': { type: 'string', default: '0' } } });
const RUNS = Number(values.runs);
const MODEL = 'tiny-qwen3-random';
const DECODE_TOKENS = 64;
const modelsDir = path.resolve('models');
ensureBundledModels({ modelsDir });

const PROMPTS = {
  short: 'Name three colours.',
  long: Array.from({ length: 120 }, (_, i) => `Sentence ${i} adds some more words to the prompt.`).join(' '),
};

// --- server over HTTP ---
const { models } = scanModels({ modelsDir, defaultPoolSize: 1 });
const service = await LocalInferenceService.start({
  models: models.filter((m) => m.id === MODEL), maxQueue: 16, requestTimeoutMs: 0,
  // As this benchmark has always run: one generation at a time, no prefix cache, no step graph.
  engine: { ...ENGINE_DEFAULTS, intraOpThreads: Number(values['intra-op-threads']), promptCacheBytes: 0, generationBatchSize: 1, inPlaceDecodeMinContext: 0 },
  embedBatching: { enabled: false, maxBatchTokens: 1, maxWaitMs: 0, truncate: false },
});
const app = await buildApp({ config: { apiKeys: [], bodyLimit: 1 << 22, pingIntervalMs: 60_000 }, inference: service });
const url = await app.listen({ host: '127.0.0.1', port: 0 });

async function serverRun(prompt: string, maxTokens: number) {
  const started = performance.now();
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: MODEL, max_tokens: maxTokens, temperature: 0, stream: true, messages: [{ role: 'user', content: prompt }] }),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let first = NaN;
  let inputTokens = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    if (Number.isNaN(first) && buffer.includes('event: content_block_delta')) first = performance.now() - started;
    const m = /"input_tokens":(\d+)/.exec(buffer);
    if (m && !inputTokens) inputTokens = Number(m[1]);
  }
  return { ttftMs: first, totalMs: performance.now() - started, inputTokens };
}

// --- baseline: transformers.js in this process ---
useLocalModels(modelsDir);
const tokenizer = await AutoTokenizer.from_pretrained(MODEL);
const model = await AutoModelForCausalLM.from_pretrained(MODEL, { dtype: 'fp32' });

class FirstToken extends BaseStreamer {
  first = NaN;
  private calls = 0;
  constructor(private readonly started: number) {
    super();
  }
  override put() {
    if (++this.calls === 2) this.first = performance.now() - this.started; // call 1 is the prompt
  }
  override end() {}
}

async function baselineRun(prompt: string, maxTokens: number) {
  const started = performance.now();
  const text = tokenizer.apply_chat_template([{ role: 'user', content: prompt }], { tokenize: false, add_generation_prompt: true }) as string;
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  const streamer = new FirstToken(started);
  await model.generate({
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
    max_new_tokens: maxTokens, do_sample: false, streamer,
  } as Record<string, unknown>);
  return { ttftMs: streamer.first, totalMs: performance.now() - started, inputTokens: ids.length };
}

const rows: Array<Array<string | number>> = [];
const data: Record<string, unknown> = {};
for (const [name, prompt] of Object.entries(PROMPTS)) {
  // Warm both paths once, then alternate so drift on a noisy machine hits both alike.
  await serverRun(prompt, 2);
  await baselineRun(prompt, 2);
  const server: Array<Awaited<ReturnType<typeof serverRun>>> = [];
  const baseline: Array<Awaited<ReturnType<typeof baselineRun>>> = [];
  for (let i = 0; i < RUNS; i++) {
    server.push(await serverRun(prompt, DECODE_TOKENS));
    baseline.push(await baselineRun(prompt, DECODE_TOKENS));
  }
  const ttftS = median(server.map((r) => r.ttftMs));
  const ttftB = median(baseline.map((r) => r.ttftMs));
  const decode = (runs: typeof server) => median(runs.map((r) => (DECODE_TOKENS - 1) / ((r.totalMs - r.ttftMs) / 1000)));
  const decS = decode(server);
  const decB = decode(baseline);
  data[name] = { inputTokens: server[0]!.inputTokens, server, baseline };
  rows.push([name, server[0]!.inputTokens, ttftS, ttftB, ttftS - ttftB, ttftS / ttftB, decS, decB, decS / decB]);
}
await closeApp(app, 1000);
await service.close();

writeResults('chat-latency', data, [{
  title: `Bundled chat model (${MODEL}), median of ${RUNS} runs, ${DECODE_TOKENS} tokens, greedy`,
  columns: ['prompt', 'input tokens', 'server TTFT ms', 'in-process TTFT ms', 'overhead ms', 'ratio', 'server decode tok/s', 'in-process decode tok/s', 'ratio'],
  rows,
}], [
  'Server: POST /v1/messages with stream: true over loopback HTTP; TTFT is from sending the request to receiving the first content_block_delta.',
  'In-process: transformers.js `generate` on the same files in the bench process; TTFT is from applying the chat template to the first generated token.',
]);

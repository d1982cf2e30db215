/**
 * What grammar-constrained decoding costs: decode tokens/s with an output schema against the same
 * generation unconstrained, at batch 1 and batch 8, interleaved in one run (the worker's chat task, src/worker/chat-task.ts
 * in-process on the real loading code); and the grammar's compile time, first and cached. The
 * bundled chat model has a 151,936-token vocabulary and a tiny graph: the mask's cost per token is
 * set by the vocabulary, so this is the worst case for the ratio (a real model's step is longer).
 * A `.gguf` file among the models runs on the llama.cpp engine (the mask becomes llama.cpp's logit
 * bias: src/engines/llama/mask-bias.ts).
 *
 *   npm run bench:constrained [-- --runs 5 --tokens 64 --models models/tiny-qwen3-random,bench/models/smollm2-135m-shape-fp32]
 *   npm run bench:constrained -- --runs 3 --models test-artifacts/models-gguf/tiny-qwen3-gguf,models/tiny-qwen3-random --name constrained-gguf
 *
 * (The GGUF chat models of bench/models/gguf have a word-level test vocabulary that cannot spell
 * every string a schema allows; the test GGUF, built by the suite's global setup, has Qwen3's.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { scanModels } from '../../src/models/registry.js';
import type { ChatRequest } from '../../src/core/types.js';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { loadLlamaModel, type LlamaLoaded } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import { runChatTask } from '../../src/worker/chat-task.js';
import { onnxEngine } from '../../src/engines/onnx/runner.js';
import { TaskControl } from '../../src/worker/protocol.js';
import { matcherFor } from '../../src/chat/grammar/xgrammar.js';
import { planConstraint } from '../../src/chat/grammar/constraint.js';
import { ensureBundledModels } from '../builders/bundled/index.js';
import { median, writeResults, type Table } from './report.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '64' },
    models: { type: 'string', default: 'models/tiny-qwen3-random,bench/models/smollm2-135m-shape-fp32' },
    name: { type: 'string', default: 'constrained' },
  },
});
const RUNS = Number(values.runs);
const TOKENS = Number(values.tokens);
ensureBundledModels({ modelsDir: path.resolve('models') });

/** A long free string and a few structured fields: the model writes about `TOKENS` tokens either way. */
const SCHEMA = {
  type: 'object',
  properties: { title: { type: 'string' }, rating: { type: 'integer', minimum: 1, maximum: 5 }, tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] } }, story: { type: 'string' } },
  required: ['title', 'rating', 'tags', 'story'],
  additionalProperties: false,
};
const PROMPT = 'Write a short review of a small cafe by the river, with a title, a rating and a few tags.';

type Mode = 'greedy' | 'sampled';

type Loaded = LoadedModel | LlamaLoaded;
const engineOf = (loaded: Loaded) => ('llama' in loaded ? llamaEngine(loaded) : onnxEngine(loaded));

function request(loaded: Loaded, constrained: boolean, i: number, mode: Mode = 'sampled'): ChatRequest {
  return {
    model: loaded.info.id, messages: [{ role: 'user', content: `${PROMPT} (${i})` }], maxTokens: TOKENS,
    sampling: mode === 'greedy' ? { temperature: 0 } : { temperature: 1, topK: 0, topP: 1 }, stopStrings: [],
    ...(constrained ? { output: { schema: SCHEMA, strict: true } } : {}),
  };
}

async function one(loaded: Loaded, constrained: boolean, i: number, mode: Mode) {
  const outcome = await runChatTask(loaded, request(loaded, constrained, i, mode), { engine: engineOf(loaded), control: new Int32Array(new SharedArrayBuffer(TaskControl.BYTES)) });
  return { tokens: outcome.result.outputTokens, firstMs: outcome.timing.firstTokenMs ?? 0, totalMs: outcome.timing.totalMs };
}

/** Decode tokens/s of one sequence: tokens after the first over the time after the first. */
async function single(loaded: Loaded, constrained: boolean, i: number, mode: Mode): Promise<number> {
  const r = await one(loaded, constrained, i, mode);
  return ((r.tokens - 1) * 1000) / (r.totalMs - r.firstMs);
}

/** Aggregate tokens/s of 8 sequences decoded in one batch. */
async function batch8(loaded: Loaded, constrained: boolean, i: number, mode: Mode): Promise<number> {
  const started = performance.now();
  const all = await Promise.all(Array.from({ length: 8 }, (_, k) => one(loaded, constrained, i * 8 + k, mode)));
  return (all.reduce((n, r) => n + r.tokens, 0) * 1000) / (performance.now() - started);
}

const tables: Table[] = [];
const data: Record<string, unknown> = {};
for (const dir of values.models!.split(',').map((d) => path.resolve(d))) {
  if (!fs.existsSync(dir)) {
    console.log(`skipped ${dir}: not built (npm run build:bench-models)`);
    continue;
  }
  const info = scanModels({ modelsDir: path.dirname(dir), defaultPoolSize: 1 }).models.find((m) => m.dir === dir || m.gguf?.parts[0] === dir);
  if (!info || info.task !== 'chat') continue;
  const engine = { ...ENGINE_DEFAULTS, intraOpThreads: 0, ortAllowSpinning: false };
  const loaded: Loaded = info.engine === 'llama' ? await loadLlamaModel(info, engine) : await loadModel(info, engine);
  const vocab = 'llama' in loaded ? loaded.vocabSize : (loaded.model.config as unknown as { vocab_size: number }).vocab_size;

  // Compile: the tokenizer description (once per model and worker), a schema's first compile, then cached.
  const source = (key: string) => planConstraint({ ...request(loaded, true, 0), output: { schema: { ...SCHEMA, properties: { ...SCHEMA.properties, [key]: { type: 'boolean' } } }, strict: true } }, 'hermes')!.source;
  let t = performance.now();
  (await matcherFor(loaded, vocab, source('warm'))).dispose();
  const firstEverMs = performance.now() - t;
  const firstMs: number[] = [];
  const cachedMs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    (await matcherFor(loaded, vocab, source(`k${i}`))).dispose();
    firstMs.push(performance.now() - t);
    t = performance.now();
    (await matcherFor(loaded, vocab, source(`k${i}`))).dispose();
    cachedMs.push(performance.now() - t);
  }

  // Decode, interleaved: free then constrained, per run and sampling mode.
  const decode: Record<string, Record<string, number>> = {};
  for (const mode of ['greedy', 'sampled'] as const) {
    await single(loaded, false, 0, mode);
    await single(loaded, true, 0, mode);
    const rows: Record<string, number[]> = { free1: [], constrained1: [], free8: [], constrained8: [] };
    for (let i = 0; i < RUNS; i++) {
      rows.free1!.push(await single(loaded, false, i, mode));
      rows.constrained1!.push(await single(loaded, true, i, mode));
      rows.free8!.push(await batch8(loaded, false, i, mode));
      rows.constrained8!.push(await batch8(loaded, true, i, mode));
    }
    decode[mode] = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)]));
  }
  data[info.id] = { vocab, firstEverMs, firstMs: median(firstMs), cachedMs: median(cachedMs), decode };
  const ratio = (a: number, b: number) => `${((a / b) * 100).toFixed(0)}%`;
  tables.push({
    title: `${info.id} (${info.engine === 'llama' ? 'llama.cpp' : 'onnxruntime'}, vocabulary ${vocab}): decode tokens/s, median of ${RUNS}, up to ${TOKENS} tokens each`,
    columns: ['sampling', 'batch', 'free tok/s', 'constrained tok/s', 'constrained / free'],
    rows: Object.entries(decode).flatMap(([mode, m]) => [
      [mode, 1, m.free1!, m.constrained1!, ratio(m.constrained1!, m.free1!)],
      [mode, 8, m.free8!, m.constrained8!, ratio(m.constrained8!, m.free8!)],
    ]),
  });
  tables.push({
    title: `${info.id}: grammar compile (ms)`,
    columns: ['first use on the model (tokenizer description + compile)', 'a new schema', 'the same schema again (cached)'],
    rows: [[firstEverMs, median(firstMs), median(cachedMs)]],
  });
}
writeResults(values.name!, { runs: RUNS, tokens: TOKENS, schema: SCHEMA, models: data }, tables, [
  'Goal (issue 16): constrained decoding costs at most 10% of decode speed. Free and constrained runs interleave. Greedy isolates the mask (argmax over the allowed tokens against argmax over all); sampled (temperature 1, no top-k) also shows that the mask shrinks what the sampler weighs, which can make constrained decoding faster than free.',
]);

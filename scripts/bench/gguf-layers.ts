/**
 * Where the server's overhead over llama.cpp comes from, layer by layer, on one GGUF file in one run:
 *
 *   1. node-llama-cpp driving the file directly (the baseline: bench:longctx's llama.cpp side);
 *   2. the chat turn on the llama.cpp engine in this process (src/worker/chat-task.ts: prompt
 *      rendering, the engine's slots and sampling, the text stream), no pool, no HTTP;
 *   3. the server over HTTP (streamed Messages), the model in its own process (the default);
 *   4. the server over HTTP, the model in a worker thread of the server (GGUF_PROCESS=false).
 *
 * Each runs greedy decoding of `--tokens` tokens after the same prompt (a user message of `--prompt`
 * words in the model's chat template; node-llama-cpp is fed the ids the chat layer renders, and each
 * server's input_tokens is checked against their count), one request at a time, the layers
 * interleaved run by run, with the same llama.cpp threads everywhere. Results name the CPU.
 *
 *   npm run bench:gguf-layers [-- --subjects qwen2.5-0.5b-shape-gguf-q8,smollm2-135m-shape-gguf-q8 --runs 5 --threads 2]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Token } from 'node-llama-cpp';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { loadLlamaModel } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import { renderPrompt } from '../../src/chat/prompt.js';
import type { ChatRequest } from '../../src/core/types.js';
import { scanModels } from '../../src/models/registry.js';
import { runChatTask } from '../../src/worker/chat-task.js';
import { TaskControl } from '../../src/worker/protocol.js';
import { ggufSubjectFile, ggufTypeOf, writeGgufServerFolder } from './gguf-subject.js';
import { median, writeResults, type Table } from './report.js';
import { startServerProcess, streamOnce } from './server-process.js';

const { values } = parseArgs({
  options: {
    subjects: { type: 'string', default: 'qwen2.5-0.5b-shape-gguf-q8,smollm2-135m-shape-gguf-q8' },
    runs: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '64' },
    prompt: { type: 'string', default: '32' },
    threads: { type: 'string', default: String(Math.min(os.availableParallelism(), 4)) },
    name: { type: 'string', default: 'gguf-layers' },
  },
});
const RUNS = Number(values.runs);
const TOKENS = Number(values.tokens);
const PROMPT = Number(values.prompt);
const THREADS = Number(values.threads);
const CONTEXT = 1024;
const BENCH_MODELS = path.resolve('bench/models');

const WORDS = 'the of and to in for on is was said with he as it by at from his an be has are have but were not this who they'.split(' ');
/** A prompt of PROMPT words, different for each run (no prefix is reused anywhere: the prompt cache is off). */
const promptOf = (run: number) => Array.from({ length: PROMPT }, (_, k) => WORDS[(run * 7 + k * 3 + Math.floor(k / WORDS.length)) % WORDS.length]).join(' ');

interface Sample { decodeTps: number; ttftMs: number }
const LAYERS = ['node-llama-cpp direct', 'chat turn in process', 'server, model process', 'server, model thread'] as const;
type Layer = (typeof LAYERS)[number];

const tables: Table[] = [];
const data: Record<string, unknown> = {};
for (const subject of values.subjects!.split(',')) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-layers-'));
  try {
    writeGgufServerFolder(dir, subject, ggufSubjectFile(BENCH_MODELS, subject), BENCH_MODELS, CONTEXT);
    const info = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models[0]!;
    const engine = { ...ENGINE_DEFAULTS, intraOpThreads: THREADS, promptCacheBytes: 0 };
    const loaded = await loadLlamaModel(info, engine);
    const context = await loaded.model.createContext({ contextSize: CONTEXT, sequences: 1, threads: THREADS });
    const env = { INTRA_OP_THREADS: String(THREADS), PROMPT_CACHE_BYTES: '0' };
    const servers = {
      'server, model process': await startServerProcess(['--models-dir', dir], env, { compiled: true }),
      'server, model thread': await startServerProcess(['--models-dir', dir], { ...env, GGUF_PROCESS: 'false' }, { compiled: true }),
    };
    const agent = new http.Agent({ keepAlive: true });
    const requestOf = (i: number): ChatRequest => ({ model: info.id, messages: [{ role: 'user', content: promptOf(i) }], maxTokens: TOKENS, sampling: { temperature: 0 }, stopStrings: [] });
    const idsOf = (i: number) => renderPrompt(loaded, requestOf(i)).ids;
    const served = async (server: { url: string }, i: number) => {
      const sample = await streamOnce(server.url, info.id, promptOf(i), TOKENS, agent);
      const rendered = idsOf(i).length;
      if (sample.inputTokens !== rendered) throw new Error(`the server counted ${sample.inputTokens} prompt tokens, the chat layer renders ${rendered}`);
      return sample;
    };
    const run: Record<Layer, (i: number) => Promise<Sample>> = {
      'node-llama-cpp direct': async (i) => {
        const sequence = context.getSequence();
        try {
          const ids = idsOf(i) as Token[];
          const started = performance.now();
          let first = 0;
          let n = 0;
          for await (const _ of sequence.evaluate(ids, { temperature: 0 })) {
            if (n === 0) first = performance.now();
            if (++n >= TOKENS) break;
          }
          return { ttftMs: first - started, decodeTps: ((TOKENS - 1) * 1000) / (performance.now() - first) };
        } finally {
          sequence.dispose();
        }
      },
      'chat turn in process': async (i) => {
        const outcome = await runChatTask(loaded as never, requestOf(i), { engine: llamaEngine(loaded), control: new Int32Array(new SharedArrayBuffer(TaskControl.BYTES)) });
        const first = outcome.timing.firstTokenMs ?? 0;
        return { ttftMs: first, decodeTps: ((outcome.result.outputTokens - 1) * 1000) / (outcome.timing.totalMs - first) };
      },
      'server, model process': (i) => served(servers['server, model process'], i),
      'server, model thread': (i) => served(servers['server, model thread'], i),
    };
    const samples = Object.fromEntries(LAYERS.map((l) => [l, [] as Sample[]])) as Record<Layer, Sample[]>;
    for (const layer of LAYERS) await run[layer](0); // warm-up
    for (let i = 1; i <= RUNS; i++) {
      for (const layer of LAYERS) {
        samples[layer].push(await run[layer](i));
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    agent.destroy();
    await Promise.all(Object.values(servers).map((s) => s.stop()));
    await context.dispose();
    const base = { decode: median(samples['node-llama-cpp direct'].map((s) => s.decodeTps)), ttft: median(samples['node-llama-cpp direct'].map((s) => s.ttftMs)) };
    const rows = LAYERS.map((layer) => {
      const decode = median(samples[layer].map((s) => s.decodeTps));
      const ttft = median(samples[layer].map((s) => s.ttftMs));
      return [layer, decode, decode / base.decode, ttft, ttft / base.ttft];
    });
    data[subject] = { threads: THREADS, samples };
    tables.push({
      title: `${subject} (${ggufTypeOf(subject)}), ${THREADS} llama.cpp threads, ${idsOf(1).length}-token prompt, ${TOKENS} tokens, median of ${RUNS}`,
      columns: ['layer', 'decode tok/s', 'decode / direct', 'TTFT ms', 'TTFT / direct'],
      rows,
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
writeResults(values.name!, { runs: RUNS, tokens: TOKENS, prompt: PROMPT, subjects: data }, tables, [
  'Layers of the server over the same GGUF file, interleaved in one run (scripts/bench/gguf-layers.ts): node-llama-cpp direct (the baseline), the chat turn on the llama.cpp engine in the bench process, and the compiled server over loopback HTTP with the model in its own process (default) or in a worker thread (GGUF_PROCESS=false). Greedy, one request at a time, prompt cache off, the same llama.cpp threads everywhere. The servers idle while the in-process layers run, and the bench process reads the servers\' SSE streams.',
]);
process.exit(0);

/**
 * The server against llama-server on the same GGUF file (issue 41): what a user choosing a local
 * server compares us with. llama-server is built from the llama.cpp source node-llama-cpp ships
 * (./llama-server-build.ts: cached, skipped with a note when there is no compiler); node-llama-cpp
 * driving the same file directly (./llama-cpp-child.ts, fed the very token ids) stays as the second
 * baseline. All three run the same file with the same threads and the same KV per sequence:
 * `--sequences` sequences of `--context` tokens each (ours: GENERATION_BATCH_SIZE sequences of the
 * manifest's contextLength; llama-server: `-np` slots of `-c / np` tokens, KV not unified;
 * node-llama-cpp: `sequences` of `contextSize`).
 *
 * All three are started once and kept; each measurement runs on one of them at a time (the others
 * idle), in interleaved rounds whose order rotates, after a pause that lets llama.cpp's spinning
 * threads settle. Per round:
 *   - time to first token for a prompt of each `--prompts` length (a request of max_tokens 1, answered
 *     whole: prefill plus the first token; prompts differ by round, no prefix is reused: our prompt
 *     cache off, llama-server's `cache_prompt: false`);
 *   - decoding with each `--streams` count of streams at once (short prompts, `--decode` tokens each,
 *     `ignore_eos` so random weights run to the limit, greedy): aggregate tok/s (every stream's
 *     tokens over the wall time, prefill included) and the one-stream rate after its first token.
 * Then peak memory: the sum of VmHWM over each process tree (our server and its model process).
 * Ours is asked over its OpenAI chat route; llama-server over its /completion with the token ids our
 * chat layer renders (the ids node-llama-cpp is fed), each prompt's token count checked, and a logit
 * bias disallowing the tokens that are not UTF-8 on their own (./utf8-bias.ts: its output parser
 * answers a random-weight model's malformed UTF-8 with a 500).
 *
 *   npm run bench:llama-server -- --quick      (a few minutes: prompts 2k and 8k, 2 rounds, 32 tokens)
 *   npm run bench:llama-server                 (prompts 2k, 8k and 20k, 3 rounds, 64 tokens)
 *   npm run bench:llama-server -- --quick --shape qwen2.5-0.5b   (the issue's subject: Qwen2.5-0.5B's shape, F32)
 *   options: --gguf FILE (default: the test GGUF, Qwen3's tokenizer, built as the tests build it)
 *            --shape NAME (a random-weight GGUF of a real model's shape with Qwen3's tokenizer,
 *              written once to bench/models/gguf: ../builders/gguf/shaped-gguf.ts)
 *            --context N --sequences N --threads N --rounds N --decode N --prompts 2048,8192
 *            --streams 1,4,8 --server-env KEY=V,KEY=V --llama-server-args "..." --no-node-llama-cpp --no-llama-server --name NAME
 *
 * Results: bench/results/<name>.md and .json, naming the CPU, its instruction sets, the GPU (none
 * used) and the llama.cpp build, with the 1-minute load average beside every round.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { renderPrompt } from '../../src/chat/prompt.js';
import { scanModels } from '../../src/models/registry.js';
import { loadGgufTokenizer } from '../../src/tokenize/load-tokenizer.js';
import { LlamaChild } from './llama-cpp-child-client.js';
import { shapedGguf } from '../builders/gguf/shaped-gguf.js';
import { ggufFolder } from './gguf-folder.js';
import { ensureLlamaServer } from './llama-server-build.js';
import { NODE_LLAMA_CPP_ROOT } from '../node-llama-cpp-root.js';
import { peakOf, peakSharedOnceOf } from './process-memory.js';
import { median, writeResults, type Table } from './report.js';
import { startServerProcess } from './server-process.js';
import { partialUtf8Tokens } from './utf8-bias.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    gguf: { type: 'string' },
    shape: { type: 'string' },
    context: { type: 'string' },
    sequences: { type: 'string', default: '8' },
    threads: { type: 'string', default: String(Math.min(os.availableParallelism(), 4)) },
    rounds: { type: 'string' },
    decode: { type: 'string' },
    prompts: { type: 'string' },
    streams: { type: 'string', default: '1,4,8' },
    'server-env': { type: 'string', default: '' },
    'llama-server-args': { type: 'string', default: '' },
    'no-node-llama-cpp': { type: 'boolean', default: false },
    /** Ours against node-llama-cpp only (no build). */
    'no-llama-server': { type: 'boolean', default: false },
    name: { type: 'string', default: 'llama-server' },
  },
});
const QUICK = values.quick!;
const PROMPTS = (values.prompts ?? (QUICK ? '2048,8192' : '2048,8192,20480')).split(',').map(Number);
const CONTEXT = Number(values.context ?? (QUICK ? 8192 + 512 : 32768));
const SEQUENCES = Number(values.sequences);
const THREADS = Number(values.threads);
const ROUNDS = Number(values.rounds ?? (QUICK ? 2 : 3));
const DECODE = Number(values.decode ?? (QUICK ? 32 : 64));
const STREAMS = values.streams!.split(',').map(Number);
/** The decoding streams' prompts: short, so their prefill is a small part of the aggregate. */
const SHORT_PROMPT = 64;
const SERVER_ENV = Object.fromEntries(values['server-env']!.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
const SETTLE_MS = 300;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
const load = () => Number(os.loadavg()[0]!.toFixed(2));
if (PROMPTS.some((p) => p + 8 > CONTEXT)) throw new Error(`--context ${CONTEXT} is shorter than a prompt of ${Math.max(...PROMPTS)} tokens`);

// --- the file and its prompts -------------------------------------------------------------------

const file = values.shape ? shapedGguf({ shape: values.shape, tokenizerDir: path.resolve('models/tiny-qwen3-random'), dir: path.resolve('bench/models/gguf'), log: (l) => process.stderr.write(`${l}\n`) }) : values.gguf;
const { dir, model: MODEL, gguf } = ggufFolder(file, 'bench-llama-server', { contextLength: CONTEXT });
const info = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models.find((m) => m.id === MODEL)!;
const tokenizer = await loadGgufTokenizer(info);

const WORDS = 'the river city people music market garden paper engine report friend window history morning answer science number between several through'.split(' ');
const contentOf = (words: number, variant: number) => [`Note ${variant}:`, ...Array.from({ length: words }, (_, i) => WORDS[(i * 7 + variant * 3 + Math.floor(i / 13)) % WORDS.length])].join(' ');
const idsOf = (content: string) => renderPrompt(tokenizer, { model: MODEL, messages: [{ role: 'user', content }], thinking: { enabled: false } }).ids;
/** A user message whose rendered prompt is `tokens` long (to a token or two), different for each variant. */
const prompts = new Map<string, { content: string; ids: number[] }>();
function promptOf(tokens: number, variant: number): { content: string; ids: number[] } {
  const key = `${tokens}/${variant}`;
  let known = prompts.get(key);
  if (!known) {
    let words = tokens;
    let ids = idsOf(contentOf(words, variant));
    for (let i = 0; i < 4 && ids.length !== tokens; i++) ids = idsOf(contentOf((words += tokens - ids.length), variant));
    prompts.set(key, (known = { content: contentOf(words, variant), ids }));
  }
  return known;
}

// --- the three targets --------------------------------------------------------------------------

interface Chat {
  ttftMs: number;
  /** After the first token: (tokens - 1) over the time to the last. */
  decodeTps: number;
  totalMs: number;
  promptTokens: number;
  completionTokens: number;
}

interface Target {
  name: string;
  pid: number;
  /** One request of `maxTokens` (streamed when more than 1), timed from the bench process. */
  chat(prompt: { content: string; ids: number[] }, maxTokens: number): Promise<Chat>;
  /** Several at once: aggregate tok/s and each one's rate after its first token. */
  many?(prompts: Array<{ content: string; ids: number[] }>, maxTokens: number): Promise<{ aggregateTps: number; decodeTps: number[] }>;
  stop(): Promise<void>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * Posts a completion, streamed when asked; times the first text and the end. `route`: our OpenAI chat
 * route (usage in its last chunk), or llama-server's own /completion fed token ids (its counts in
 * `tokens_evaluated` / `tokens_predicted`), given the ids our chat layer renders, as node-llama-cpp
 * is (its chat route could render the template differently).
 */
function postChat(url: string, body: Record<string, unknown>, route = '/v1/chat/completions'): Promise<Chat> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const started = performance.now();
    let first = NaN;
    let text = '';
    const req = http.request(`${url}${route}`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (Number.isNaN(first) && /"(content|reasoning_content)":"[^"]/.test(chunk)) first = performance.now() - started;
        text += chunk;
      });
      res.on('end', () => {
        const total = performance.now() - started;
        // llama-server reports an error met mid-stream as an event of the 200 it has begun.
        if (res.statusCode !== 200 || /^data: \{"error"/m.test(text)) return reject(new Error(`${url}: ${res.statusCode} ${text.slice(-500)}`));
        const usage = [...text.matchAll(/"usage":(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})/g)].at(-1)?.[1];
        const evaluated = [...text.matchAll(/"tokens_evaluated":(\d+)/g)].at(-1)?.[1];
        const predicted = [...text.matchAll(/"tokens_predicted":(\d+)/g)].at(-1)?.[1];
        if (!usage && !(evaluated && predicted)) return reject(new Error(`${url}: no usage in ${text.slice(-500)}`));
        const { prompt_tokens: promptTokens, completion_tokens: completionTokens } = usage
          ? JSON.parse(usage) as { prompt_tokens: number; completion_tokens: number }
          : { prompt_tokens: Number(evaluated), completion_tokens: Number(predicted) };
        const ttft = body.stream ? first : total;
        resolve({ ttftMs: ttft, decodeTps: (completionTokens - 1) / ((total - ttft) / 1000), totalMs: total, promptTokens, completionTokens });
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed as it was reused (llama-server closes idle ones after
      // 5 s): sent again on a fresh one, as Node's documentation advises, timed from there.
      if (req.reusedSocket && error.code === 'ECONNRESET') return postChat(url, body, route).then(resolve, reject);
      reject(new Error(`${url}${route}: ${error.message}`));
    });
    req.end(payload);
  });
}

/** A served chat of `maxTokens`, checked: the prompt counted as rendered here (warned for llama-server), the output to its limit. */
async function served(target: string, url: string, body: (prompt: { content: string; ids: number[] }, maxTokens: number) => Record<string, unknown>, prompt: { content: string; ids: number[] }, maxTokens: number, warn: boolean, route?: string): Promise<Chat> {
  const chat = await postChat(url, body(prompt, maxTokens), route);
  if (chat.completionTokens !== maxTokens) throw new Error(`${target}: ${chat.completionTokens} tokens, ${maxTokens} asked (ignore_eos)`);
  if (chat.promptTokens !== prompt.ids.length) {
    const message = `${target} counted ${chat.promptTokens} prompt tokens, the chat layer renders ${prompt.ids.length}`;
    if (!warn) throw new Error(message);
    mismatches.add(message);
  }
  return chat;
}
const mismatches = new Set<string>();

async function manyServed(chat: (p: { content: string; ids: number[] }, n: number) => Promise<Chat>, prompts: Array<{ content: string; ids: number[] }>, maxTokens: number) {
  const started = performance.now();
  const runs = await Promise.all(prompts.map((p) => chat(p, maxTokens)));
  return { aggregateTps: (prompts.length * maxTokens) / ((performance.now() - started) / 1000), decodeTps: runs.map((r) => r.decodeTps) };
}

async function startOurs(): Promise<Target> {
  const server = await startServerProcess(['--models-dir', dir], {
    REQUEST_TIMEOUT_MS: '0', MAX_QUEUE: '64', WORKERS_PER_MODEL: '1', INTRA_OP_THREADS: String(THREADS),
    GENERATION_BATCH_SIZE: String(SEQUENCES), PROMPT_CACHE_BYTES: '0', ...SERVER_ENV,
  }, { compiled: true });
  const body = ({ content }: { content: string }, maxTokens: number) => ({
    model: MODEL, messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0, ignore_eos: true, reasoning_effort: 'none',
    ...(maxTokens > 1 ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
  const chat = (p: { content: string; ids: number[] }, n: number) => served('ours', server.url, body, p, n, false);
  return { name: 'ours', pid: server.pid, chat, many: (ps, n) => manyServed(chat, ps, n), stop: () => server.stop() };
}

const freePort = () => new Promise<number>((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as net.AddressInfo;
    probe.close(() => resolve(port));
  });
});

async function startLlamaServer(binary: string): Promise<Target> {
  const port = await freePort();
  const args = [
    '-m', gguf, '--host', '127.0.0.1', '--port', String(port), '-t', String(THREADS), '-tb', String(THREADS),
    '-np', String(SEQUENCES), '-c', String(SEQUENCES * CONTEXT), '--no-kv-unified', '-fa', 'auto', '--cache-ram', '0', '--no-webui', '--jinja',
    ...values['llama-server-args']!.split(/\s+/).filter(Boolean),
  ];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 250) {
    if (child.exitCode !== null) throw new Error(`llama-server exited with ${child.exitCode}:\n${log}`);
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (waited > 300_000) throw new Error(`llama-server did not come up in 5 minutes:\n${log}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  llamaServerArgs = args.join(' ');
  const body = ({ ids }: { ids: number[] }, maxTokens: number) => ({
    prompt: ids, n_predict: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: false, logit_bias: partialBias, ...(maxTokens > 1 ? { stream: true } : {}),
  });
  const chat = (p: { content: string; ids: number[] }, n: number) => served('llama-server', url, body, p, n, false, '/completion');
  return {
    name: 'llama-server', pid: child.pid!, chat, many: (ps, n) => manyServed(chat, ps, n),
    stop: () => new Promise((done) => (child.once('exit', () => done()), child.kill('SIGTERM'))),
  };
}
let llamaServerArgs = '';
/** llama-server's requests disallow the tokens that are not UTF-8 on their own (./utf8-bias.ts: its output parser's 500). */
const partialTokens = partialUtf8Tokens(gguf);
const partialBias = partialTokens.map((id) => [id, false]);

async function startNodeLlamaCpp(): Promise<Target> {
  const child = await LlamaChild.start({ modelPath: gguf, contextSize: CONTEXT, threads: THREADS, sequences: SEQUENCES });
  return {
    name: 'node-llama-cpp',
    pid: child.pid,
    async chat(p, n) {
      const started = performance.now();
      const { runs } = await child.run([p.ids], n);
      const total = performance.now() - started;
      return { ttftMs: n === 1 ? total : runs[0]!.ttftMs, decodeTps: runs[0]!.decodeTps, totalMs: total, promptTokens: p.ids.length, completionTokens: n };
    },
    async many(ps, n) {
      const { runs, aggregateTps } = await child.run(ps.map((p) => p.ids), n);
      return { aggregateTps, decodeTps: runs.map((r) => r.decodeTps) };
    },
    stop: () => child.stop(),
  };
}

// --- the run ------------------------------------------------------------------------------------

/** Which llama.cpp binary node-llama-cpp loads for ours and its child: a build made here comes first (scripts/build-llama.ts). */
const LLAMA_BINARY = fs.existsSync(path.join(NODE_LLAMA_CPP_ROOT, 'llama', 'localBuilds'))
  ? 'built here by `npm run build:llama` (GGML_NATIVE, OpenMP), loaded before the prebuilt ones'
  : "node-llama-cpp's prebuilt CPU binary (no OpenMP; the variant for this CPU's family)";

const build = values['no-llama-server'] ? 'left out (--no-llama-server)' : ensureLlamaServer();
const notes: string[] = [];
if (typeof build === 'string') {
  notes.push(`llama-server skipped: ${build}.`);
  process.stderr.write(`${build}: llama-server skipped\n`);
}
const loads: Array<{ at: string; load: number }> = [{ at: 'start', load: load() }];
const targets: Target[] = [await startOurs()];
if (typeof build !== 'string') targets.push(await startLlamaServer(build.binary));
if (!values['no-node-llama-cpp']) targets.push(await startNodeLlamaCpp());

type Measure = string;
const samples = new Map<Measure, Map<string, number[]>>();
const record = (measure: Measure, target: string, value: number) => {
  const byTarget = samples.get(measure) ?? new Map<string, number[]>();
  samples.set(measure, byTarget);
  byTarget.set(target, [...(byTarget.get(target) ?? []), value]);
};
const promptTokens = new Map<number, number>();

try {
  // Warm-up: every target decodes once and prefills the longest prompt once (arenas sized, pages touched).
  for (const t of targets) {
    await t.chat(promptOf(SHORT_PROMPT, 999), 4);
    await t.chat(promptOf(Math.max(...PROMPTS), 999), 1);
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
    for (const tokens of PROMPTS) {
      for (const t of order) {
        await settle();
        const prompt = promptOf(tokens, round);
        promptTokens.set(tokens, prompt.ids.length);
        record(`TTFT, ${tokens}-token prompt (ms)`, t.name, (await t.chat(prompt, 1)).ttftMs);
      }
    }
    for (const streams of STREAMS) {
      for (const t of order) {
        await settle();
        const ps = Array.from({ length: streams }, (_, i) => promptOf(SHORT_PROMPT, round * 100 + i));
        if (streams === 1) {
          const one = await t.chat(ps[0]!, DECODE);
          record('decode, 1 stream (tok/s after the first token)', t.name, one.decodeTps);
          record('1 stream, aggregate (tok/s, prefill included)', t.name, (DECODE * 1000) / one.totalMs);
        } else {
          const { aggregateTps, decodeTps } = await t.many!(ps, DECODE);
          record(`${streams} streams, aggregate (tok/s, prefill included)`, t.name, aggregateTps);
          record(`${streams} streams, each after its first token (tok/s, median)`, t.name, median(decodeTps));
        }
      }
    }
    loads.push({ at: `round ${round + 1}`, load: load() });
    process.stderr.write(`round ${round + 1}/${ROUNDS} done (load ${load()})\n`);
  }
  for (const t of targets) {
    record('peak RSS, process tree (MiB)', t.name, peakOf(t.pid));
    record('peak RSS, code shared within the tree counted once (MiB)', t.name, peakSharedOnceOf(t.pid));
  }
} finally {
  for (const t of targets) await t.stop();
  agent.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
}

// --- the table ----------------------------------------------------------------------------------

const names = targets.map((t) => t.name);
const peers = names.filter((n) => n !== 'ours');
const rows = [...samples].map(([measure, byTarget]) => {
  const ours = median(byTarget.get('ours') ?? []);
  return [measure, ...names.map((n) => median(byTarget.get(n) ?? [])), ...peers.map((p) => ours / median(byTarget.get(p) ?? []))];
});
const tables: Table[] = [{
  title: `${MODEL}: ${SEQUENCES} sequences of ${CONTEXT} tokens each, ${THREADS} threads, medians of ${ROUNDS} interleaved rounds`,
  columns: ['measure', ...names, ...peers.map((p) => `ours / ${p}`)],
  rows,
}];
tables.push({ title: 'Load average (1 min), shared machine', columns: ['when', 'load'], rows: loads.map((l) => [l.at, l.load]) });
writeResults(values.name!, {
  gguf: path.basename(gguf), model: MODEL, context: CONTEXT, sequences: SEQUENCES, threads: THREADS, rounds: ROUNDS, decode: DECODE, shortPrompt: SHORT_PROMPT,
  promptTokens: Object.fromEntries(promptTokens), serverEnv: SERVER_ENV, llamaBinary: LLAMA_BINARY, llamaServer: typeof build === 'string' ? { skipped: build } : { ...build, args: llamaServerArgs },
  loads, samples: Object.fromEntries([...samples].map(([m, byTarget]) => [m, Object.fromEntries(byTarget)])),
}, tables, [
  ...notes,
  typeof build === 'string' ? '' : `llama-server: ${build.describe}; run as \`llama-server ${llamaServerArgs.replace(gguf, path.basename(gguf))}\`, requests to its /completion with the token ids our chat layer renders, \`cache_prompt: false\`, \`ignore_eos\`, and a logit bias that disallows the ${partialTokens.length} tokens that are not valid UTF-8 on their own (llama-server parses every output, /completion's too, and answers a random-weight model's malformed UTF-8 with a 500; the bias leaves the compute per token as it is: one forward pass, one greedy sample after ${partialTokens.length} additions).`,
  `llama.cpp in ours and node-llama-cpp: ${LLAMA_BINARY}.`,
  `Ours: the compiled server (dist/src/main.js, as npm start runs it), the GGUF model in its own process, GENERATION_BATCH_SIZE=${SEQUENCES}, contextLength ${CONTEXT} (its manifest), INTRA_OP_THREADS=${THREADS}, PROMPT_CACHE_BYTES=0${Object.keys(SERVER_ENV).length ? `, ${JSON.stringify(SERVER_ENV)}` : ''}; requests with \`ignore_eos\`, \`reasoning_effort: none\`. node-llama-cpp: in a child process (scripts/bench/llama-cpp-child.ts), ${SEQUENCES} sequences of ${CONTEXT}, batch 512, fed the token ids our chat layer renders.`,
  `TTFT: a request of max_tokens 1 answered whole (prefill and the first token), ${[...promptTokens].map(([k, v]) => `${k}: ${v} tokens`).join(', ')}. Decoding: prompts of ${SHORT_PROMPT} tokens, ${DECODE} tokens each, greedy, streamed; aggregate = streams × tokens over the wall time from the first request sent to the last answer. Peak RSS: VmHWM summed over each process tree (ours: server + model process), the lifetime peak; and the same with the files the model process maps that the server process maps too (Node's binary, the C/C++ libraries: the same physical pages) counted once (./process-memory.ts peakSharedOnceOf). Ratios: ours / peer (TTFT and RSS: lower is better; tok/s: higher is better).`,
  ...[...mismatches].map((m) => `Prompt counts differ: ${m}.`),
  `Load average at start ${loads[0]!.load}, at end ${loads.at(-1)!.load}: on a shared machine the absolute figures are indicative; the ratios, from interleaved rounds, are what count.`,
].filter(Boolean));
process.exit(0);

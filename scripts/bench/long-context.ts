/**
 * Decoding at long context, against llama.cpp in the same run (issue 18): the server (src/main.ts in
 * a child process, over HTTP/SSE) and llama.cpp (node-llama-cpp's prebuilt CPU binary, in its own
 * child process: ./llama-cpp-child.ts) run the same weights, converted to GGUF by
 * scripts/builders/gguf/from-onnx.ts, at the same thread count, one run after the other.
 *
 * For each subject and context length, both engines start fresh (so each one's peak RSS belongs to
 * that context), warm up once, then alternate `--runs` measured runs: time to first token for a
 * prompt of that length, then decode tok/s over `--decode-tokens` tokens after it. Then, at the
 * shortest prompt, aggregate decode tok/s of `--concurrency` sequences at once (the server's
 * continuous batching; llama.cpp with as many parallel sequences). Ratios are project / llama.cpp.
 *
 * Model-builder-form subjects (`*-mb-q4`, `*-mb-q4f16`, `*-mb-q8`: GroupQueryAttention + MatMulNBits,
 * ../models/onnx/model-builder-lm.ts) run against llama.cpp Q4_0 / Q8_0 written from their own
 * dequantized blocks, which hold the same values (the q4 and q4f16 subjects share their blocks).
 *
 * GGUF subjects (`*-gguf-f32`, `*-gguf-q8`, `*-gguf-q4`, ./gguf-subject.ts): the server serving a
 * GGUF file on its llama.cpp engine (src/engines/llama/), over HTTP/SSE like the others, against
 * node-llama-cpp driving the same file directly: what the server adds around llama.cpp. The server
 * runs with GENERATION_BATCH_SIZE=1 for the one-sequence runs and `--concurrency` for the concurrent
 * one, its sequences as long as llama.cpp's (so both allocate the same KV cache); each prompt's
 * token count, as the server reports it, is checked against the ids llama.cpp is given.
 *
 *   npm run bench:longctx       (the whole table: both shapes, every form, contexts 32, 512, 2048, 8192)
 *
 * Each run also adds its rows to the table kept across runs, bench/results/long-context-table.md
 * (./long-context-table.ts): the whole table takes several hours here, so it is filled in parts.
 *   npm run bench:longctx -- --subjects smollm2-135m-shape-fp32,smollm2-135m-shape-q8 --contexts 32,2048,8192 --runs 3
 *   npm run bench:longctx -- --subjects smollm2-135m-shape-mb-q4,smollm2-135m-shape-mb-q4f16 --name long-context-model-builder
 *   npm run bench:longctx -- --subjects smollm2-135m-shape-gguf-q8 --contexts 32,2048,8192 --runs 5 --name long-context-gguf
 *
 * Every result file and every row of the kept table records the machine (./report.ts machine(): the
 * CPU model, the instruction sets that matter, the GPU if any).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_MODELS, ensureBundledModels } from '../builders/bundled/index.js';
import { onnxToGguf } from '../builders/gguf/from-onnx.js';
import { tensorBytes, type GgmlType } from '../builders/gguf/gguf-writer.js';
import { measureBandwidth } from './bandwidth.js';
import { isDerivedFile } from '../../src/models/derived-files.js';
import { machine, median, writeResults, type Table } from './report.js';
import { currentCommit, recordRows, type TableRow } from './long-context-table.js';
import { startServerProcess, streamOnce, type StreamRun } from './server-process.js';
import { GGUF_FORMS, ggufSourceOf, ggufSubjectFile, ggufTypeOf, isGgufSubject, writeGgufServerFolder } from './gguf-subject.js';
import { LlamaChild, type Run } from './llama-cpp-child-client.js';
import { peakOf, pssOf } from './process-memory.js';

/** Both shapes, the optimum-style form (fp32, 8-bit) and the model-builder form (q4, q4f16, 8-bit). */
const FULL_TABLE = ['smollm2-135m-shape', 'qwen2.5-0.5b-shape'].flatMap((shape) => ['fp32', 'q8', 'mb-q4', 'mb-q4f16', 'mb-q8', ...Object.keys(GGUF_FORMS)].map((form) => `${shape}-${form}`));
const FULL_CONTEXTS = [32, 512, 2048, 8192];
const FULL_CONCURRENCY = 8;

const { values } = parseArgs({
  options: {
    /** Default: issue 18's whole table (every shape and form; several hours on a 2-core machine). */
    subjects: { type: 'string', default: FULL_TABLE.join(',') },
    contexts: { type: 'string', default: FULL_CONTEXTS.join(',') },
    runs: { type: 'string', default: '3' },
    'decode-tokens': { type: 'string', default: '16' },
    concurrency: { type: 'string', default: String(FULL_CONCURRENCY) },
    threads: { type: 'string', default: '2' },
    /** Extra environment for the server, KEY=VALUE,KEY=VALUE (e.g. to compare a switch). */
    'server-env': { type: 'string', default: '' },
    /** Also run the server with the export's own attention (FUSED_ATTENTION=false), interleaved: before / after in one run. */
    'compare-export': { type: 'boolean', default: false },
    /** Also run the server with every decoding step through GroupQueryAttention (IN_PLACE_DECODE_MIN_CONTEXT=0, no step graph), interleaved. */
    'compare-gqa-decode': { type: 'boolean', default: false },
    /** Also run the server with a float32 KV cache stored as float16 (KV_CACHE_DTYPE=float16), interleaved. */
    'compare-kv-float16': { type: 'boolean', default: false },
    /** GGUF subjects: the same server with GGUF_PROCESS=false (the model in a worker thread of the server's, no child process), in the same runs. */
    'compare-gguf-thread': { type: 'boolean', default: false },
    /** Also run the server at its default thread count (INTRA_OP_THREADS=0: onnxruntime's default; for GGUF, the cores that do math), interleaved. */
    'compare-default-threads': { type: 'boolean', default: false },
    /** Run the server under tsx from the TypeScript source instead of compiled as `npm start` runs it (tsx costs every worker ~100 MiB of RSS). */
    tsx: { type: 'boolean', default: false },
    name: { type: 'string', default: 'long-context' },
  },
});
const SUBJECTS = values.subjects!.split(',');
const CONTEXTS = values.contexts!.split(',').map(Number);
const RUNS = Number(values.runs);
const DECODE = Number(values['decode-tokens']);
const CONCURRENCY = Number(values.concurrency) || 0;
const THREADS = Number(values.threads);
const SERVER_ENV = Object.fromEntries(values['server-env']!.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
/** The server configurations measured, each against the same llama.cpp runs; the first is the project as configured. */
const VARIANTS: Array<{ name: string; env: Record<string, string> }> = [
  { name: 'project', env: SERVER_ENV },
  ...(values['compare-export'] ? [{ name: 'project, export attention', env: { ...SERVER_ENV, FUSED_ATTENTION: 'false' } }] : []),
  ...(values['compare-gqa-decode'] ? [{ name: 'project, GroupQueryAttention decode', env: { ...SERVER_ENV, IN_PLACE_DECODE_MIN_CONTEXT: '0' } }] : []),
  ...(values['compare-kv-float16'] ? [{ name: 'project, float16 KV cache', env: { ...SERVER_ENV, KV_CACHE_DTYPE: 'float16' } }] : []),
  ...(values['compare-gguf-thread'] ? [{ name: 'project, GGUF in a worker thread', env: { ...SERVER_ENV, GGUF_PROCESS: 'false' } }] : []),
  ...(values['compare-default-threads'] ? [{ name: 'project, default threads', env: { ...SERVER_ENV, INTRA_OP_THREADS: '0' } }] : []),
];
/** The llama.cpp file type for each of our dtypes. */
const GGUF_TYPE: Record<string, Exclude<GgmlType, 'F16'>> = { fp32: 'F32', q8: 'Q8_0', q4: 'Q4_0', q4f16: 'Q4_0' };

const benchModels = path.resolve('bench/models');
const dtypeOf = (subject: string) => /-(fp32|q8|q4|q4f16)$/.exec(subject)?.[1] ?? 'fp32';
/**
 * The subject a GGUF is written from: the fp32 one for the optimum-style subjects (the same random
 * weights; llama.cpp quantizes its own way); for model-builder subjects their own MatMulNBits blocks
 * (q4f16 shares q4's), so both engines multiply by the same values.
 */
const sourceOf = (subject: string) => (isGgufSubject(subject) ? ggufSourceOf(subject) : /-mb-/.test(subject) ? subject.replace(/-q4f16$/, '-q4') : subject.replace(/-(fp32|q8|q4)$/, '-fp32'));
const sources = new Set(SUBJECTS.map(sourceOf));
ensureBundledModels({ modelsDir: path.resolve('models') }); // the word list comes from the bundled GloVe model
ensureBundledModels({ modelsDir: benchModels, models: BENCH_MODELS.filter((m) => SUBJECTS.includes(m.manifest.id) || sources.has(m.manifest.id)) });

function ggufFor(subject: string): { file: string; type: Exclude<GgmlType, 'F16'> } {
  // The server serves this very file, so it carries a chat template (./gguf-subject.ts).
  if (isGgufSubject(subject)) return { file: ggufSubjectFile(benchModels, subject), type: ggufTypeOf(subject) };
  const type = GGUF_TYPE[dtypeOf(subject)]!;
  const source = path.join(benchModels, sourceOf(subject));
  const file = path.join(benchModels, 'gguf', `${path.basename(source).replace(/-(fp32|q4|q8)$/, '')}-${type}.gguf`);
  const onnxFile = `onnx/${fs.readdirSync(path.join(source, 'onnx')).find((f) => /^model(_q4|_quantized)?\.onnx$/.test(f))}`;
  if (!fs.existsSync(file) || fs.statSync(file).mtimeMs < fs.statSync(path.join(source, onnxFile)).mtimeMs) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    process.stderr.write(`writing ${path.relative(process.cwd(), file)}\n`);
    onnxToGguf({ modelDir: source, onnxFile, out: file, type });
  }
  return { file, type };
}

// --- the server -------------------------------------------------------------------------------

// The bench subjects' word-level tokenizer makes one token of each of these words; the chat template adds 5.
const WORDS = 'the river city people music market garden paper engine report friend window history morning answer science number between several through'.split(' ');
const TEMPLATE_TOKENS = 5;
/**
 * `tokens` prompt tokens in all; `variant` changes the words, so no run reuses another's prefix: the
 * first two words spell the variant (distinct below 400), so two prompts share at most the
 * template's first tokens. (The llama engine keeps each sequence's KV after its request and reuses
 * the longest prefix a prompt shares with one, whatever the prompt cache setting.)
 */
const promptText = (tokens: number, variant: number) => Array.from({ length: tokens - TEMPLATE_TOKENS }, (_, i) => WORDS[(i === 0 ? variant : i === 1 ? Math.floor(variant / WORDS.length) : i * 7 + variant) % WORDS.length]).join(' ');
/** Token ids for llama.cpp: ids of ordinary words (>= 4: the specials come first), varied by run. */
const promptIds = (tokens: number, variant: number) => Array.from({ length: tokens }, (_, i) => 4 + ((i * 7919 + variant * 104729) % 40000));

/**
 * onnxruntime's and llama.cpp's idle threads spin for a while after a run; whichever engine ran last
 * would slow the next one's start. Every measured run starts after this pause.
 */
const SETTLE_MS = 300;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

// --- the run ----------------------------------------------------------------------------------

const load = [os.loadavg()[0]!];
const bandwidth = await measureBandwidth(THREADS);
process.stderr.write(`memory bandwidth (copy, ${THREADS} threads): ${(bandwidth / 1e9).toFixed(1)} GB/s\n`);
const data: Record<string, unknown> = { bandwidthBytesPerSecond: bandwidth, threads: THREADS, decodeTokens: DECODE, runs: RUNS, serverEnv: SERVER_ENV };
const tables: Table[] = [];
const summary: Array<Array<string | number>> = [];
/** This run's rows of the table kept across runs (./long-context-table.ts). */
const tableRows: TableRow[] = [];
const runOf = { run: values.name!, date: new Date().toISOString(), commit: currentCommit(), load: load[0]!, machine: machine() };

for (const subject of SUBJECTS) {
  const gguf = ggufFor(subject);
  /** The server runs this GGUF file on its llama.cpp engine (./gguf-subject.ts). */
  const served = isGgufSubject(subject);
  const config = JSON.parse(fs.readFileSync(path.join(benchModels, sourceOf(subject), 'config.json'), 'utf8'));
  const { hidden_size: H, vocab_size: V, num_hidden_layers: L, num_key_value_heads: KV, head_dim: D } = config;
  // Bytes read per decoded token: every weight but the embedding table (one row is gathered), plus the
  // KV cache. The export's own file only (derived graphs beside it reference its weights).
  const half = dtypeOf(subject) === 'q4f16'; // float16 embedding table and KV
  const llamaBytes = fs.statSync(gguf.file).size - tensorBytes(gguf.type, V * H);
  const onnxDir = path.join(benchModels, subject, 'onnx');
  // A GGUF subject: the server reads the same file as llama.cpp.
  const onnxBytes = served ? llamaBytes : fs.readdirSync(onnxDir).filter((f) => !isDerivedFile(f)).reduce((sum, f) => sum + fs.statSync(path.join(onnxDir, f)).size, 0) - V * H * (half ? 2 : 4);
  const llamaKvPerPosition = 2 * L * KV * D * 2; // F16 KV
  // fp32 KV, fp16 for q4f16 or a variant storing it as float16; the llama engine's F16 for a GGUF subject
  const projectKvPerPosition = (env: Record<string, string>) => (served ? llamaKvPerPosition : 2 * L * KV * D * (half || env.KV_CACHE_DTYPE === 'float16' ? 2 : 4));

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-longctx-'));
  if (!served) fs.symlinkSync(path.join(benchModels, subject), path.join(dir, subject));
  const rows: Array<Array<string | number>> = [];
  const subjectData: Record<string, unknown> = { gguf: path.basename(gguf.file), onnxBytesPerToken: onnxBytes, llamaBytesPerToken: llamaBytes };
  let flashAttention = false;

  /**
   * `sequenceTokens`, `sequences`: a GGUF subject's context, as llama.cpp's child gets it (the server's
   * llama engine holds GENERATION_BATCH_SIZE sequences of the manifest's context length each).
   */
  const startServer = (env: Record<string, string>, sequenceTokens = 0, sequences = 1) => {
    if (served) writeGgufServerFolder(dir, subject, gguf.file, benchModels, sequenceTokens);
    return startServerProcess(['--models-dir', dir], {
      REQUEST_TIMEOUT_MS: '0', MAX_QUEUE: '64', WORKERS_PER_MODEL: '1', INTRA_OP_THREADS: String(THREADS),
      PROMPT_CACHE_BYTES: '0', ...(served ? { GENERATION_BATCH_SIZE: String(sequences) } : {}), ...env,
    }, { compiled: !values.tsx });
  };
  /** Each prompt's token count as the server counted it must be the count llama.cpp is given. */
  const counted = (run: StreamRun, tokens: number) => {
    if (run.inputTokens + (run.cachedTokens ?? 0) !== tokens) {
      const message = `${subject}: the server counted ${run.inputTokens} + ${run.cachedTokens ?? 0} cached prompt tokens, llama.cpp is given ${tokens}`;
      if (served) throw new Error(message);
      process.stderr.write(`warning: ${message}\n`);
    }
    return run;
  };
  const startLlama = async (contextSize: number, sequences: number) => {
    const llama = await LlamaChild.start({ modelPath: gguf.file, contextSize, threads: THREADS, sequences });
    flashAttention = llama.flashAttention;
    return llama;
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

  // Each configuration's first start writes its rewritten graph beside the model (and its peak RSS
  // includes the rewrite): start and stop each once, so measured starts load the prepared graph.
  if (!served) for (const variant of VARIANTS) await (await startServer(variant.env)).stop();

  for (const asked of CONTEXTS) {
    // The subject's window holds the prompt and the decoded tokens (SmolLM2: 8192 positions).
    const context = Math.min(asked, config.max_position_embeddings - DECODE - 8);
    const servers = [];
    for (const variant of VARIANTS) servers.push(await startServer(variant.env, context + DECODE + 8, 1));
    const llama = await startLlama(context + DECODE + 8, 1);
    try {
      for (const server of servers) counted(await streamOnce(server.url, subject, promptText(context, 99), DECODE, agent), context); // warm-up: arenas sized, model loaded
      await llama.run([promptIds(context, 99)], DECODE);
      const ours: Run[][] = servers.map(() => []);
      const theirs: Run[] = [];
      for (let r = 0; r < RUNS; r++) {
        for (const [v, server] of servers.entries()) {
          await settle();
          ours[v]!.push(counted(await streamOnce(server.url, subject, promptText(context, r), DECODE, agent), context));
        }
        await settle();
        theirs.push((await llama.run([promptIds(context, r)], DECODE)).runs[0]!);
      }
      const tT = median(theirs.map((x) => x.ttftMs));
      const tD = median(theirs.map((x) => x.decodeTps));
      // Other work on the shared cores only ever slows a run: the best run is the least disturbed.
      const tBest = Math.max(...theirs.map((x) => x.decodeTps));
      const meanContext = context + DECODE / 2;
      const oBound = (env: Record<string, string>) => bandwidth / (onnxBytes + projectKvPerPosition(env) * meanContext);
      const tBound = bandwidth / (llamaBytes + llamaKvPerPosition * meanContext);
      const tPeak = peakOf(llama.pid);
      const tPss = pssOf(llama.pid);
      subjectData[`context${context}`] = { llamaCpp: theirs, projectBoundTps: oBound(SERVER_ENV), llamaBoundTps: tBound, llamaPeakMiB: tPeak };
      for (const [v, variant] of VARIANTS.entries()) {
        const oT = median(ours[v]!.map((x) => x.ttftMs));
        const oD = median(ours[v]!.map((x) => x.decodeTps));
        const oBest = Math.max(...ours[v]!.map((x) => x.decodeTps));
        const oPeak = peakOf(servers[v]!.pid);
        const oPss = pssOf(servers[v]!.pid);
        const bound = oBound(variant.env);
        (subjectData[`context${context}`] as Record<string, unknown>)[variant.name] = { runs: ours[v], peakMiB: oPeak };
        rows.push([variant.name, context, oD, tD, oD / tD, oBest, tBest, oBest / tBest, bound, oBest / bound, tBest / tBound, oT, tT, oT / tT, oPeak, tPeak, oPeak / tPeak, oPss, tPss, oPss / tPss]);
        summary.push([subject, variant.name, gguf.type, context, oD / tD, oBest / tBest, oT / tT, Math.min(...ours[v]!.map((x) => x.ttftMs)) / Math.min(...theirs.map((x) => x.ttftMs)), oPeak / tPeak, oPss / tPss, os.loadavg()[0]!]);
        tableRows.push({ subject, engine: variant.name, llamaFile: gguf.type, context: String(asked), ...(asked !== context ? { tokens: context } : {}), decodeRatio: oD / tD, bestDecodeRatio: oBest / tBest, ttftRatio: oT / tT, bestTtftRatio: Math.min(...ours[v]!.map((x) => x.ttftMs)) / Math.min(...theirs.map((x) => x.ttftMs)), rssRatio: oPeak / tPeak, projectTps: oD, llamaTps: tD, boundFraction: oBest / bound, llamaBoundFraction: tBest / tBound, ...runOf, loadAfter: os.loadavg()[0]! });
        process.stderr.write(`${subject} ${variant.name} context ${context}: decode ${oD.toFixed(1)} / ${tD.toFixed(1)} tok/s, TTFT ${oT.toFixed(0)} / ${tT.toFixed(0)} ms, peak ${oPeak.toFixed(0)} / ${tPeak.toFixed(0)} MiB (load ${os.loadavg()[0]!.toFixed(1)})\n`);
      }
    } finally {
      for (const server of servers) await server.stop();
      await llama.stop();
    }
  }
  tables.push({
    title: `${subject} vs llama.cpp ${gguf.type} (flash attention ${flashAttention ? 'on' : 'off'}): one sequence, medians of ${RUNS}, ${DECODE} tokens decoded`,
    columns: ['engine', 'context tokens', 'decode tok/s', 'llama.cpp decode tok/s', 'decode ratio', 'best decode tok/s', 'llama.cpp best', 'best ratio', 'bound tok/s', 'best / bound', 'llama.cpp best / its bound', 'TTFT ms', 'llama.cpp TTFT ms', 'TTFT ratio', 'peak RSS MiB', 'llama.cpp peak RSS MiB', 'RSS ratio', 'PSS after MiB', 'llama.cpp PSS after MiB', 'PSS ratio'],
    rows,
  });

  if (CONCURRENCY > 1) {
    const context = CONTEXTS[0]!;
    const server = await startServer(VARIANTS[0]!.env, context + DECODE + 8, CONCURRENCY);
    const llama = await startLlama(context + DECODE + 8, CONCURRENCY);
    try {
      const many = (variant: number) => Array.from({ length: CONCURRENCY }, (_, i) => i + variant * CONCURRENCY);
      await Promise.all(many(99).map(async (v) => counted(await streamOnce(server.url, subject, promptText(context, v), DECODE, agent), context)));
      await llama.run(many(99).map((v) => promptIds(context, v)), DECODE);
      const ours: number[] = [];
      const theirs: number[] = [];
      for (let r = 0; r < RUNS; r++) {
        await settle();
        const t = performance.now();
        await Promise.all(many(r).map(async (v) => counted(await streamOnce(server.url, subject, promptText(context, v), DECODE, agent), context)));
        ours.push((CONCURRENCY * DECODE) / ((performance.now() - t) / 1000));
        await settle();
        theirs.push((await llama.run(many(r).map((v) => promptIds(context, v)), DECODE)).aggregateTps);
      }
      const o = median(ours);
      const t = median(theirs);
      subjectData.concurrency = { sequences: CONCURRENCY, context, project: ours, llamaCpp: theirs };
      tables.push({
        title: `${subject}: ${CONCURRENCY} sequences at once, ${context}-token prompts, aggregate tok/s (prefill included, medians of ${RUNS})`,
        columns: ['sequences', 'project tok/s', 'llama.cpp tok/s', 'ratio'],
        rows: [[CONCURRENCY, o, t, o / t]],
      });
      summary.push([subject, VARIANTS[0]!.name, gguf.type, `${context} × ${CONCURRENCY} seq`, o / t, Math.max(...ours) / Math.max(...theirs), '', '', '', '', os.loadavg()[0]!]);
      tableRows.push({ subject, engine: VARIANTS[0]!.name, llamaFile: gguf.type, context: `${context} × ${CONCURRENCY} seq`, decodeRatio: o / t, bestDecodeRatio: Math.max(...ours) / Math.max(...theirs), projectTps: o, llamaTps: t, ...runOf, loadAfter: os.loadavg()[0]! });
      process.stderr.write(`${subject} ${CONCURRENCY} sequences: ${o.toFixed(1)} / ${t.toFixed(1)} tok/s\n`);
    } finally {
      await server.stop();
      await llama.stop();
    }
  }
  agent.destroy();
  data[subject] = subjectData;
  fs.rmSync(dir, { recursive: true, force: true });
}
load.push(os.loadavg()[0]!);
data.loadAverage = load;

tables.unshift({ title: 'Summary: project / llama.cpp (decode: higher is better; TTFT and RSS: lower is better)', columns: ['subject', 'engine', 'llama.cpp file', 'context', 'decode ratio (medians)', 'decode ratio (best runs)', 'TTFT ratio', 'TTFT ratio (best runs)', 'peak RSS ratio', 'PSS ratio (after the runs)', 'load (1 min) after'], rows: summary });
writeResults(values.name!, data, tables, [
  `Load average (1 min) at start ${load[0]!.toFixed(2)}, at end ${load[1]!.toFixed(2)}: the machine's 2 cores are shared; llama.cpp's threads suffer more than onnxruntime's from other load (shared/MODELS.md), so read ratios with it.`,
  `Both engines: ${THREADS} threads, fresh processes for each context length (peak RSS is that context's), a warm-up run, then alternating runs after a ${SETTLE_MS} ms pause. Project: ${values.tsx ? 'src/main.ts under tsx' : 'the compiled server (dist/src/main.js, as npm start runs it)'} in a child process, 1 worker, prompt cache off, streamed over loopback HTTP (TTFT: request to first content_block_delta)${Object.keys(SERVER_ENV).length ? `, environment ${JSON.stringify(SERVER_ENV)}` : ''}${values['compare-export'] ? '; "project, export attention" is the same server with FUSED_ATTENTION=false (the export\'s concatenating attention, presents fetched every step), in the same runs' : ''}${values['compare-gqa-decode'] ? '; "project, GroupQueryAttention decode" is the same server with IN_PLACE_DECODE_MIN_CONTEXT=0 (every decoding step through GroupQueryAttention, which copies the cache each step; no step graph session), in the same runs' : ''}${values['compare-gguf-thread'] ? '; "project, GGUF in a worker thread" is the same server with GGUF_PROCESS=false (the model in a worker thread of the server\'s, as before the child process), in the same runs' : ''}${values['compare-default-threads'] ? '; "project, default threads" is the same server with INTRA_OP_THREADS=0 (its default thread count), in the same runs' : ''}. llama.cpp: node-llama-cpp's prebuilt CPU binary in a child process, batch 512, flash attention auto, F16 KV, fed token ids (TTFT: evaluate to first token).`,
  'Same weights: the GGUF is written from the fp32 ONNX subject by scripts/builders/gguf/from-onnx.ts (llama.cpp Q8_0 blocks of 32 against our per-tensor int8 for q8; greedy tokens of the F32 file equal onnxruntime\'s, test/model/gguf.test.ts). Model-builder subjects (-mb-): the GGUF is written from their own MatMulNBits blocks (symmetric, blocks of 32, fp16 scales, quantized as Q4_0 / Q8_0 are), so every matrix product reads the same values in both engines (test/model/model-builder.test.ts); only the embedding table (one row gathered per token) is fp32 (q4) / fp16 (q4f16) in ONNX and Q4_0 in the GGUF. MatMulNBits runs with accuracy_level 4 (activations quantized to int8 per block, the model builder\'s CPU default), as llama.cpp quantizes activations to Q8 for its Q4_0 products.',
  `Bound: the memory copy bandwidth measured in this run (${(bandwidth / 1e9).toFixed(1)} GB/s, ${THREADS} threads) / (weight bytes read per token + KV bytes at the mean context: project fp32 (fp16 for q4f16 and the float16 KV cache variant; F16 for GGUF subjects), llama.cpp F16).`,
  `llama.cpp's context: one sequence of prompt + ${DECODE} + 8 tokens for the one-sequence runs; ${CONCURRENCY} sequences of that length each for the concurrent run.`,
  ...(SUBJECTS.some(isGgufSubject) ? [
    `GGUF subjects (-gguf-): the project is the server serving the GGUF file on its llama.cpp engine (src/engines/llama/, node-llama-cpp 3.21.1), llama.cpp is node-llama-cpp driving the same file directly, so the ratios are what the server adds around the same kernels. The file: the shape's fp32 subject converted by scripts/builders/gguf/from-onnx.ts (F32, or quantized by its Q8_0 / Q4_0 reference code), with the subject's ChatML template in its metadata and the output rows of the 4 special tokens zeroed so greedy decoding never ends early (scripts/bench/gguf-subject.ts). The server reads the subject's word-level tokenizer.json beside the GGUF (the llama engine takes a tokenizer.json over the metadata's), so every prompt counts n tokens (checked on each run against the n ids llama.cpp is fed). Server: GENERATION_BATCH_SIZE=1 for the one-sequence runs and ${CONCURRENCY} for the concurrent run, each sequence as long as llama.cpp's (the manifest's contextLength), batch 512 (PREFILL_CHUNK_TOKENS), flash attention auto, F16 KV, INTRA_OP_THREADS=${THREADS} as llama.cpp's threads; its peak RSS is the server process (HTTP, the chat layer) plus the child process it runs the GGUF model in (a worker thread and llama.cpp), each one's peak, summed (an upper bound: Node's code and the mapped model file count once per process); PSS after: the proportional set size of the process tree after the runs (shared pages counted once), the same for llama.cpp's.`,
  ] : []),
]);
recordRows(tableRows, { subjects: FULL_TABLE, contexts: FULL_CONTEXTS, concurrency: FULL_CONCURRENCY });

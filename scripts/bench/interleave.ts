/**
 * Mixed prefill and decode: what a long prompt's prefill does to the other requests of its worker.
 *
 *   npm run bench:interleave                       a ~30k-token prompt on the bundled chat model, 3 rounds
 *   npm run bench:interleave -- --prompt-words 8000 --rounds 5
 *
 * In each round, on one server (one worker, prompt cache off so every prompt is prefilled):
 * - alone: a short request (time to its answer) and a running stream (its gaps between tokens);
 * - during a long prompt's prefill: the same short request, sent once the long prefill is a third
 *   of the way through (its time alone, measured first in the round), and the same stream, started
 *   with the long prompt.
 * Ratios against "alone" from the same round. Before chunked prefill was interleaved with decoding
 * (src/engines/onnx/decode/scheduler.ts), the short request waited for the whole prefill and the stream
 * stopped for it. Results: bench/results/interleave.md.
 *
 * On llama.cpp (issue 41): `--gguf` (the test GGUF, Qwen3's tokenizer, built as the tests build it)
 * or `--gguf-file FILE`, served from a folder of its own whose manifest sets `--context` (default 32768,
 * for the default prompt) tokens per sequence; there the prefill is fed in chunks of
 * PREFILL_CHUNK_TOKENS (src/engines/llama/runner.ts) between the other sequences' decoding steps.
 * Results: bench/results/interleave-gguf.md.
 *
 *   npm run bench:interleave -- --gguf --prompt-words 6000 --context 8192 --rounds 2
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ggufFolder } from './gguf-folder.js';
import { median, writeResults } from './report.js';
import { startServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    'prompt-words': { type: 'string', default: '30000' },
    rounds: { type: 'string', default: '3' },
    model: { type: 'string', default: 'tiny-qwen3-random' },
    /** A GGUF on llama.cpp: the test GGUF, or `--gguf-file`. */
    gguf: { type: 'boolean', default: false },
    'gguf-file': { type: 'string' },
    context: { type: 'string', default: '32768' },
  },
});
const WORDS = Number(values['prompt-words']);
const ROUNDS = Number(values.rounds);
// A models folder holding the GGUF alone, its manifest giving each sequence `--context` tokens.
const GGUF = values.gguf || values['gguf-file'] ? ggufFolder(values['gguf-file'], 'bench-interleave', { contextLength: Number(values.context) }) : undefined;
const MODEL = GGUF?.model ?? values.model;
const HEADERS = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
const VOCAB = 'river city people music market bright quiet storm garden paper engine report friend window history'.split(' ');
const longPrompt = Array.from({ length: WORDS }, (_, i) => VOCAB[i % VOCAB.length]).join(' ');


const server = await startServerProcess(['--allow-unauthenticated', '--prompt-cache-bytes', '0', '--workers-per-model', '1', ...(GGUF ? ['--models-dir', GGUF.dir] : [])]);

/** One Messages request, streamed; the times (ms from its start) of its first byte and of each text delta. */
function streamed(content: string, maxTokens: number): Promise<{ totalMs: number; deltaMs: number[]; inputTokens: number }> {
  const body = JSON.stringify({ model: MODEL, max_tokens: maxTokens, stream: true, temperature: 0, messages: [{ role: 'user', content }] });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/v1/messages`, { method: 'POST', agent: false, headers: { ...HEADERS, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const deltaMs: number[] = [];
      let inputTokens = 0;
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.includes('event: content_block_delta')) deltaMs.push(performance.now() - started);
          const usage = /"input_tokens":(\d+)/.exec(frame);
          if (usage && frame.includes('event: message_start')) inputTokens = Number(usage[1]);
        }
      });
      res.on('end', () => (res.statusCode === 200 ? resolve({ totalMs: performance.now() - started, deltaMs, inputTokens }) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

interface Round { longMs: number; longTokens: number; shortAloneMs: number; shortDuringMs: number; gapAloneMaxMs: number; gapAloneMedianMs: number; gapDuringMaxMs: number }
const rounds: Round[] = [];
try {
  await streamed('warm up', 4);
  for (let r = 0; r < ROUNDS; r++) {
    const alone = await streamed(longPrompt, 1);
    const shortAlone = await streamed('Hi there', 2);
    const streamAlone = await streamed('Count with me', 64);
    // The stream starts first and is decoding when the long prompt arrives; the short request comes a
    // third of the way into the long prefill.
    const stream = streamed('Count with me', 64 + Math.ceil(alone.totalMs / 10));
    await sleep(50);
    const long = streamed(longPrompt, 1);
    await sleep(alone.totalMs / 3);
    const shortDuring = await streamed('Hi there', 2);
    const [longRun, streamRun] = await Promise.all([long, stream]);
    rounds.push({
      longMs: longRun.totalMs, longTokens: longRun.inputTokens,
      shortAloneMs: shortAlone.totalMs, shortDuringMs: shortDuring.totalMs,
      gapAloneMaxMs: Math.max(...gaps(streamAlone.deltaMs)), gapAloneMedianMs: median(gaps(streamAlone.deltaMs)),
      gapDuringMaxMs: Math.max(...gaps(streamRun.deltaMs.filter((t) => t <= longRun.totalMs + 50))),
    });
    process.stderr.write(`round ${r + 1}: ${JSON.stringify(rounds.at(-1))}\n`);
  }
} finally {
  await server.stop();
  if (GGUF) fs.rmSync(GGUF.dir, { recursive: true, force: true });
}

const med = (key: keyof Round) => median(rounds.map((r) => r[key]));
writeResults(GGUF ? 'interleave-gguf' : 'interleave', { words: WORDS, model: MODEL, ...(GGUF ? { gguf: path.basename(GGUF.gguf), context: Number(values.context) } : {}), rounds }, [
  {
    title: `A ${Math.round(med('longTokens'))}-token prompt's prefill (${(med('longMs') / 1000).toFixed(1)} s alone) and the other requests of its worker (median of ${ROUNDS} rounds)`,
    columns: ['measure', 'alone ms', 'during the long prefill ms', 'ratio'],
    rows: [
      ['short request (2 tokens out), time to its answer', med('shortAloneMs'), med('shortDuringMs'), med('shortDuringMs') / med('shortAloneMs')],
      ['running stream, longest gap between tokens', med('gapAloneMaxMs'), med('gapDuringMaxMs'), med('gapDuringMaxMs') / med('gapAloneMaxMs')],
    ],
  },
], [
  `${GGUF ? `${path.basename(GGUF.gguf)} on llama.cpp (node-llama-cpp), the server's defaults for its sequences, ${values.context} tokens each (its manifest); ` : `${MODEL} on onnxruntime, `}one worker, prompt cache off, prefill chunk 512 tokens (the default). "Alone": the same request with nothing else running, measured in the same round. A stream's median gap alone: ${med('gapAloneMedianMs').toFixed(1)} ms.`,
]);

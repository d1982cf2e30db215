/**
 * Claude Code's first turn (test/fixtures/clients/claude-code-print-json.json: 24 tools, ~18.7k
 * tokens on the Qwen3 template) sent twice more after a cold first time, to a server with the prompt
 * cache on (the default) and to one with it off (PROMPT_CACHE_BYTES=0), interleaved: time to the
 * first content block, and the cache_read_input_tokens the server reports. The second request of
 * Claude Code's next turn resends this whole prefix, so warm/cold is what an agent's turn 2+ costs.
 *
 * `--engine gguf`: a ten-turn session on a GGUF chat model instead, cold against warm in memory, warm
 * from disk after an idle unload and after a restart (./agent-cache-gguf.ts).
 *
 *   npm run bench:agent-cache [-- --runs 3 --model tiny-qwen3-random --models-dir models]
 *   npm run bench:agent-cache -- --engine gguf [--turns 10 --runs 1 --gguf FILE]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { GGUF_COLUMNS, ggufSession, ggufSummary, ggufTable } from './agent-cache-gguf.js';
import { median, writeResults } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    model: { type: 'string', default: 'tiny-qwen3-random' },
    'models-dir': { type: 'string', default: 'models' },
    engine: { type: 'string', default: 'onnx' },
    turns: { type: 'string', default: '10' },
    gguf: { type: 'string' },
  },
});
if (!['onnx', 'gguf'].includes(values.engine!)) throw new Error(`--engine ${values.engine}: onnx or gguf`);
const RUNS = Number(values.runs);
const MODEL = values.model!;
const fixture = JSON.parse(fs.readFileSync(path.resolve('test/fixtures/clients/claude-code-print-json.json'), 'utf8')) as { requests: Array<{ method: string; body: Record<string, unknown> }> };
// Thinking off, so the one token asked for is not the forced `<think>` (which streams no text).
const captured = fixture.requests.find((r) => r.method === 'POST')!.body;
const body: Record<string, unknown> = { ...captured, model: MODEL, max_tokens: 1, stream: true, thinking: { type: 'disabled' } };

/** One request: ms to the first content block event, and the usage message_start reports. */
async function send(server: ServerProcess, body: Record<string, unknown>): Promise<{ ms: number; inputTokens: number; cacheRead: number }> {
  const started = performance.now();
  const res = await fetch(`${server.url}/v1/messages?beta=true`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  const reader = res.body!.getReader();
  let seen = '';
  let ms = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += new TextDecoder().decode(value);
    if (!ms && seen.includes('event: content_block_start')) ms = performance.now() - started;
  }
  const start = seen.split('\n').find((l) => l.startsWith('data: ') && l.includes('"message_start"'));
  if (!start) throw new Error(`no message_start: ${seen.slice(0, 300)}`);
  const usage = (JSON.parse(start.slice(6)) as { message: { usage: { input_tokens: number; cache_read_input_tokens: number } } }).message.usage;
  return { ms, inputTokens: usage.input_tokens + usage.cache_read_input_tokens, cacheRead: usage.cache_read_input_tokens };
}

if (values.engine === 'gguf') {
  const turns = Number(values.turns);
  const { model, rows } = await ggufSession({ gguf: values.gguf, turns, runs: RUNS, first: captured, send, log: (l) => console.log(l) });
  writeResults('agent-prompt-cache-gguf', { model, runs: RUNS, turns, rows }, [{
    title: `A ${turns}-turn Claude Code session on ${model} (GGUF, no manifest): TTFT cold, warm in memory, warm from disk after an unload and after a restart, median of ${RUNS}`,
    columns: GGUF_COLUMNS,
    rows: ggufTable(rows, turns),
  }], [ggufSummary(rows, turns), 'Each server is the compiled server (as npm start runs it) on its own prompt cache folder; cold has the cache off in memory and on disk. The unload, load and restart happen before a turn is sent and are not in its time.']);
  process.exit(0);
}

const args = ['--models-dir', path.resolve(values['models-dir']!)];
const on = await startServerProcess(args);
const off = await startServerProcess(args, { PROMPT_CACHE_BYTES: '0' });
const rows: Array<{ request: number; server: string; ms: number; inputTokens: number; cacheRead: number }> = [];
try {
  for (let run = 0; run < RUNS; run++) {
    // A fresh conversation each run (so its first request is cold on both): a session line first.
    body.system = [{ type: 'text', text: `Session ${run} ${Date.now()}.` }, ...(captured.system as unknown[])];
    for (let request = 1; request <= 3; request++) {
      for (const [name, server] of (request + run) % 2 ? [['on', on], ['off', off]] as const : [['off', off], ['on', on]] as const) {
        const r = await send(server, body);
        rows.push({ request, server: name, ...r });
        console.log(`run ${run} request ${request} cache ${name}: ${r.ms.toFixed(0)} ms, ${r.inputTokens} tokens, ${r.cacheRead} read from cache`);
      }
    }
  }
} finally {
  await Promise.all([on.stop(), off.stop()]);
}
const med = (request: number, server: string) => median(rows.filter((r) => r.request === request && r.server === server).map((r) => r.ms));
const table = [1, 2, 3].map((request) => {
  const cold = med(request, 'off');
  const warm = med(request, 'on');
  const read = rows.filter((r) => r.request === request && r.server === 'on').at(-1)!;
  return [request, read.inputTokens, read.cacheRead, cold.toFixed(0), warm.toFixed(0), (warm / cold).toFixed(3)];
});
writeResults('agent-prompt-cache', { model: MODEL, runs: RUNS, rows }, [{
  title: `Claude Code's first turn sent three times (${MODEL}): TTFT with the prompt cache off vs on, median of ${RUNS}`,
  columns: ['request', 'prompt tokens', 'read from cache (on)', 'TTFT ms, cache off', 'TTFT ms, cache on', 'on / off'],
  rows: table,
}]);

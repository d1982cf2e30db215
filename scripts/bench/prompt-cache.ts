/**
 * Prompt caching on an agent-like conversation: a ~3k-token system prompt with tools, then five
 * turns, each resending the whole conversation so far. Time to first token per turn on a server with
 * the prefix cache and on one without it (PROMPT_CACHE_BYTES=0), both in this run, requests
 * alternating between them; the replies are checked equal (greedy), and the cached server's usage
 * shows how many prompt tokens it read from the cache.
 *
 *   npm run bench:cache [-- --runs 3 --models-dir models --model tiny-qwen3-random]
 *
 * Each run is a new conversation with its own system prompt (a session line in front), so turn 1 is
 * always cold on both servers.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildApp, closeApp } from '../../src/app.js';
import { ENGINE_DEFAULTS } from '../../src/core/engine-settings.js';
import { LocalInferenceService } from '../../src/inference/service.js';
import { scanModels } from '../../src/models/registry.js';
import { ensureBundledModels } from '../builders/bundled/index.js';
import { median, writeResults } from './report.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    turns: { type: 'string', default: '5' },
    'models-dir': { type: 'string', default: 'models' },
    model: { type: 'string', default: 'tiny-qwen3-random' },
    'max-tokens': { type: 'string', default: '16' },
    'intra-op-threads': { type: 'string', default: '0' },
  },
});
const RUNS = Number(values.runs);
const TURNS = Number(values.turns);
const MODEL = values.model!;
const MAX_TOKENS = Number(values['max-tokens']);
const modelsDir = path.resolve(values['models-dir']!);
if (values['models-dir'] === 'models') ensureBundledModels({ modelsDir });

// ~3k tokens of agent instructions, as coding agents send them, and a handful of tools.
const RULES = [
  'Read the relevant files before editing them, and keep each change as small as the task allows.',
  'Run the project tests after every change; when a test fails, read its output before changing anything else.',
  'Never invent file paths: list the directory first when unsure where something lives.',
  'Prefer editing existing code over adding new files, and match the style of the surrounding code.',
  'Explain what you changed and why in one short paragraph once the task is done.',
  'Ask before deleting files, rewriting history, or running commands that touch the network.',
];
const SYSTEM_BODY = Array.from({ length: 62 }, (_, i) => `Rule ${i + 1}. ${RULES[i % RULES.length]} This matters because agents that skip it waste the user's time and tokens.`).join('\n');
const tool = (name: string, description: string, props: Record<string, string>) => ({
  name, description,
  input_schema: { type: 'object', properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: 'string', description: d }])), required: Object.keys(props) },
});
const TOOLS = [
  tool('read_file', 'Read a UTF-8 text file from the workspace and return its contents with line numbers.', { path: 'Path relative to the workspace root.' }),
  tool('write_file', 'Create or overwrite a file in the workspace with the given text.', { path: 'Path relative to the workspace root.', text: 'The complete new contents.' }),
  tool('edit_file', 'Replace one exact occurrence of a string in a file.', { path: 'Path relative to the workspace root.', old: 'Exact text to replace.', new: 'Replacement text.' }),
  tool('list_dir', 'List the entries of a directory, directories first.', { path: 'Directory relative to the workspace root.' }),
  tool('run', 'Run a shell command in the workspace and return its exit code, stdout and stderr.', { command: 'The command line.', timeout: 'Seconds before it is killed.' }),
  tool('search', 'Search the workspace for a regular expression and return matching lines with their paths.', { pattern: 'A regular expression.', glob: 'Only files matching this glob.' }),
];
const USER_TURNS = [
  'The test suite fails on the date parser. Find out why.',
  'Show me the parser source around the failing case.',
  'Fix it so that two-digit years are read as 20xx, and keep the old behaviour for four digits.',
  'Run the tests again and tell me what still fails.',
  'Summarise the change in one paragraph for the commit message.',
  'Anything else worth cleaning up nearby?',
  'Thanks. Close the task.',
];

const { models } = scanModels({ modelsDir, defaultPoolSize: 1 });
const info = models.find((m) => m.id === MODEL);
if (!info) throw new Error(`no model ${MODEL} in ${modelsDir}`);

async function startServer(promptCacheBytes: number) {
  const service = await LocalInferenceService.start({
    models: [{ ...info!, poolSize: 1 }], maxQueue: 16, requestTimeoutMs: 0,
    engine: { ...ENGINE_DEFAULTS, intraOpThreads: Number(values['intra-op-threads']), ortAllowSpinning: false, promptCacheBytes, generationBatchSize: 1, inPlaceDecodeMinContext: 0 },
    embedBatching: { enabled: false, maxBatchTokens: 1, maxWaitMs: 0, truncate: false },
  });
  const app = await buildApp({ config: { apiKeys: [], bodyLimit: 1 << 24, pingIntervalMs: 60_000 }, inference: service });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { service, app, url };
}

interface TurnResult {
  ttftMs: number;
  text: string;
  usage: { input_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number };
}

type Message = { role: 'user' | 'assistant'; content: string };

async function turn(url: string, system: string, messages: Message[]): Promise<TurnResult> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: MODEL, system, tools: TOOLS, max_tokens: MAX_TOKENS, temperature: 0, stream: true, messages }),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const body = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let first = NaN;
  for (;;) {
    const { value, done } = await body.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    if (Number.isNaN(first) && buffer.includes('event: content_block_delta')) first = performance.now() - started;
  }
  const events = buffer.split('\n\n').filter((f) => f.includes('data: ')).map((f) => JSON.parse(f.slice(f.indexOf('data: ') + 6)) as Record<string, any>);
  const text = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'text_delta').map((e) => e.delta.text as string).join('');
  const usage = events.find((e) => e.type === 'message_start')!.message.usage;
  // With no text at all (an immediate end of sequence), the first token is the end of the stream.
  return { ttftMs: Number.isNaN(first) ? performance.now() - started : first, text, usage };
}

const cached = await startServer(1024 * 1024 * 1024);
const uncached = await startServer(0);
// Warm both (graph, allocator) on a short unrelated prompt.
for (const s of [cached, uncached]) await turn(s.url, 'Warm-up.', [{ role: 'user', content: 'Hello.' }]);

const perTurn = Array.from({ length: TURNS }, () => ({ on: [] as number[], off: [] as number[], prompt: 0, read: 0 }));
let mismatches = 0;
for (let run = 0; run < RUNS; run++) {
  const system = `Session ${run + 1} of the coding agent.\n${SYSTEM_BODY}`;
  const messages: Message[] = [];
  for (let t = 0; t < TURNS; t++) {
    messages.push({ role: 'user', content: USER_TURNS[t % USER_TURNS.length]! });
    // Alternate which server goes first, so drift on a noisy machine hits both alike.
    const order = (run + t) % 2 === 0 ? [cached, uncached] : [uncached, cached];
    const results = new Map<string, TurnResult>();
    for (const s of order) results.set(s.url, await turn(s.url, system, messages));
    const on = results.get(cached.url)!;
    const off = results.get(uncached.url)!;
    if (on.text !== off.text) mismatches++;
    const row = perTurn[t]!;
    row.on.push(on.ttftMs);
    row.off.push(off.ttftMs);
    row.prompt = on.usage.input_tokens + on.usage.cache_read_input_tokens + on.usage.cache_creation_input_tokens;
    row.read = on.usage.cache_read_input_tokens;
    messages.push({ role: 'assistant', content: on.text || '(no reply)' });
  }
}
for (const s of [cached, uncached]) {
  await closeApp(s.app, 1000);
  await s.service.close();
}

const rows = perTurn.map((r, t) => {
  const on = median(r.on);
  const off = median(r.off);
  return [t + 1, r.prompt, r.read, off, on, off / on];
});
writeResults('prompt-cache', { model: MODEL, runs: RUNS, turns: TURNS, maxTokens: MAX_TOKENS, mismatches, perTurn }, [{
  title: `${MODEL}: ${TURNS}-turn agent conversation, ~3k-token system prompt with ${TOOLS.length} tools; median TTFT of ${RUNS} conversations`,
  columns: ['turn', 'prompt tokens', 'read from cache (last run)', 'TTFT ms, cache off', 'TTFT ms, cache on', 'speed-up'],
  rows,
}], [
  'Two servers in this process, one worker each: the prefix cache on (1 GiB) and off (PROMPT_CACHE_BYTES=0); each turn goes to both, alternating which goes first. TTFT is from sending POST /v1/messages (stream: true, greedy) over loopback to the first content_block_delta.',
  `Each conversation has its own system prompt (a session line in front), so turn 1 is cold on both. Replies that differed between the two servers: ${mismatches} (greedy output must not depend on the cache).`,
]);
if (mismatches > 0) process.exitCode = 1;

/**
 * Records the server's answers to a fixed set of requests (200 by default, built from a seed), so
 * two checkouts can be compared answer for answer: a refactor that claims "behaviour unchanged" runs
 * this against the checkout before and after it, and diffs the two files.
 *
 *   npm run replay -- --root ../before --out /tmp/before.json
 *   npm run replay -- --out /tmp/after.json
 *   npm run replay -- --compare /tmp/before.json /tmp/after.json
 *
 * Every request runs at temperature 0 (greedy), one at a time, in the same order, against the server
 * of `--root` (default: this checkout) started on this checkout's bundled models. The answers are
 * kept as the client reads them: status, body (JSON), or the SSE events (pings dropped: they depend
 * on time); ids, timestamps and request ids are replaced by placeholders, everything else is
 * compared byte for byte.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { root: { type: 'string' }, out: { type: 'string' }, count: { type: 'string', default: '200' }, compare: { type: 'boolean', default: false } },
  allowPositionals: true,
});
const HERE = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const CHAT = 'tiny-qwen3-random';
const EMBED = 'glove-sif-100d';

interface Recorded {
  name: string;
  status: number;
  body: unknown;
}

/** A small deterministic generator (mulberry32): the same requests in every run. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WEATHER = { name: 'get_weather', description: 'Get the weather for a city.', input_schema: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } };
const WORDS = ['Hello', 'Count to five.', 'What is the weather in Paris?', 'Name a colour.', 'Tell me about rivers and the sea.', 'Why?', 'Write a haiku.', '¿Qué tal?', '日本語で話して', 'One two three four five six seven eight nine ten.'];

/** The requests: both chat dialects (JSON and SSE), tools, thinking, stop sequences, log probabilities, structured output, counting, embeddings. */
function requests(count: number): Array<{ name: string; path: string; body: object; headers?: Record<string, string> }> {
  const rng = random(20261126);
  const pick = <T>(items: readonly T[]) => items[Math.floor(rng() * items.length)]!;
  const out: Array<{ name: string; path: string; body: object; headers?: Record<string, string> }> = [];
  const anthropic = { 'anthropic-version': '2023-06-01' };
  for (let i = 0; out.length < count; i++) {
    const text = pick(WORDS);
    const system = rng() < 0.4 ? 'You are terse.' : undefined;
    const maxTokens = 4 + Math.floor(rng() * 24);
    const stream = rng() < 0.4;
    switch (i % 8) {
      case 0:
      case 1:
        out.push({ name: `messages-${i}`, path: '/v1/messages', headers: anthropic, body: { model: CHAT, max_tokens: maxTokens, temperature: 0, stream, ...(system ? { system } : {}), ...(rng() < 0.3 ? { stop_sequences: ['e', 'the'] } : {}), messages: [{ role: 'user', content: text }] } });
        break;
      case 2:
        out.push({ name: `messages-tools-${i}`, path: '/v1/messages', headers: anthropic, body: { model: CHAT, max_tokens: maxTokens + 32, temperature: 0, stream, tools: [WEATHER], tool_choice: pick([{ type: 'auto' }, { type: 'any' }, { type: 'tool', name: 'get_weather' }]), messages: [{ role: 'user', content: text }] } });
        break;
      case 3:
        out.push({ name: `messages-thinking-${i}`, path: '/v1/messages', headers: anthropic, body: { model: CHAT, max_tokens: 1100, temperature: 1, top_k: 1, stream, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: text }] } });
        break;
      case 4:
        out.push({ name: `chat-${i}`, path: '/v1/chat/completions', body: { model: CHAT, max_completion_tokens: maxTokens, temperature: 0, stream, ...(stream ? { stream_options: { include_usage: true } } : {}), ...(rng() < 0.5 ? { logprobs: true, top_logprobs: 2 } : {}), messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: text }] } });
        break;
      case 5:
        out.push({ name: `chat-schema-${i}`, path: '/v1/chat/completions', body: { model: CHAT, max_completion_tokens: 64, temperature: 0, stream, response_format: { type: 'json_schema', json_schema: { name: 'city', strict: true, schema: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, rank: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['city', 'rank'], additionalProperties: false } } }, messages: [{ role: 'user', content: text }] } });
        break;
      case 6:
        out.push({ name: `count-${i}`, path: '/v1/messages/count_tokens', headers: anthropic, body: { model: CHAT, ...(system ? { system } : {}), tools: [WEATHER], messages: [{ role: 'user', content: text }] } });
        break;
      default:
        out.push({ name: `embed-${i}`, path: '/v1/embeddings', body: { model: EMBED, input: [text, pick(WORDS)] } });
    }
  }
  return out;
}

/** Ids, timestamps, request ids and thinking signatures: different in every run, by design. */
function normalize(text: string): string {
  return text
    .replace(/\\?"(id|tool_use_id|tool_call_id)\\?":\s*\\?"(msg_|toolu_|chatcmpl-|call_|req_)[A-Za-z0-9]+/g, (m, _k, prefix: string) => `${m.slice(0, m.indexOf(prefix) + prefix.length)}*`)
    .replace(/(\\?"(?:created|created_at)\\?"):\s*\d+/g, '$1:0')
    .replace(/"request_id":\s*"req_[A-Za-z0-9]+"/g, '"request_id":"req_*"')
    // A thinking block's signature is keyed by a secret each server process draws at start.
    .replace(/(\\?"signature\\?":\s*\\?")[A-Za-z0-9+/=]+/g, '$1*');
}

/** A keep-alive: Anthropic's `ping` event, or the SSE comment the OpenAI routes send. */
const isPing = (event: string) => event.startsWith('event: ping') || event.startsWith(':');

async function send(url: string, request: ReturnType<typeof requests>[number]): Promise<Recorded> {
  const res = await fetch(`${url}${request.path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...request.headers }, body: JSON.stringify(request.body) });
  const text = normalize(await res.text());
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const events = text.split('\n\n').filter((e) => e.trim() && !isPing(e));
    return { name: request.name, status: res.status, body: events };
  }
  return { name: request.name, status: res.status, body: JSON.parse(text) };
}

async function startServer(root: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/main.ts'), '--port', '0', '--log-level', 'warn', '--preload', '*', '--models-dir', path.join(HERE, 'models'), '--hf-cache', 'false'], {
    cwd: root, env: { ...process.env, BUILD_BUNDLED_MODELS: 'false' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${log}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

async function record(): Promise<void> {
  const root = path.resolve(values.root ?? HERE);
  const server = await startServer(root);
  try {
    const answers: Recorded[] = [];
    for (const request of requests(Number(values.count))) answers.push(await send(server.url, request));
    const out = values.out ?? path.join(HERE, 'replay.json');
    fs.writeFileSync(out, `${JSON.stringify(answers, null, 1)}\n`);
    console.log(`${answers.length} answers from ${root} -> ${out}`);
  } finally {
    server.stop();
  }
}

function compare(): void {
  // Normalized again, so that files recorded by an older version of this script compare too.
  const read = (file: string) => (JSON.parse(normalize(fs.readFileSync(file, 'utf8'))) as Recorded[]).map((r) => (Array.isArray(r.body) ? { ...r, body: (r.body as string[]).filter((e) => !isPing(e)) } : r));
  const [a, b] = positionals.map((file) => read(file));
  if (!a || !b) throw new Error('--compare takes two files');
  let same = 0;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (JSON.stringify(a[i]) === JSON.stringify(b[i])) same++;
    else {
      const [x, y] = [JSON.stringify(a[i]), JSON.stringify(b[i])];
      let at = 0;
      while (at < x.length && x[at] === y[at]) at++;
      console.log(`differs: ${a[i]?.name ?? '-'} at character ${at}\n  before: …${x.slice(Math.max(0, at - 150), at + 250)}\n  after:  …${y.slice(Math.max(0, at - 150), at + 250)}`);
    }
  }
  console.log(`${same} of ${Math.max(a.length, b.length)} answers byte-identical`);
}

if (values.compare) compare();
else await record();

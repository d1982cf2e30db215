/**
 * Every curl example in README.md and docs/*.md that shows its answer is sent to a listening server
 * on the bundled models, and the answer must be the one the page shows: the same keys and types,
 * the same token counts (usage exactly), strings with `…` as patterns (test/helpers/doc-examples.ts).
 * Each example starts from unloaded models, as on a fresh `npm start`, so an example's cached-token
 * figures depend only on its own commands (a block may send the same request twice to show the
 * prompt cache at work; the answer shown is the last command's). Under TEST_CHAT_ENGINE=llama the
 * pages' chat model is read as the GGUF test model (the same weights, tokenizer and template on
 * llama.cpp), in the requests and in the answers, so every count must come out the same there:
 * `cross-env TEST_CHAT_ENGINE=llama INTRA_OP_THREADS=1 npx vitest run test/clients/readme-examples.test.ts`
 * passes (20 tests, 72 s on two cores). npm test leaves that run out, for the suite's time: each
 * example starts from unloaded models, and a GGUF model's load is several seconds there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_MODEL, EMBED_MODEL, ONNX_CHAT_MODEL, ROOT } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { docExamples, parseCurl, parseExampleJson, REST, shapeDifferences, shellWords, type CurlCommand, type DocExample } from '../helpers/doc-examples.js';

/** The port the pages use; their requests are sent to the test's server instead. */
const DOC_ORIGINS = ['http://127.0.0.1:8080', 'http://localhost:8080'];
/** Fewer than this many answered examples means the reader lost some (a changed fence, a renamed file). */
const MIN_EXAMPLES = 6;
const MIN_README_EXAMPLES = 4;
const LOAD_TIMEOUT_MS = 120_000;

const FILES = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const found = FILES.map((file) => ({ file, ...docExamples(ROOT, file) }));
const examples: DocExample[] = found.flatMap((f) => f.examples);

let server: RealServer;
beforeAll(async () => {
  // Nothing loaded at start and nothing unloaded for idleness: each example unloads what it needs.
  server = await startRealServer({ lifecycle: { pinned: [], keepAliveMs: -1, maxLoadedModels: 0, loadTimeoutMs: LOAD_TIMEOUT_MS } });
});
afterAll(() => server?.close());

/** The pages' chat model as the engine under test serves it. */
const onEngine = (text: string) => text.replaceAll(ONNX_CHAT_MODEL, CHAT_MODEL);
const expectedOnEngine = (value: unknown): unknown =>
  typeof value === 'string' ? onEngine(value)
    : Array.isArray(value) ? value.map(expectedOnEngine)
      : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expectedOnEngine(v)])) : value;

async function send(command: CurlCommand): Promise<{ status: number; body: unknown }> {
  const origin = DOC_ORIGINS.find((o) => command.url.startsWith(o));
  if (!origin) throw new Error(`${command.url}: an example must address the default ${DOC_ORIGINS[0]}`);
  const res = await fetch(server.url + onEngine(command.url.slice(origin.length)), { method: command.method, headers: command.headers, ...(command.body !== undefined ? { body: onEngine(command.body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}

/** The example with its first token count (a `…_tokens` integer) one higher; undefined when it has none. */
function withWrongCount(value: unknown): unknown {
  let changed = false;
  const walk = (v: unknown, key: string): unknown => {
    if (!changed && typeof v === 'number' && Number.isInteger(v) && key.endsWith('_tokens')) {
      changed = true;
      return v + 1;
    }
    if (Array.isArray(v)) return v.map((item) => walk(item, ''));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, k)]));
    return v;
  };
  const result = walk(value, '');
  return changed ? result : undefined;
}

describe('the reader of the pages', () => {
  it(`finds at least ${MIN_EXAMPLES} answered curl examples, ${MIN_README_EXAMPLES} of them in README.md`, () => {
    expect(examples.length, JSON.stringify(found.map((f) => ({ file: f.file, examples: f.examples.length, withoutAnswer: f.withoutAnswer })))).toBeGreaterThanOrEqual(MIN_EXAMPLES);
    expect(found.find((f) => f.file === 'README.md')!.examples.length).toBeGreaterThanOrEqual(MIN_README_EXAMPLES);
  });

  it('parses curl as a user writes it, and refuses what it does not understand', () => {
    const words = shellWords(`curl -s http://127.0.0.1:8080/v1/messages -H 'content-type: application/json' -d '{"a": "it''s"}'  # comment`);
    expect(parseCurl(words)).toEqual({ method: 'POST', url: 'http://127.0.0.1:8080/v1/messages', headers: { 'content-type': 'application/json' }, body: '{"a": "its"}' });
    expect(parseCurl(shellWords('curl -s localhost:8080/v1/models'))).toEqual({ method: 'GET', url: 'http://localhost:8080/v1/models', headers: {} });
    expect(() => parseCurl(shellWords('curl -N http://127.0.0.1:8080/'))).toThrow(/-N is not understood/);
  });

  it('compares by shape, counts exactly, and reads … as a wildcard', () => {
    const expected = parseExampleJson('{"id":"msg_…","n":[0.12,…],"usage":{"input_tokens":13},"created":1}');
    expect(expected).toEqual({ id: 'msg_…', n: [0.12, REST], usage: { input_tokens: 13 }, created: 1 });
    const answer = { id: 'msg_abc', n: [0.1234, -0.5, 7], usage: { input_tokens: 13 }, created: 1795000000 };
    expect(shapeDifferences(expected, answer)).toEqual([]);
    expect(shapeDifferences(expected, { ...answer, usage: { input_tokens: 12 } })).toEqual(['.usage.input_tokens: expected 13, got 12']);
    expect(shapeDifferences(expected, { ...answer, id: 'chatcmpl-1' })).toHaveLength(1);
    expect(shapeDifferences(expected, { ...answer, n: [0.2] })).toHaveLength(1);
    expect(shapeDifferences(expected, { ...answer, n: [0.12, 'x'] })).toHaveLength(1);
    expect(shapeDifferences(expected, { ...answer, extra: 1 })).toEqual(['.extra: in the answer, not in the example']);
  });

  it('would notice a wrong token count in any example that shows one', () => {
    const counted = examples.filter((e) => withWrongCount(e.expected) !== undefined);
    expect(counted.length).toBeGreaterThanOrEqual(MIN_README_EXAMPLES);
  });
});

describe.each(examples.map((e) => [e.where, e] as const))('the example at %s', (_where, example) => {
  it('is what the server answers', async () => {
    for (const id of [CHAT_MODEL, EMBED_MODEL]) await server.service.unload(id);
    let last: { status: number; body: unknown } | undefined;
    for (const command of example.commands) {
      last = await send(command);
      expect(last.status, JSON.stringify(last.body)).toBe(200);
    }
    const expected = expectedOnEngine(example.expected);
    expect(shapeDifferences(expected, last!.body), JSON.stringify(last!.body)).toEqual([]);
    const wrong = withWrongCount(expected);
    if (wrong !== undefined) expect(shapeDifferences(wrong, last!.body)).not.toEqual([]);
  });
});

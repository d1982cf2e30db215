/**
 * The prefix cache through real workers on the bundled model: usage as Anthropic defines it
 * (input + cache creation + cache read = count_tokens, message_start carrying the final figures), and
 * results the cache never changes: greedy output warm equals greedy output from a server without the
 * cache, one request at a time, several at once, and under a budget so small it evicts all the time.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import type { GenerationEvent, PromptCacheStats } from '../../src/core/hooks.js';
import { ANTHROPIC_HEADERS, parseSse } from '../helpers/inject.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealService, type RealService } from '../helpers/real-service.js';

const SYSTEM = 'You are a coding agent. Tools: read_file(path), write_file(path, text), run(command). Answer briefly and call tools when needed. '.repeat(6);
const MAX_TOKENS = 10;

interface Server {
  app: FastifyInstance;
  service: RealService;
  /** The worker's prefix cache after the last generation. */
  stats: () => PromptCacheStats | undefined;
}

async function start(promptCacheBytes: number, options: { workers?: number; generationBatchSize?: number } = {}): Promise<Server> {
  let last: PromptCacheStats | undefined;
  const observer = { generationEnded: (_: string, event: GenerationEvent | undefined) => void (event?.promptCache && (last = event.promptCache)) };
  const service = await startRealService({ only: [CHAT_MODEL], poolSize: { [CHAT_MODEL]: options.workers ?? 1 }, promptCacheBytes, observers: [observer], ...(options.generationBatchSize ? { generationBatchSize: options.generationBatchSize } : {}) });
  const app = await buildApp({ config: { apiKeys: [], bodyLimit: 8 * 1024 * 1024, pingIntervalMs: 60_000 }, inference: service });
  return { app, service, stats: () => last };
}

interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

type Turn = { role: 'user' | 'assistant'; content: string };
const body = (messages: Turn[], extra: Record<string, unknown> = {}) => ({ model: CHAT_MODEL, system: SYSTEM, max_tokens: MAX_TOKENS, temperature: 0, messages, ...extra });

async function message(server: Server, messages: Turn[]) {
  const res = await server.app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: body(messages) });
  expect(res.statusCode).toBe(200);
  return res.json() as { content: Array<{ type: string; text?: string }>; usage: Usage };
}

const textOf = (m: { content: Array<{ text?: string }> }) => m.content.map((b) => b.text ?? '').join('');

async function countTokens(server: Server, messages: Turn[]): Promise<number> {
  const res = await server.app.inject({ method: 'POST', url: '/v1/messages/count_tokens', headers: ANTHROPIC_HEADERS, payload: { model: CHAT_MODEL, system: SYSTEM, messages } });
  return (res.json() as { input_tokens: number }).input_tokens;
}

/** A five-turn conversation; each turn's user text and the model's replies appended as they come. */
async function conversation(server: Server, turns = 5): Promise<string[]> {
  const messages: Turn[] = [];
  const replies: string[] = [];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Step ${t}: list the files under src/${t} and say which one to edit.` });
    const reply = textOf(await message(server, messages));
    replies.push(reply);
    messages.push({ role: 'assistant', content: reply || '.' });
  }
  return replies;
}

let cold: Server;
let warm: Server;

beforeAll(async () => {
  [cold, warm] = await Promise.all([start(0), start(64 * 1024 * 1024)]);
});
afterAll(async () => {
  await Promise.all([cold?.app.close(), warm?.app.close()]);
  await Promise.all([cold?.service.close(), warm?.service.close()]);
});

describe('prompt caching (real workers)', () => {
  it('a repeated prompt reads its prefix from the cache; input + creation + read = count_tokens, in message_start and at the end', async () => {
    const messages: Turn[] = [{ role: 'user', content: 'What does this repository do?' }];
    const total = await countTokens(warm, messages);
    const first = await message(warm, messages);
    expect(first.usage).toMatchObject({ input_tokens: total, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    const second = await message(warm, messages);
    expect(second.usage.cache_read_input_tokens).toBe(total - 1);
    expect(second.usage.input_tokens + second.usage.cache_creation_input_tokens + second.usage.cache_read_input_tokens).toBe(total);
    expect(textOf(second)).toBe(textOf(first));

    const res = await warm.app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: body(messages, { stream: true }) });
    const events = parseSse(res.body);
    const startUsage = events.find((e) => e.event === 'message_start')!.data.message.usage;
    const endUsage = events.find((e) => e.event === 'message_delta')!.data.usage;
    expect(startUsage).toEqual({ ...endUsage, output_tokens: 0 });
    expect(startUsage.cache_read_input_tokens).toBe(total - 1);
    expect(startUsage.input_tokens + startUsage.cache_creation_input_tokens + startUsage.cache_read_input_tokens).toBe(total);
    expect(warm.stats()).toMatchObject({ hits: expect.any(Number), tokensReused: expect.any(Number) });
    expect(warm.stats()!.hits).toBeGreaterThanOrEqual(2);
  });

  it('a five-turn conversation decodes greedily exactly as without the cache, each turn reusing the last', async () => {
    const reference = await conversation(cold);
    const before = warm.stats()?.tokensReused ?? 0;
    expect(await conversation(warm)).toEqual(reference);
    // Turns 2..5 at least reuse the system prompt and the turns before them.
    expect(warm.stats()!.tokensReused - before).toBeGreaterThan(4 * 50);
  });

  it('several requests at once, sharing the system prompt, decode as they do alone without the cache', async () => {
    const prompts = Array.from({ length: 4 }, (_, i): Turn[] => [{ role: 'user', content: `Task ${i}: fix the bug in module ${i}.` }]);
    const reference = await Promise.all(prompts.map(async (m) => textOf(await message(cold, m))));
    await message(warm, [{ role: 'user', content: 'Warm up the system prompt.' }]);
    const results = await Promise.all(prompts.map((m) => message(warm, m)));
    expect(results.map(textOf)).toEqual(reference);
    for (const r of results) expect(r.usage.cache_read_input_tokens).toBeGreaterThan(0);
  });

  it('six requests sent together with one ~2k-token system prompt: one prefills it, the five others read exactly what they share with it, and all decode as without the cache', async () => {
    // Its own system prompt (nothing earlier in this file shares it), long enough to be worth a wait
    // (a prefill chunk: src/engines/prefix-waits.ts).
    const system = Array.from({ length: 200 }, (_, i) => `Rule ${i}: keep each edit small.`).join(' ');
    const ask = (server: Server, k: number) => server.app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: { ...body([{ role: 'user', content: `Task ${k}: fix module ${k}.` }]), system } })
      .then((res) => res.json() as { content: Array<{ text?: string }>; usage: Usage });
    const tasks = [0, 1, 2, 3, 4, 5];
    const reference = await Promise.all(tasks.map(async (k) => textOf(await ask(cold, k))));
    const results = await Promise.all(tasks.map((k) => ask(warm, k)));
    // What any two of these prompts share (they differ from "Task <digit>" on): a seventh, alone, reads it.
    const shared = (await ask(warm, 9)).usage.cache_read_input_tokens;
    expect(shared).toBeGreaterThan(1500);
    const reads = results.map((r) => r.usage.cache_read_input_tokens).sort((a, b) => a - b);
    // The first reads only the chat template's first tokens, which earlier turns left in the cache.
    expect(reads[0]).toBeLessThan(10);
    expect(reads.slice(1)).toEqual([shared, shared, shared, shared, shared]);
    expect(results.map(textOf)).toEqual(reference);
  });

  it('a budget so small that it evicts all the time still serves the same greedy output', async () => {
    // The bundled model's KV: 2 layers x keys and values x 2 heads x 16 x 4 bytes a token; 300 tokens
    // fit, about one conversation's.
    const budget = 300 * 2 * 2 * 2 * 16 * 4;
    const tiny = await start(budget);
    try {
      const reference = await conversation(cold, 3);
      expect(await conversation(tiny, 3)).toEqual(reference);
      const again = await Promise.all([conversation(tiny, 2), conversation(tiny, 2)]);
      expect(again).toEqual([reference.slice(0, 2), reference.slice(0, 2)]);
      expect(tiny.stats()!.evictions).toBeGreaterThan(0);
      expect(tiny.stats()!.hits).toBeGreaterThan(0);
      expect(tiny.stats()!.bytes).toBeLessThanOrEqual(budget);
    } finally {
      await tiny.app.close();
      await tiny.service.close();
    }
  });
});

describe('prefix affinity (two real workers)', () => {
  it('sends each agent\'s turns to one worker, which reuses their prefix, spreads agents over workers, and spills to the other worker when one is full', async () => {
    const server = await start(64 * 1024 * 1024, { workers: 2, generationBatchSize: 1 });
    try {
      const threads = () => new Map(server.service.counters.of(CHAT_MODEL).tasksByThread);
      // Ten agents (system prompts), two turns each, one request at a time: each agent's turns go to
      // one worker, and the agents spread over both (least-busy alone would use the first worker only).
      const where = new Map<number, number[]>();
      for (const round of [0, 1]) {
        for (let agent = 0; agent < 10; agent++) {
          const before = threads();
          const res = await server.app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: { ...body([{ role: 'user', content: `Turn ${round}?` }]), system: `${SYSTEM} You are agent ${agent}.` } });
          const usage = (res.json() as { usage: Usage }).usage;
          const thread = [...threads()].find(([id, n]) => n !== (before.get(id) ?? 0))![0];
          where.set(agent, [...(where.get(agent) ?? []), thread]);
          if (round === 1) expect(usage.cache_read_input_tokens).toBeGreaterThan(100);
        }
      }
      for (const [first, second] of where.values()) expect(second).toBe(first);
      expect(new Set([...where.values()].map(([t]) => t)).size).toBe(2);
      expect(threads().size).toBe(2);
      const spill = new Map(threads());
      await Promise.all([0, 1].map((i) => message(server, [{ role: 'user', content: `Both ${i}?` }])));
      // Same system prompt, two at once, one generation per worker: one of them spills to the other worker.
      for (const [id, n] of threads()) expect(n - (spill.get(id) ?? 0)).toBe(1);
    } finally {
      await server.app.close();
      await server.service.close();
    }
  });
});

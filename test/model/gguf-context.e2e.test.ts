/**
 * A GGUF chat model with no manifest contextLength serves its trained context within a KV budget
 * (issue 40): the test GGUF's file (trained for 32,768 tokens) in a folder whose manifest sets only
 * a KV budget, of one whole sequence: a prompt over the former cap of 8,192 tokens with Claude
 * Code's max_tokens of 32,000 is served; long and short requests sent together wait for the
 * sequence, none failed; /v1/models says the context and the KV it takes. (A short room beside
 * the long one costs a second context's compute buffer, mostly a prefill chunk's logits over the
 * 151,936-token vocabulary: 297 MiB, worth 1.2M tokens of this model's KV, so its layout never has
 * one; test/model/llama-rooms.test.ts runs two rooms on real contexts, test/unit/llama-slots.test.ts
 * the placement.) Output is scripted (the test hook), so the random-weight model stops at once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ps } from '../../src/cli/ps.js';
import { formatBytes } from '../../src/models/hub/checksums.js';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const MODEL = 'tiny-qwen3-no-context';
/** The test GGUF's KV a token: 2 layers x 2 KV heads x (16 + 16) values x 2 bytes (float16). */
const KV_PER_TOKEN = 256;
const TRAINED = 32_768;
/** One whole sequence and a little: short of a second, and of a short room's compute buffer. */
const BUDGET = TRAINED * KV_PER_TOKEN + 2 ** 20;
const LONG_TIMEOUT_MS = 120_000;

let dir: string;
let server: RealServer;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-context-'));
  const folder = path.join(dir, MODEL);
  fs.mkdirSync(folder);
  const source = path.join(GGUF_MODELS_DIR, GGUF_CHAT_MODEL, `${GGUF_CHAT_MODEL}-F32.gguf`);
  const target = path.join(folder, `${MODEL}-F32.gguf`);
  try {
    fs.linkSync(source, target);
  } catch {
    fs.copyFileSync(source, target);
  }
  fs.writeFileSync(path.join(folder, 'manifest.json'), JSON.stringify({ kvBudgetBytes: BUDGET }));
  server = await startRealServer({ modelsDir: dir, script: () => 'ok' });
}, LONG_TIMEOUT_MS);
afterAll(async () => {
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const anthropic = () => new Anthropic({ baseURL: server.url, apiKey: 'x', maxRetries: 0, timeout: LONG_TIMEOUT_MS });

describe('a GGUF chat model with no manifest contextLength, in a KV budget of one whole sequence', () => {
  it('serves its trained context, and /v1/models says so with the KV its sequences take', async () => {
    const { data } = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<Record<string, unknown>> };
    expect(data.find((m) => m.id === MODEL)).toMatchObject({
      context_length: TRAINED,
      max_input_tokens: TRAINED,
      max_tokens: TRAINED,
      state: 'loaded',
      sequences: `1 x ${TRAINED}`,
      kv_bytes: TRAINED * KV_PER_TOKEN,
    });
    // `models ps` reads the same fields.
    const [header, row] = (await ps(server.url, undefined, false)).trimEnd().split('\n').map((line) => line.split(/ {2,}/));
    expect(Object.fromEntries(header!.map((h, i) => [h, row![i]]))).toMatchObject({ ID: MODEL, CONTEXT: String(TRAINED), KV: formatBytes(TRAINED * KV_PER_TOKEN) });
  });

  it('serves a prompt over 8,192 tokens with max_tokens 32000, and requests sent together wait for the sequence, none failed', async () => {
    // The second long prompt waits for the first's sequence, then reuses the prefix they share (one long prefill).
    const long = (topic: string) => `${Array.from({ length: 2300 }, (_, i) => `item ${i}`).join(', ')}. Which is ${topic}?`;
    const ask = (content: string, maxTokens: number) => anthropic().messages.create({ model: MODEL, max_tokens: maxTokens, messages: [{ role: 'user', content }] });
    const counted = await anthropic().messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: long('apples') }] });
    expect(counted.input_tokens).toBeGreaterThan(8192);
    const answers = await Promise.all([ask(long('apples'), 32_000), ask(long('pears'), 32_000), ask('Say ok.', 64), ask('Say ok again.', 64)]);
    for (const answer of answers) expect(answer).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'ok' }] });
    // The long request that ran second may have read the first one's prefix (input_tokens counts
    // what was not read from the cache), or not (a short one ran between them on the one sequence).
    const prompt = (answer: Anthropic.Message) => answer.usage.input_tokens + (answer.usage.cache_read_input_tokens ?? 0);
    expect(prompt(answers[0]!)).toBe(counted.input_tokens);
    expect(prompt(answers[1]!)).toBeGreaterThan(8192);
  }, LONG_TIMEOUT_MS);
});

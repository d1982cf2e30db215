/**
 * Dynamic batching on the bundled embedder: concurrent requests share forward passes yet each gets
 * exactly its own vectors and usage; a bad request in a batch harms no other; odd inputs get a
 * vector (whitespace alone a clear 400), never NaN.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { EmbedResult } from '../../src/core/types.js';
import { EMBED_MODEL } from '../helpers/paths.js';
import { modelVariant } from '../helpers/model-variant.js';
import { startRealService, type RealService } from '../helpers/real-service.js';

const TOLERANCE = 1e-5;
/** A text of unknown words alone embeds as (1, ..., 1) / sqrt(100): the [UNK] row (scripts/builders/bundled/glove-embedder.ts). */
const UNKNOWN_ONLY_COMPONENT = 0.1;
const WORDS = 'the river flows past old stone bridges while children laugh and birds sing over quiet green fields near the town'.split(' ');
const sentence = (i: number) => Array.from({ length: 1 + ((i * 7) % 40) }, (_, k) => WORDS[(i + k) % WORDS.length]).join(' ');
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

let service: RealService;
beforeAll(async () => {
  service = await startRealService({ only: [EMBED_MODEL] });
});
afterAll(() => service?.close());

describe('dynamic batching (real workers)', () => {
  it('50 simultaneous requests of different lengths each get their own vectors and usage', async () => {
    const requests = Array.from({ length: 50 }, (_, i) => (i % 5 === 0 ? [sentence(i), sentence(i + 100)] : [sentence(i)]));
    const alone: EmbedResult[] = [];
    for (const inputs of requests) alone.push(await service.embed({ model: EMBED_MODEL, inputs }));
    const before = service.counters.of(EMBED_MODEL).embedBatchSizes.length;
    const together = await Promise.all(requests.map((inputs) => service.embed({ model: EMBED_MODEL, inputs })));
    const sizes = service.counters.of(EMBED_MODEL).embedBatchSizes.slice(before);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(50);
    expect(Math.max(...sizes)).toBeGreaterThan(1); // requests really shared tasks
    together.forEach((result, i) => {
      expect(result.promptTokens).toBe(alone[i]!.promptTokens);
      expect(result.vectors).toHaveLength(requests[i]!.length);
      result.vectors.forEach((v, j) => expect(maxDiff(v, alone[i]!.vectors[j]!)).toBeLessThan(TOLERANCE));
    });
  });

  it('a request that fails validation does not harm the others in its batch', async () => {
    const results = await Promise.allSettled([
      service.embed({ model: EMBED_MODEL, inputs: ['first good one'] }),
      service.embed({ model: EMBED_MODEL, inputs: ['bad dimensions'], dimensions: 50 }),
      service.embed({ model: EMBED_MODEL, inputs: ['fine', '   '] }),
      service.embed({ model: EMBED_MODEL, inputs: ['second good one'] }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'dimensions_unsupported', details: { limit: 100, requested: 50 } });
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'nothing_to_embed', details: { item: 1, reason: 'no_tokens' } });
  });

  it.each([
    ['mixed scripts', 'Café in 東京 with a friend'],
    ['punctuation and digits', 'It costs $42.50 (plus tax)!'],
    ['a very long text', sentence(3).repeat(50)],
  ])('%s get a unit vector', async (_name, input) => {
    const [v] = (await service.embed({ model: EMBED_MODEL, inputs: [input] })).vectors;
    expect(v!.every(Number.isFinite)).toBe(true);
    expect(Math.abs(Math.hypot(...v!) - 1)).toBeLessThan(1e-5);
  });

  it.each([
    ['only emoji', '🙂🎉'],
    ['a very long unknown word', 'x'.repeat(500)],
  ])('%s gets the unknown-word vector', async (_name, input) => {
    const [v] = (await service.embed({ model: EMBED_MODEL, inputs: [input] })).vectors;
    v!.forEach((x) => expect(Math.abs(x - UNKNOWN_ONLY_COMPONENT)).toBeLessThan(TOLERANCE));
  });

  it('only whitespace gets a clear 400', async () => {
    await expect(service.embed({ model: EMBED_MODEL, inputs: [' \n\t '] })).rejects.toMatchObject({ code: 'nothing_to_embed', details: { item: 0, reason: 'no_tokens' } });
  });
});

describe('Matryoshka dimensions and truncation (fixture copies of the bundled model)', () => {
  let dir: string;
  let fixture: RealService;
  beforeAll(async () => {
    dir = modelVariant(EMBED_MODEL, 'short-context', { 'manifest.json': { matryoshka: true, contextLength: 8 } });
    fixture = await startRealService({ modelsDir: dir, batching: { truncate: true } });
  });
  afterAll(async () => {
    await fixture?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('shortens to the first `dimensions` values and re-normalises', async () => {
    const text = 'green fields near the town';
    const [full] = (await fixture.embed({ model: 'short-context', inputs: [text] })).vectors;
    const [short] = (await fixture.embed({ model: 'short-context', inputs: [text], dimensions: 32 })).vectors;
    expect(short).toHaveLength(32);
    const prefix = full!.slice(0, 32);
    const norm = Math.hypot(...prefix);
    expect(maxDiff(short!, prefix.map((v) => v / norm))).toBeLessThan(TOLERANCE);
    await expect(fixture.embed({ model: 'short-context', inputs: [text], dimensions: 101 })).rejects.toMatchObject({ code: 'dimensions_unsupported' });
  });

  it('with truncation enabled, embeds the first contextLength tokens and reports them as usage', async () => {
    const long = 'one two three four five six seven eight nine ten';
    const result = await fixture.embed({ model: 'short-context', inputs: [long] });
    expect(result.promptTokens).toBe(8);
    const [cut] = (await fixture.embed({ model: 'short-context', inputs: ['one two three four five six seven eight'] })).vectors;
    expect(maxDiff(result.vectors[0]!, cut!)).toBeLessThan(TOLERANCE);
  });
});

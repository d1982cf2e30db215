/**
 * The bundled GloVe-SIF embedder through real workers: paraphrases must score clearly above
 * unrelated sentences, usage must be the tokenizer's count, and a vector must not depend on the
 * batch it was computed in. Every non-blank text gets a vector: single letters and numbers are
 * known words, and unknown words have a tiny fixed row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoTokenizer, env, type PreTrainedTokenizer } from '@huggingface/transformers';
import type { LocalInferenceService } from '../../src/inference/service.js';
import { EMBED_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { startRealService } from '../helpers/real-service.js';

// Written for this test: [sentence, paraphrase, unrelated sentence].
const TRIPLES: Array<[string, string, string]> = [
  ['A man is playing a guitar on stage.', 'Someone performs music with a guitar in front of an audience.', 'The quarterly tax forms are due next week.'],
  ['The cat is sleeping on the sofa.', 'A kitten naps on the couch.', 'Interest rates were raised by the central bank.'],
  ['How do I reset my password?', 'I forgot my password and need to change it.', 'The recipe calls for two cups of flour.'],
  ['Heavy rain flooded the streets of the city.', 'Storms caused flooding across downtown roads.', 'She scored the winning goal in the final minute.'],
  ['The doctor prescribed antibiotics for the infection.', 'The physician gave her medicine to treat the bacterial illness.', 'Our flight to Tokyo was delayed by three hours.'],
  ['Stock prices fell sharply after the announcement.', 'Shares dropped steeply following the news.', 'The children built a sandcastle at the beach.'],
  ['He is learning to cook Italian food.', 'He is taking lessons in making pasta and other Italian dishes.', 'The satellite was launched into orbit yesterday.'],
  ['The company hired fifty new engineers this year.', 'The firm added dozens of software developers to its staff.', 'A bird is singing in the old oak tree.'],
];
const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, v, i) => sum + v * b[i]!, 0);
const BATCH_TOLERANCE = 1e-5;
const UNIT_TOLERANCE = 1e-5;
/** A text of unknown words alone embeds as (1, ..., 1) / sqrt(100): the [UNK] row (scripts/builders/bundled/glove-embedder.ts). */
const UNKNOWN_ONLY_COMPONENT = 0.1;
/** How far one unknown word may turn a sentence's vector (1 - cosine); measured at float32 rounding, about 1e-8. */
const UNKNOWN_WORD_MAX_TURN = 1e-6;
const isUnit = (v: Float32Array) => Math.abs(Math.hypot(...v) - 1) < UNIT_TOLERANCE;

let service: LocalInferenceService;
let tokenizer: PreTrainedTokenizer;
beforeAll(async () => {
  service = await startRealService({ only: [EMBED_MODEL] });
  env.allowRemoteModels = false;
  env.localModelPath = `${MODELS_DIR}/`;
  tokenizer = await AutoTokenizer.from_pretrained(EMBED_MODEL);
});
afterAll(() => service?.close());

describe('GloVe-SIF embeddings (real workers)', () => {
  it('scores every paraphrase clearly above the unrelated sentence', async () => {
    const { vectors } = await service.embed({ model: EMBED_MODEL, inputs: TRIPLES.flat() });
    const paraphrase: number[] = [];
    const unrelated: number[] = [];
    TRIPLES.forEach((_, t) => {
      const [a, b, c] = [vectors[3 * t]!, vectors[3 * t + 1]!, vectors[3 * t + 2]!];
      paraphrase.push(cosine(a, b));
      unrelated.push(Math.max(cosine(a, c), cosine(b, c)));
    });
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    // Every triple on its own: the paraphrase beats the unrelated sentence by a clear margin.
    paraphrase.forEach((p, t) => expect(p - unrelated[t]!, `triple ${t}: ${p.toFixed(3)} vs ${unrelated[t]!.toFixed(3)}`).toBeGreaterThan(0.2));
    expect(mean(paraphrase)).toBeGreaterThan(0.5);
    expect(mean(unrelated)).toBeLessThan(0.2);
  });

  it('returns unit vectors of the model width, with usage equal to the tokenizer count', async () => {
    const inputs = ['Hello, world!', 'Tokenizers split punctuation: yes.'];
    const { vectors, promptTokens } = await service.embed({ model: EMBED_MODEL, inputs });
    for (const v of vectors) {
      expect(v.length).toBe(100);
      expect(Math.abs(Math.hypot(...v) - 1)).toBeLessThan(1e-5);
    }
    expect(promptTokens).toBe(inputs.reduce((sum, text) => sum + tokenizer.encode(text).length, 0));
    expect(promptTokens).toBe(4 + 6);
  });

  it('gives an input the same vector alone as in a mixed-length batch', async () => {
    const inputs = ['short one', 'a much longer sentence with quite a few more words than the first', 'mid length text here'];
    const batch = await service.embed({ model: EMBED_MODEL, inputs });
    for (let i = 0; i < inputs.length; i++) {
      const alone = await service.embed({ model: EMBED_MODEL, inputs: [inputs[i]!] });
      const diff = alone.vectors[0]!.reduce((m, v, d) => Math.max(m, Math.abs(v - batch.vectors[i]![d]!)), 0);
      expect(diff).toBeLessThan(BATCH_TOLERANCE);
    }
  });

  it('embeds token-id input like the text it encodes', async () => {
    const text = 'the quick brown fox';
    const ids = tokenizer.encode(text);
    const [fromText, fromIds] = (await service.embed({ model: EMBED_MODEL, inputs: [text, ids] })).vectors;
    expect(Array.from(fromIds!)).toEqual(Array.from(fromText!));
  });

  it('refuses token ids outside the vocabulary', async () => {
    await expect(service.embed({ model: EMBED_MODEL, inputs: [[1, 10_000_000]] })).rejects.toMatchObject({ code: 'token_out_of_vocabulary', details: { item: 0 } });
  });
});

describe('GloVe-SIF vocabulary: every non-blank text gets a vector (real workers)', () => {
  const UNK_ID = 1;

  it('tokenizes single letters and numbers to known ids', () => {
    for (const text of ['a', 'I', '2020', 'A 2020 model', 'the 1990s', '21st century', '12345']) {
      const ids = tokenizer.encode(text);
      expect(ids.length, text).toBeGreaterThan(0);
      expect(ids, text).not.toContain(UNK_ID);
    }
    expect(tokenizer.encode('A 2020 model')).toHaveLength(3);
  });

  it.each(['a', 'I', '2020'])('%s gets a unit vector', async (text) => {
    const { vectors, promptTokens } = await service.embed({ model: EMBED_MODEL, inputs: [text] });
    expect(promptTokens).toBe(1);
    expect(vectors[0]!.every(Number.isFinite)).toBe(true);
    expect(isUnit(vectors[0]!)).toBe(true);
  });

  it('a request mixing such inputs with ordinary ones, and concurrent requests beside it, all succeed', async () => {
    const mixed = ['The cat is sleeping on the sofa.', 'a', 'I', '2020', '🎉🎉', 'Stock prices fell sharply.'];
    const results = await Promise.all([
      service.embed({ model: EMBED_MODEL, inputs: mixed }),
      service.embed({ model: EMBED_MODEL, inputs: ['I'] }),
      service.embed({ model: EMBED_MODEL, inputs: ['a guitar on stage'] }),
      service.embed({ model: EMBED_MODEL, inputs: ['zzxqv'] }),
    ]);
    expect(results[0]!.vectors).toHaveLength(mixed.length);
    for (const { vectors } of results) for (const v of vectors) expect(isUnit(v)).toBe(true);
  });

  it('a text of unknown words alone gets the documented fixed vector, whatever the words', async () => {
    const { vectors } = await service.embed({ model: EMBED_MODEL, inputs: ['🎉🎉', 'zzxqv', '🙂 qqzzxv 🎉'] });
    for (const v of vectors) v.forEach((x) => expect(Math.abs(x - UNKNOWN_ONLY_COMPONENT)).toBeLessThan(UNIT_TOLERANCE));
    expect(Array.from(vectors[1]!)).toEqual(Array.from(vectors[0]!));
  });

  it('an unknown word inside a sentence barely turns its vector', async () => {
    for (const sentence of ['The cat is sleeping on the sofa', 'he', 'Stock prices fell sharply after the announcement']) {
      const [plain, withUnknown, withLetter] = (await service.embed({ model: EMBED_MODEL, inputs: [sentence, `${sentence} 🎉`, `${sentence} b`] })).vectors;
      expect(1 - cosine(plain!, withUnknown!), sentence).toBeLessThan(UNKNOWN_WORD_MAX_TURN);
      expect(1 - cosine(plain!, withLetter!), sentence).toBeLessThan(UNKNOWN_WORD_MAX_TURN);
    }
  });

  it('embeds a digit string like its English reading, and "a" and "I" like "an" and "me"', async () => {
    const [digits, words, a, an, i, me] = (await service.embed({ model: EMBED_MODEL, inputs: ['2 cats', 'two cats', 'a', 'an', 'I', 'me'] })).vectors;
    expect(1 - cosine(digits!, words!)).toBeLessThan(UNIT_TOLERANCE);
    expect(1 - cosine(a!, an!)).toBeLessThan(UNIT_TOLERANCE);
    expect(1 - cosine(i!, me!)).toBeLessThan(UNIT_TOLERANCE);
  });
});

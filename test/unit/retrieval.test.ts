/**
 * The retrieval routes' pure parts: ranking by cosine and by logits (scores in [0, 1], best first,
 * ties in document order), Cohere's search units, and errors about one input worded for the field
 * the client sent it in.
 */
import { describe, expect, it } from 'vitest';
import { CoreError } from '../../src/core/errors.js';
import { located } from '../../src/http/retrieval/errors.js';
import { cosine, rankByCosine, rankByLogits, searchUnits } from '../../src/http/retrieval/rank.js';
import { HttpError } from '../../src/http/shared/errors.js';

const v = (...xs: number[]) => Float32Array.from(xs);

describe('ranking', () => {
  it('cosine maps to (1 + cos) / 2, best first, ties keep the documents\' order; a zero vector scores as orthogonal', () => {
    const ranked = rankByCosine(v(1, 0), [v(0, 1), v(-1, 0), v(2, 0), v(0, 3), v(0, 0)]);
    expect(ranked.map((r) => r.index)).toEqual([2, 0, 3, 4, 1]);
    expect(ranked.map((r) => r.score)).toEqual([1, 0.5, 0.5, 0.5, 0]);
    expect(ranked[0]!.raw).toBe(1);
    expect(cosine(v(1, 1), v(1, 1))).toBeCloseTo(1, 6);
  });

  it('logits map through the sigmoid, best first', () => {
    const ranked = rankByLogits([-2, 3, 0]);
    expect(ranked.map((r) => r.index)).toEqual([1, 2, 0]);
    expect(ranked[1]!.score).toBe(0.5);
    expect(ranked[0]!.raw).toBe(3);
  });

  it('one search unit per 100 documents, at least one', () => {
    expect([1, 100, 101, 1000].map(searchUnits)).toEqual([1, 1, 2, 10]);
  });
});

describe('errors about one input', () => {
  const tooLong = new CoreError('input_too_long', 'Input 3 is 9000 tokens, more than the model\'s context of 8192.', { item: 3, limit: 8192, requested: 9000 });

  it('name the field: a 400 naming it in the OpenAI envelope, the code kept for TEI\'s', () => {
    const openai = located(tooLong, 'documents', true, false) as HttpError;
    expect(openai).toBeInstanceOf(HttpError);
    expect(openai.message).toBe('documents[3] is 9000 tokens, more than the model\'s context of 8192.');
    expect(openai.param).toBe('documents');
    const tei = located(tooLong, 'texts', true, true) as CoreError;
    expect(tei.code).toBe('input_too_long');
    expect(tei.message).toMatch(/^texts\[3\] is 9000 tokens/);
    expect((located(tooLong, 'query', false, false) as HttpError).message).toMatch(/^query is 9000 tokens/);
  });

  it('leave other errors as they are', () => {
    const busy = new CoreError('overloaded', 'busy');
    expect(located(busy, 'documents', true, false)).toBe(busy);
  });
});

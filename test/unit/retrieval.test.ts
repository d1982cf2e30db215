/**
 * The retrieval routes' pure parts: ranking by cosine and by logits (scores in [0, 1], best first,
 * ties in document order), the default model's choice, Cohere's search units, and errors about one
 * input worded for the field the client sent it in.
 */
import { describe, expect, it } from 'vitest';
import { CoreError } from '../../src/core/errors.js';
import type { ModelTask } from '../../src/core/model.js';
import type { EmbedRequest, RerankRequest } from '../../src/core/types.js';
import { cosine, defaultModelAmong, scoreDocuments } from '../../src/inference/ranking.js';
import { searchUnits } from '../../src/http/retrieval/cohere/render.js';
import { located } from '../../src/http/retrieval/errors.js';
import { bestFirst } from '../../src/http/retrieval/scored.js';
import { HttpError } from '../../src/http/shared/errors.js';

const v = (...xs: number[]) => Float32Array.from(xs);

/** A service whose model `m` has `task`: embeddings are looked up by text, a cross-encoder's logits are given. */
const serviceOf = (task: ModelTask, vectors: Record<string, Float32Array>, logits: number[] = []) => ({
  findModel: () => ({ id: 'm', task, engine: 'onnx' as const, contextLength: 8, maxOutputTokens: 8, thinking: false, aliases: [], displayName: 'm', created: 0 }),
  embed: async (request: EmbedRequest) => ({ vectors: request.inputs.map((t) => vectors[t as string]!), promptTokens: request.inputs.length }),
  rerank: async (request: RerankRequest) => ({ logits: logits.slice(0, request.documents.length), promptTokens: request.documents.length }),
});

describe('ranking', () => {
  it('cosine maps to (1 + cos) / 2, best first, ties keep the documents\' order; a zero vector scores as orthogonal', async () => {
    const vectors = { q: v(1, 0), a: v(0, 1), b: v(-1, 0), c: v(2, 0), d: v(0, 3), e: v(0, 0) };
    const result = await scoreDocuments(serviceOf('embedding', vectors), { model: 'm', queries: ['q'], documents: ['a', 'b', 'c', 'd', 'e'] });
    expect(result.by).toBe('cosine');
    const ranked = bestFirst(result.scores);
    expect(ranked.map((r) => r.index)).toEqual([2, 0, 3, 4, 1]);
    expect(ranked.map((r) => r.score)).toEqual([1, 0.5, 0.5, 0.5, 0]);
    expect(ranked[0]!.raw).toBe(1);
    expect(cosine(v(1, 1), v(1, 1))).toBeCloseTo(1, 6);
  });

  it('logits map through the sigmoid, best first', async () => {
    const result = await scoreDocuments(serviceOf('rerank', {}, [-2, 3, 0]), { model: 'm', queries: ['q'], documents: ['a', 'b', 'c'] });
    const ranked = bestFirst(result.scores);
    expect(ranked.map((r) => r.index)).toEqual([1, 2, 0]);
    expect(ranked[1]!.score).toBe(0.5);
    expect(ranked[0]!.raw).toBe(3);
  });

  it('pairwise: each document against its own query; an error names its part and its item in the request', async () => {
    const vectors = { q1: v(1, 0), q2: v(0, 1), a: v(0, 1), b: v(0, 1) };
    const result = await scoreDocuments(serviceOf('embedding', vectors), { model: 'm', queries: ['q1', 'q2'], documents: ['a', 'b'] });
    expect(result.scores.map((s) => s.raw)).toEqual([0, 1]);
    const failing = { ...serviceOf('rerank', {}), rerank: async () => Promise.reject(new CoreError('input_too_long', 'Input 0 is too long', { item: 0 })) };
    const error = await scoreDocuments(failing, { model: 'm', queries: ['q1', 'q2'], documents: ['a', 'b'] }).catch((e: CoreError) => e);
    expect((error as CoreError).details).toMatchObject({ part: 'document', item: 0 });
    await expect(scoreDocuments(serviceOf('chat', {}), { model: 'm', queries: ['q'], documents: ['a'] })).rejects.toMatchObject({ code: 'wrong_model_task' });
  });

  it('one search unit per 100 documents, at least one', () => {
    expect([1, 100, 101, 1000].map(searchUnits)).toEqual([1, 1, 2, 10]);
  });
});

describe('the model for a body that names none', () => {
  const model = (id: string, task: ModelTask, randomWeights?: boolean) => ({ id, task, ...(randomWeights ? { randomWeights } : {}) });
  it('ranking: a cross-encoder, else an embedding model, else one with random weights; several of the first: several', () => {
    const random = model('random', 'rerank', true);
    expect(defaultModelAmong([model('e', 'embedding'), random], 'ranking')).toEqual({ kind: 'one', id: 'e' });
    expect(defaultModelAmong([model('e', 'embedding'), random, model('x', 'rerank')], 'ranking')).toEqual({ kind: 'one', id: 'x' });
    expect(defaultModelAmong([model('c', 'chat'), random], 'ranking')).toEqual({ kind: 'one', id: 'random' });
    expect(defaultModelAmong([model('a', 'rerank'), model('b', 'rerank'), random], 'ranking')).toEqual({ kind: 'several', ids: ['a', 'b'] });
    expect(defaultModelAmong([model('c', 'chat')], 'embedding')).toEqual({ kind: 'none' });
    expect(defaultModelAmong([model('c', 'chat'), random], 'any')).toEqual({ kind: 'several', ids: ['c', 'random'] });
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

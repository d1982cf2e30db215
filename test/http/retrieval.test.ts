/**
 * The retrieval routes over a fake inference service (app.inject): which model a body without one
 * gets, each shape's answer, every error in its route's envelope, and TEI's error table complete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { CoreError, overloaded } from '../../src/core/errors.js';
import type { EmbedRequest, RerankRequest, RerankResult } from '../../src/core/types.js';
import { TEI_ERRORS, teiErrors } from '../../src/http/retrieval/errors.js';
import { classify, ERROR_CODES, HttpError } from '../../src/http/shared/errors.js';
import { FAKE_CHAT, FAKE_EMBED, FakeInference } from '../helpers/fake-inference.js';
import type { ModelInfo } from '../../src/models/registry.js';
import { JSON_HEADERS } from '../helpers/inject.js';

const TEI_TYPES = ['validation', 'tokenizer', 'empty', 'overloaded', 'backend', 'unhealthy'];

/** A fake with a second embedding model, so a body without a model is ambiguous. */
class TwoEmbedders extends FakeInference {
  override listModels(): ModelInfo[] {
    return [...super.listModels(), { ...FAKE_EMBED, id: 'fake-embed-2' }];
  }
}

/** A fake with these models (beside or instead of its own) whose cross-encoders score document i as logit i; it records which model ranked. */
class WithModels extends FakeInference {
  ranked: string[] = [];
  constructor(private readonly models: ModelInfo[]) {
    super();
  }
  override listModels(): ModelInfo[] {
    return this.models;
  }
  override async rerank(request: RerankRequest): Promise<RerankResult> {
    this.ranked.push(request.model);
    return { logits: request.documents.map((_, i) => i), promptTokens: request.documents.length };
  }
}
const crossEncoder = (id: string): ModelInfo => ({ ...FAKE_EMBED, id, task: 'rerank', displayName: id });
/** A cross-encoder whose manifest says randomWeights, as the bundled test one's does. */
const RANDOM_RERANKER = 'random-reranker';
const randomCrossEncoder: ModelInfo = { ...crossEncoder(RANDOM_RERANKER), randomWeights: true };

const appWith = async (inference: FakeInference, teiModel?: string) =>
  buildApp({ config: { apiKeys: [], bodyLimit: 1024 * 1024, pingIntervalMs: 60_000, ...(teiModel ? { teiModel } : {}) }, inference });

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => {
  fake = new FakeInference();
  app = await appWith(fake);
});
afterAll(() => app.close());

const post = (url: string, body: unknown, on = app) =>
  on.inject({ method: 'POST', url, headers: JSON_HEADERS, payload: typeof body === 'string' ? body : JSON.stringify(body) });

describe('TEI error table', () => {
  it('maps every code, core and HTTP, and nothing else', () => {
    expect(Object.keys(TEI_ERRORS).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each([...ERROR_CODES])('%s: a 4xx/5xx status, a TEI error type, the envelope', (code) => {
    const error = (ERROR_CODES.slice(0, 15) as readonly string[]).includes(code) && !(code in { invalid_request: 1 })
      ? new CoreError(code as never, 'neutral', { model: 'm', limit: 10, requested: 7, item: 2 })
      : new HttpError(code as never, 'http message');
    const { status, body } = teiErrors.render(classify(error), 'r') as { status: number; body: any };
    expect(status).toBeGreaterThanOrEqual(400);
    expect(Object.keys(body).sort()).toEqual(['error', 'error_type']);
    expect(TEI_TYPES).toContain(body.error_type);
  });
});

describe('rerank (fake inference: the vector of a text of n words is (cos n, sin n))', () => {
  it('the Cohere shape: sorted by score, top_n, return_documents, usage, search units', async () => {
    const res = await post('/v1/rerank', { model: 'fake-embed', query: 'a b', documents: ['x', 'y z', 'p q r s'], top_n: 2, return_documents: true });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.results.map((r: any) => r.index)).toEqual([1, 0]);
    expect(body.results[0]).toEqual({ index: 1, relevance_score: 1, document: { text: 'y z' } });
    expect(body.usage).toEqual({ total_tokens: 2 + 1 + 2 + 4 });
    expect(body.meta.billed_units).toEqual({ search_units: 1 });
  });

  it('the body decides: texts on /rerank is TEI, on /v1/rerank it is refused in the OpenAI envelope', async () => {
    const tei = await post('/rerank', { query: 'a b', texts: ['x', 'y z'] });
    expect(tei.json()).toEqual([{ index: 1, score: 1 }, { index: 0, score: expect.any(Number) }]);
    const wrong = await post('/v1/rerank', { model: 'fake-embed', query: 'a b', texts: ['x'] });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error).toMatchObject({ message: 'documents: Field required', param: 'documents' });
  });

  it.each([
    [{ model: 'fake-embed', query: '', documents: ['x'] }, /^query: must not be empty/],
    [{ model: 'fake-embed', query: 'q', documents: [] }, /^documents: must contain at least one document/],
    [{ model: 'fake-embed', query: 'q', documents: Array(1001).fill('x') }, /^documents: at most 1000 documents/],
    [{ model: 'fake-embed', query: 'q', documents: [3] }, /^documents\.0: /],
    [{ model: 'fake-embed', query: 'q', documents: ['x'], top_n: 0 }, /^top_n: must be at least 1/],
    [{ model: 'fake-chat', query: 'q', documents: ['x'] }, /is a chat model; ranking needs an embedding or a rerank model/],
    [[1, 2], /must be a JSON object/],
  ])('%j -> 400 in the OpenAI envelope', async (body, message) => {
    const res = await post('/v2/rerank', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(message);
  });

  it('an overloaded model: 429 in the route\'s envelope', async () => {
    const busy = new (class extends FakeInference {
      override async embed(request: EmbedRequest): Promise<never> {
        throw overloaded(request.model);
      }
    })();
    const busyApp = await appWith(busy);
    const tei = await post('/rerank', { query: 'q', texts: ['x'] }, busyApp);
    expect(tei.statusCode).toBe(429);
    expect(tei.json()).toEqual({ error: expect.any(String), error_type: 'overloaded' });
    const cohere = await post('/v1/rerank', { model: 'fake-embed', query: 'q', documents: ['x'] }, busyApp);
    expect(cohere.statusCode).toBe(429);
    expect(cohere.json().error.type).toBe('server_error');
    await busyApp.close();
  });
});

describe('which model a body without one gets', () => {
  it('the only embedding model; several and no setting: a 400 naming the setting; the setting wins', async () => {
    expect((await post('/embed', { inputs: 'a b' })).statusCode).toBe(200);
    const two = await appWith(new TwoEmbedders());
    const ambiguous = await post('/embed', { inputs: 'a b' }, two);
    expect(ambiguous.statusCode).toBe(422);
    expect(ambiguous.json()).toEqual({ error: expect.stringMatching(/several models can serve this \(fake-embed, fake-embed-2\); send `model`, or set --tei-model \(TEI_MODEL\)/), error_type: 'validation' });
    const info = await two.inject({ method: 'GET', url: '/info' });
    expect(info.statusCode).toBe(422);
    await two.close();
    const set = await appWith(new TwoEmbedders(), 'fake-embed-2');
    expect((await set.inject({ method: 'GET', url: '/info' })).json()).toMatchObject({ model_id: 'fake-embed-2', max_input_length: 64 });
    // A llama-server /detokenize names no model: the setting serves it, answered {content}.
    expect((await post('/detokenize', { tokens: [1, 2] }, set)).json()).toEqual({ content: 'x xx' });
    await set.close();
  });
});

describe('TEI truncation', () => {
  it('is off unless asked for; truncation_direction left (any case) asks the core to keep the end; without truncate it changes nothing', async () => {
    const seen: Array<EmbedRequest['truncate']> = [];
    const recording = new (class extends FakeInference {
      override async embed(request: EmbedRequest) {
        seen.push(request.truncate);
        return super.embed(request);
      }
    })();
    const on = await appWith(recording);
    for (const body of [{}, { truncate: true }, { truncate: true, truncation_direction: 'Left' }, { truncate: true, truncation_direction: 'right' }, { truncation_direction: 'left' }]) {
      expect((await post('/embed', { inputs: 'a b', ...body }, on)).statusCode).toBe(200);
    }
    expect(seen).toEqual([false, true, 'left', true, false]);
    seen.length = 0;
    expect((await post('/rerank', { query: 'a', texts: ['b c'], truncate: true, truncation_direction: 'left' }, on)).statusCode).toBe(200);
    expect(seen).toEqual(['left', 'left']);
    const wrong = await post('/embed', { inputs: 'a', truncate: true, truncation_direction: 'up' }, on);
    expect(wrong.statusCode).toBe(422);
    await on.close();
  });
});

describe('which model a rerank body without one gets', () => {
  const rankedBy = async (models: ModelInfo[]) => {
    const fake = new WithModels(models);
    const on = await appWith(fake);
    try {
      const responses = [await post('/rerank', { query: 'a b', texts: ['x', 'y z'] }, on), await post('/v1/rerank', { query: 'a b', documents: ['x', 'y z'] }, on), await post('/score', { text_1: 'a b', text_2: ['x'] }, on)];
      for (const r of responses) expect(r.statusCode, r.body).toBe(200);
      return { fake, model: responses[1]!.json().model as string };
    } finally {
      await on.close();
    }
  };

  it('a random-weight cross-encoder (the bundled test one) never shadows a model that ranks: the embedding model, else a real cross-encoder', async () => {
    // Out of the box: the bundled embedding model ranks, the test cross-encoder only when named.
    const bundled = await rankedBy([FAKE_CHAT, FAKE_EMBED, randomCrossEncoder]);
    expect(bundled.model).toBe('fake-embed');
    expect(bundled.fake.ranked).toEqual([]);
    // A real cross-encoder installed beside it is the only one.
    const real = await rankedBy([FAKE_CHAT, FAKE_EMBED, randomCrossEncoder, crossEncoder('ms-marco')]);
    expect(real.model).toBe('ms-marco');
    expect(real.fake.ranked).toEqual(['ms-marco', 'ms-marco', 'ms-marco']);
    // Nothing else ranks: the test cross-encoder serves.
    const alone = await rankedBy([FAKE_CHAT, randomCrossEncoder]);
    expect(alone.model).toBe(RANDOM_RERANKER);
    // Named, it serves whatever else is installed.
    const on = await appWith(new WithModels([FAKE_CHAT, FAKE_EMBED, randomCrossEncoder]));
    expect((await post('/v1/rerank', { model: RANDOM_RERANKER, query: 'q', documents: ['x', 'y'] }, on)).json().results.map((r: any) => r.index)).toEqual([1, 0]);
    await on.close();
  });

  it('two real cross-encoders and no setting: a 400 naming them', async () => {
    const on = await appWith(new WithModels([FAKE_EMBED, randomCrossEncoder, crossEncoder('a'), crossEncoder('b')]));
    const res = await post('/rerank', { query: 'q', texts: ['x'] }, on);
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatch(/several models can serve this \(a, b\)/);
    await on.close();
  });
});

describe('tokenize and detokenize shapes', () => {
  it('vLLM prompt, llama-server content, TEI inputs', async () => {
    expect((await post('/tokenize', { model: 'fake-chat', prompt: 'ab c' })).json()).toEqual({ count: 2, max_model_len: 64, tokens: [2, 1], token_strs: null });
    expect((await post('/tokenize', { model: 'fake-chat', content: 'ab c', with_pieces: true })).json()).toEqual({ tokens: [{ id: 2, piece: 'ab' }, { id: 1, piece: 'c' }] });
    expect((await post('/tokenize', { inputs: ['ab c'] })).json()).toEqual([[{ id: 2, text: 'ab', special: false, start: 0, stop: 2 }, { id: 1, text: 'c', special: false, start: 3, stop: 4 }]]);
    expect((await post('/detokenize', { model: 'fake-chat', tokens: [3] })).json()).toEqual({ prompt: 'xxx' });
  });

  it('errors in the envelope of the body\'s shape', async () => {
    const tei = await post('/tokenize', { inputs: 3 });
    expect(tei.statusCode).toBe(422);
    expect(tei.json().error_type).toBe('validation');
    const vllm = await post('/detokenize', { model: 'fake-chat', tokens: [5000] });
    expect(vllm.statusCode).toBe(400);
    expect(vllm.json().error).toMatchObject({ param: 'tokens', type: 'invalid_request_error' });
    const notJson = await post('/tokenize', '{');
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error.type).toBe('invalid_request_error');
    const decode = await post('/decode', { ids: 'x' });
    expect(decode.statusCode).toBe(422);
    expect(decode.json().error_type).toBe('validation');
    const unknown = await post('/tokenize', { model: 'nope', prompt: 'x' });
    expect(unknown.statusCode).toBe(404);
  });
});

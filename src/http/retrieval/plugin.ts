/**
 * The retrieval routes: rerank (POST /v1/rerank, /v2/rerank, /rerank), tokenize and detokenize
 * (POST /tokenize, /detokenize), and TEI's own (POST /embed, /decode, GET /info). The body decides
 * the shape of the answer and the envelope of errors: TEI's bodies (`texts`, `inputs`, `ids`) get
 * TEI's, the others (Cohere / Jina / vLLM / llama-server) the OpenAI envelope. Every route is behind
 * the same API keys as the rest (Bearer or x-api-key).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { EmbedInput, InferenceService, Truncate } from '../../core/types.js';
import type { ModelTask } from '../../core/model.js';
import { clip, isCoreError } from '../../core/errors.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { invalidRequest, sendError, type ErrorDialect } from '../shared/errors.js';
import { keepAliveOf } from '../shared/keep-alive.js';
import { BUNDLED_TEST_RERANKER } from '../../models/bundled-versions.js';
import { parseBody } from '../shared/validation.js';
import { openAiErrors } from '../openai/errors.js';
import { located, teiErrors } from './errors.js';
import { cosine, rankByCosine, rankByLogits, renderRerank, renderScores, renderTeiRerank } from './rank.js';
import {
  detokenizeSchema, llamaTokenizeSchema, rerankSchema, scoreSchema, teiDecodeSchema, teiEmbedSchema, teiRerankSchema, teiTokenizeSchema, vllmChatTokenizeSchema,
  vllmTokenizeSchema,
} from './schema.js';
import { chatPromptOf, renderLlamaTokens, renderTeiTokens, renderVllmTokens } from './tokenize.js';

export interface RetrievalPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** The model TEI's routes and model-less bodies serve (config teiModel); else the only embedding model. */
  defaultModel?: string;
}

/** Paths only TEI has: their errors are in TEI's envelope whatever the body. */
const TEI_ONLY = ['/embed', '/decode', '/info'];
/** The route a request matched (a percent-encoded path matches its decoded route), else its path. */
const pathOf = (request: FastifyRequest) => request.routeOptions.url ?? request.url.split('?')[0]!;
const isObject = (body: unknown): body is Record<string, unknown> => typeof body === 'object' && body !== null && !Array.isArray(body);

/** The envelope a request's errors take: TEI's for TEI's paths and bodies, OpenAI's otherwise. */
function dialectOf(request: FastifyRequest): ErrorDialect {
  const path = pathOf(request);
  if (TEI_ONLY.includes(path) || (path === '/' && request.method === 'POST')) return teiErrors;
  const body = request.body;
  if ((path === '/rerank' || path === '/tokenize') && isObject(body) && ('texts' in body || 'inputs' in body)) return teiErrors;
  return openAiErrors;
}

/**
 * One task after another: a TEI body may hold 2,048 inputs, and as many tasks at once would exceed
 * the model's admission bound (its queue) and be refused as overloaded.
 */
async function eachInTurn<T, R>(items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i++) results.push(await work(items[i]!, i));
  return results;
}

interface RankOptions {
  model: string;
  query: string;
  documents: string[];
  tei: boolean;
  field: string;
  /** Cut each document to this many tokens (max_tokens_per_doc). */
  maxTokens?: number;
  /** TEI's truncate (and its direction); undefined: the server's setting. */
  truncate?: Truncate;
}

/**
 * Which models a model-less body may be given, in order of preference: a task's models, or the
 * bundled test cross-encoder alone. That one's weights are random (its scores rank nothing), so it
 * never counts among the cross-encoders: a real one installed beside it is still "the only one", and
 * with none the embedding model ranks (out of the box, glove-sif-100d); it serves when named, or
 * when nothing else can rank.
 */
type Choice = ModelTask | 'any' | 'test-reranker';
const matches = (choice: Choice, model: { id: string; task: ModelTask }) =>
  choice === 'any' ||
  (choice === 'test-reranker' ? model.id === BUNDLED_TEST_RERANKER && model.task === 'rerank' : model.task === choice && !(choice === 'rerank' && model.id === BUNDLED_TEST_RERANKER));
const RANKING: readonly Choice[] = ['rerank', 'embedding', 'test-reranker'];

/**
 * TEI's truncation: off unless asked for (TEI's default, whatever the server's setting); `left`
 * keeps the end of the text (of a cross-encoder's pair, the document's end: its query is never cut).
 */
const teiTruncate = (body: { truncate?: boolean | null; truncation_direction?: 'left' | 'right' | null }): Truncate =>
  body.truncate ? (body.truncation_direction === 'left' ? 'left' : true) : false;

export const retrievalPlugin: FastifyPluginAsync<RetrievalPluginOptions> = async (app, options) => {
  const { inference, checkKey } = options;
  app.setErrorHandler((error, request, reply) => sendError(dialectOf(request), error, request, reply));
  app.addHook(
    'onRequest',
    requireKey({ checkKey, allowXApiKey: true, missing: 'No API key given. Send it as `Authorization: Bearer KEY` or `x-api-key: KEY`.', invalid: 'Incorrect API key provided.' }),
  );

  /**
   * The model a request serves: the body's, else the configured one, else the only model that can:
   * `choices` in order of preference (ranking: a cross-encoder, else an embedding model, else the
   * bundled random-weight cross-encoder); several of the first choice present and no setting is a
   * 400 that says what to set.
   */
  const modelFor = (given: string | undefined, choices: readonly Choice[], what: string): string => {
    if (given !== undefined) return given;
    if (options.defaultModel !== undefined) return options.defaultModel;
    const models = inference.listModels();
    for (const choice of choices) {
      const candidates = models.filter((m) => matches(choice, m));
      if (candidates.length === 1) return candidates[0]!.id;
      if (candidates.length === 0) continue;
      const names = candidates.slice(0, 10).map((m) => m.id).join(', ');
      throw invalidRequest(`model: several models can serve this (${clip(names, 300)}); send \`model\`, or set --tei-model (TEI_MODEL) to the one to serve`, 'model');
    }
    throw invalidRequest(`model: no ${what} model is installed; install one or send \`model\``, 'model');
  };

  /**
   * The documents ranked against the query: a cross-encoder scores each pair; an embedding model
   * ranks by cosine (its query and documents calls share the batcher's next batch). `field`: where the
   * body holds the documents, for errors; `tei`: the body is TEI's (errors keep their codes).
   */
  const rank = async (request: FastifyRequest, opts: RankOptions) => {
    const { model, query, documents } = opts;
    const described = inference.findModel(model);
    const call = keepAliveOf(request);
    if (described?.task === 'rerank') {
      const pairs = { model, query, documents, ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}), ...(opts.truncate !== undefined ? { truncate: opts.truncate } : {}) };
      const scored = await inference.rerank(pairs, call).catch((e: unknown) => Promise.reject(located(e, opts.field, true, opts.tei)));
      return { ranked: rankByLogits(scored.logits), tokens: scored.promptTokens };
    }
    if (described && described.task !== 'embedding') {
      throw invalidRequest(`model: \`${clip(model)}\` is a ${described.task} model; ranking needs an embedding or a rerank model`, 'model');
    }
    const common = { model, ...(opts.truncate !== undefined ? { truncate: opts.truncate } : {}) };
    const [q, d] = await Promise.all([
      inference.embed({ ...common, inputs: [query] }, call).catch((e: unknown) => Promise.reject(located(e, 'query', false, opts.tei))),
      inference.embed({ ...common, inputs: documents, ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}) }, call).catch((e: unknown) => Promise.reject(located(e, opts.field, true, opts.tei))),
    ]);
    return { ranked: rankByCosine(q.vectors[0]!, d.vectors), tokens: q.promptTokens + d.promptTokens };
  };

  const rerank = async (request: FastifyRequest) => {
    const body = request.body;
    if (isObject(body) && 'texts' in body && pathOf(request) === '/rerank') {
      const tei = parseBody(teiRerankSchema, body);
      const model = modelFor(tei.model, RANKING, 'ranking');
      const { ranked } = await rank(request, { model, query: tei.query, documents: tei.texts, tei: true, field: 'texts', truncate: teiTruncate(tei) });
      return renderTeiRerank({ ranked, texts: tei.texts, rawScores: tei.raw_scores ?? false, returnText: tei.return_text ?? false });
    }
    const parsed = parseBody(rerankSchema, body);
    const model = modelFor(parsed.model, RANKING, 'ranking');
    const documents = parsed.documents.map((d) => (typeof d === 'string' ? d : d.text));
    const maxTokens = parsed.max_tokens_per_doc ?? undefined;
    const { ranked, tokens } = await rank(request, { model, query: parsed.query, documents, tei: false, field: 'documents', ...(maxTokens ? { maxTokens } : {}) });
    return renderRerank({ model, ranked, documents, topN: parsed.top_n ?? undefined, returnDocuments: parsed.return_documents ?? false, tokens });
  };
  app.post('/v1/rerank', rerank);
  app.post('/v2/rerank', rerank);
  app.post('/rerank', rerank);

  // vLLM's score API: each text_2 against text_1 (one text), or pairwise (as many of each). As vLLM
  // scores them: a cross-encoder's sigmoid of the logit, an embedding model's cosine.
  const score = async (request: FastifyRequest) => {
    const body = parseBody(scoreSchema, request.body);
    const model = modelFor(body.model, RANKING, 'ranking');
    const left = typeof body.text_1 === 'string' ? [body.text_1] : body.text_1;
    const right = typeof body.text_2 === 'string' ? [body.text_2] : body.text_2;
    if (left.length !== 1 && left.length !== right.length) {
      throw invalidRequest(`text_1: ${left.length} texts against ${right.length} in text_2; send one text_1, or as many as text_2`, 'text_1');
    }
    const call = keepAliveOf(request);
    const described = inference.findModel(model);
    let scores: number[];
    let tokens = 0;
    if (described?.task === 'rerank') {
      // One query against all: one request. Pairwise: one pair after another (the model's queue is bounded).
      const groups = left.length === 1 ? [{ query: left[0]!, documents: right, at: 0 }] : right.map((d, i) => ({ query: left[i]!, documents: [d], at: i }));
      scores = new Array<number>(right.length);
      await eachInTurn(groups, async ({ query, documents, at }) => {
        const scored = await inference.rerank({ model, query, documents }, call).catch((e: unknown) => {
          if (isCoreError(e) && e.message.startsWith('query ')) throw invalidRequest(e.message.replace(/^query/, left.length > 1 ? `text_1[${at}]` : 'text_1'), 'text_1');
          throw located(e, 'text_2', right.length > 1, false, (item) => at + item);
        });
        rankByLogits(scored.logits).forEach((r) => (scores[at + r.index] = r.score));
        tokens += scored.promptTokens;
      });
    } else {
      if (described && described.task !== 'embedding') throw invalidRequest(`model: \`${clip(model)}\` is a ${described.task} model; scoring needs an embedding or a rerank model`, 'model');
      const [q, d] = await Promise.all([
        inference.embed({ model, inputs: left }, call).catch((e: unknown) => Promise.reject(located(e, 'text_1', left.length > 1, false))),
        inference.embed({ model, inputs: right }, call).catch((e: unknown) => Promise.reject(located(e, 'text_2', right.length > 1, false))),
      ]);
      scores = d.vectors.map((vector, i) => cosine(q.vectors[left.length === 1 ? 0 : i]!, vector));
      tokens = q.promptTokens + d.promptTokens;
    }
    return renderScores(model, scores, tokens);
  };
  app.post('/score', score);
  app.post('/v1/score', score);

  app.post('/tokenize', async (request) => {
    const body = request.body;
    const call = keepAliveOf(request);
    if (isObject(body) && 'inputs' in body) {
      const tei = parseBody(teiTokenizeSchema, body);
      if (tei.prompt_name != null) throw invalidRequest('prompt_name: this server has no prompts configured for its models');
      const model = modelFor(tei.model, ['embedding'], 'embedding');
      const texts = typeof tei.inputs === 'string' ? [tei.inputs] : tei.inputs;
      const addSpecial = tei.add_special_tokens ?? true;
      return eachInTurn(texts, (text, i) =>
        inference.tokenize({ model, input: { kind: 'text', text, addSpecial }, pieces: true }, call).then(renderTeiTokens, (e: unknown) => Promise.reject(located(e, texts.length > 1 ? `inputs[${i}]` : 'inputs', false, true))),
      );
    }
    if (isObject(body) && 'content' in body) {
      const llama = parseBody(llamaTokenizeSchema, body);
      const model = modelFor(llama.model, ['any'], 'any');
      const result = await inference.tokenize({ model, input: { kind: 'text', text: llama.content, addSpecial: llama.add_special ?? false }, pieces: llama.with_pieces ?? false }, call);
      return renderLlamaTokens(result, llama.with_pieces ?? false);
    }
    if (isObject(body) && 'messages' in body) {
      const vllm = parseBody(vllmChatTokenizeSchema, body);
      const prompt = chatPromptOf(vllm);
      const result = await inference.tokenize({ model: vllm.model, input: { kind: 'chat', prompt }, pieces: vllm.return_token_strs ?? false }, call);
      return renderVllmTokens(result, inference.findModel(vllm.model)?.contextLength ?? 0, vllm.return_token_strs ?? false);
    }
    if (isObject(body) && 'prompt' in body) {
      const vllm = parseBody(vllmTokenizeSchema, body);
      const model = modelFor(vllm.model, ['any'], 'any');
      const result = await inference.tokenize({ model, input: { kind: 'text', text: vllm.prompt, addSpecial: vllm.add_special_tokens ?? true }, pieces: vllm.return_token_strs ?? false }, call);
      return renderVllmTokens(result, inference.findModel(model)?.contextLength ?? 0, vllm.return_token_strs ?? false);
    }
    throw invalidRequest(
      isObject(body)
        ? 'The body must hold `prompt` or `messages` (vLLM), `content` (llama-server) or `inputs` (TEI).'
        : 'The request body must be a JSON object with `prompt`, `messages`, `content` or `inputs`.',
    );
  });

  // vLLM's body names its model and is answered {prompt}; llama-server's names none and is answered {content}.
  app.post('/detokenize', async (request) => {
    const body = parseBody(detokenizeSchema, request.body);
    const named = body.model !== undefined;
    const model = modelFor(body.model, ['any'], 'any');
    const text = await inference.detokenize({ model, tokens: body.tokens }, keepAliveOf(request)).catch((e: unknown) => Promise.reject(located(e, 'tokens', true, false)));
    return named ? { prompt: text } : { content: text };
  });

  app.post('/decode', async (request) => {
    const body = parseBody(teiDecodeSchema, request.body);
    const model = modelFor(body.model, ['embedding'], 'embedding');
    const lists = body.ids.length > 0 && Array.isArray(body.ids[0]) ? (body.ids as number[][]) : [body.ids as number[]];
    const skipSpecial = body.skip_special_tokens ?? true;
    const call = keepAliveOf(request);
    return eachInTurn(lists, (tokens, i) => inference.detokenize({ model, tokens, skipSpecial }, call).catch((e: unknown) => Promise.reject(located(e, lists.length > 1 ? `ids[${i}]` : 'ids', true, true))));
  });

  // TEI answers POST / as its model's task: clients given the server's base URL as their endpoint
  // (@huggingface/inference's endpointUrl, Inference Endpoints' convention) post there.
  const embed = async (request: FastifyRequest) => {
    const body = parseBody(teiEmbedSchema, request.body);
    if (body.prompt_name != null) throw invalidRequest('prompt_name: this server has no prompts configured for its models');
    const model = modelFor(body.model, ['embedding'], 'embedding');
    const inputs: EmbedInput[] = typeof body.inputs === 'string' ? [body.inputs] : typeof body.inputs[0] === 'number' ? [body.inputs as number[]] : (body.inputs as EmbedInput[]);
    const result = await inference
      .embed({ model, inputs, truncate: teiTruncate(body), normalize: body.normalize ?? true, ...(body.dimensions != null ? { dimensions: body.dimensions } : {}) }, keepAliveOf(request))
      .catch((e: unknown) => Promise.reject(located(e, 'inputs', inputs.length > 1, true)));
    return result.vectors.map((v) => Array.from(v));
  };
  app.post('/embed', embed);
  app.post('/', embed);

  app.get('/info', async () => {
    const id = modelFor(undefined, ['embedding'], 'embedding');
    const model = inference.findModel(id);
    if (!model) throw invalidRequest(`The configured model \`${clip(id)}\` does not exist.`);
    return {
      model_id: model.id,
      model_sha: null,
      model_type: { embedding: {} },
      max_input_length: model.contextLength,
      max_client_batch_size: 2048,
      max_batch_requests: null,
      auto_truncate: false,
      tokenization_workers: 1,
      version: 'local-inference-server',
      sha: null,
      docker_label: null,
    };
  });
};

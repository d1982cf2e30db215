/**
 * The retrieval routes: rerank (POST /v1/rerank, /v2/rerank, /rerank), vLLM's score (POST /score,
 * /v1/score), tokenize and detokenize (POST /tokenize, /detokenize), and TEI's own (POST /embed,
 * /decode, /, GET /info). Each wire shape has its folder (cohere/, tei/, vllm/, llama/: schema,
 * convert, render, routes); shape.ts tells them apart where they share a path. TEI's shapes answer
 * errors in TEI's envelope, the others (Cohere / Jina / vLLM / llama-server) in the OpenAI one.
 * Every route is behind the same API keys as the rest (Bearer or x-api-key).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { invalidRequest, sendError } from '../shared/errors.js';
import { openAiErrors } from '../openai/errors.js';
import * as cohere from './cohere/routes.js';
import type { RetrievalContext } from './context.js';
import { detokenize } from './detokenize.js';
import { teiErrors } from './errors.js';
import * as llama from './llama/routes.js';
import { shapeOf } from './shape.js';
import * as tei from './tei/routes.js';
import * as vllm from './vllm/routes.js';
import type { ImageSettings } from '../shared/image-settings.js';

export interface RetrievalPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** The model TEI's routes and model-less bodies serve (config teiModel); else the service's choice. */
  defaultModel?: string;
  /** Limits of image input (vLLM's chat tokenize bodies). */
  images?: ImageSettings;
}

type Handler = (context: RetrievalContext, request: FastifyRequest) => Promise<unknown>;

/** /tokenize's handler by shape; a body of none of them is refused saying what they are. */
const TOKENIZERS = { tei: tei.tokenize, llama: llama.tokenize, vllm: vllm.tokenize } as const;
const tokenize: Handler = (context, request) => {
  const shape = shapeOf(request);
  if (shape === 'tei' || shape === 'llama' || shape === 'vllm') return TOKENIZERS[shape](context, request);
  const isObject = typeof request.body === 'object' && request.body !== null && !Array.isArray(request.body);
  throw invalidRequest(
    isObject
      ? 'The body must hold `prompt` or `messages` (vLLM), `content` (llama-server) or `inputs` (TEI).'
      : 'The request body must be a JSON object with `prompt`, `messages`, `content` or `inputs`.',
  );
};

const rerank: Handler = (context, request) => (shapeOf(request) === 'tei' ? tei.rerank(context, request) : cohere.rerank(context, request));

/** Path -> handler: POST unless marked GET. */
const ROUTES: Array<[string, Handler, 'GET'?]> = [
  ['/v1/rerank', rerank],
  ['/v2/rerank', rerank],
  ['/rerank', rerank],
  ['/score', vllm.score],
  ['/v1/score', vllm.score],
  ['/tokenize', tokenize],
  ['/detokenize', detokenize],
  ['/decode', tei.decode],
  ['/embed', tei.embed],
  ['/', tei.embed],
  ['/info', tei.info, 'GET'],
];

export const retrievalPlugin: FastifyPluginAsync<RetrievalPluginOptions> = async (app, options) => {
  const context: RetrievalContext = { inference: options.inference, ...(options.defaultModel !== undefined ? { defaultModel: options.defaultModel } : {}), ...(options.images ? { images: options.images } : {}) };
  app.setErrorHandler((error, request, reply) => sendError(shapeOf(request) === 'tei' ? teiErrors : openAiErrors, error, request, reply));
  app.addHook(
    'onRequest',
    requireKey({ checkKey: options.checkKey, allowXApiKey: true, missing: 'No API key given. Send it as `Authorization: Bearer KEY` or `x-api-key: KEY`.', invalid: 'Incorrect API key provided.' }),
  );
  for (const [url, handler, method] of ROUTES) app.route({ method: method ?? 'POST', url, handler: (request) => handler(context, request) });
};

/**
 * Text Embeddings Inference's routes: /rerank with `texts`, /embed (and POST /: clients given the
 * server's base URL as their endpoint, @huggingface/inference's endpointUrl, post there), /tokenize
 * with `inputs`, /decode, GET /info. Errors in TEI's envelope, keeping TEI's statuses.
 */
import type { FastifyRequest } from 'fastify';
import { clip } from '../../../core/errors.js';
import { invalidRequest } from '../../shared/errors.js';
import { keepAliveOf } from '../../shared/keep-alive.js';
import { parseBody } from '../../shared/validation.js';
import { modelFor, type RetrievalContext } from '../context.js';
import { located } from '../errors.js';
import { bestFirst, scored } from '../scored.js';
import { eachInTurn, idLists, toEmbedRequest, toScoreRequest } from './convert.js';
import { renderInfo, renderTeiRerank, renderTeiTokens } from './render.js';
import { teiDecodeSchema, teiEmbedSchema, teiRerankSchema, teiTokenizeSchema } from './schema.js';

const noPrompts = (promptName: string | null | undefined) => {
  if (promptName != null) throw invalidRequest('prompt_name: this server has no prompts configured for its models');
};

export async function rerank(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(teiRerankSchema, request.body);
  const score = toScoreRequest(body, modelFor(context, body.model, 'ranking'));
  const { scores } = await scored(context, request, score, { query: 'query', documents: 'texts', queriesIndexed: false, documentsIndexed: true, tei: true, verb: 'ranking' });
  return renderTeiRerank({ ranked: bestFirst(scores), texts: body.texts, rawScores: body.raw_scores ?? false, returnText: body.return_text ?? false });
}

export async function embed(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(teiEmbedSchema, request.body);
  noPrompts(body.prompt_name);
  const embedRequest = toEmbedRequest(body, modelFor(context, body.model, 'embedding'));
  const result = await context.inference
    .embed(embedRequest, keepAliveOf(request))
    .catch((e: unknown) => Promise.reject(located(e, 'inputs', embedRequest.inputs.length > 1, true)));
  return result.vectors.map((v) => Array.from(v));
}

export async function tokenize(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(teiTokenizeSchema, request.body);
  noPrompts(body.prompt_name);
  const model = modelFor(context, body.model, 'embedding');
  const texts = typeof body.inputs === 'string' ? [body.inputs] : body.inputs;
  const addSpecial = body.add_special_tokens ?? true;
  const call = keepAliveOf(request);
  return eachInTurn(texts, (text, i) =>
    context.inference.tokenize({ model, input: { kind: 'text', text, addSpecial }, pieces: true }, call).then(renderTeiTokens, (e: unknown) => Promise.reject(located(e, texts.length > 1 ? `inputs[${i}]` : 'inputs', false, true))),
  );
}

export async function decode(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(teiDecodeSchema, request.body);
  const model = modelFor(context, body.model, 'embedding');
  const lists = idLists(body);
  const skipSpecial = body.skip_special_tokens ?? true;
  const call = keepAliveOf(request);
  return eachInTurn(lists, (tokens, i) => context.inference.detokenize({ model, tokens, skipSpecial }, call).catch((e: unknown) => Promise.reject(located(e, lists.length > 1 ? `ids[${i}]` : 'ids', true, true))));
}

export async function info(context: RetrievalContext) {
  const id = modelFor(context, undefined, 'embedding');
  const model = context.inference.findModel(id);
  if (!model) throw invalidRequest(`The configured model \`${clip(id)}\` does not exist.`);
  return renderInfo(model);
}

/** vLLM's routes: /score and /v1/score, /tokenize with `prompt` or `messages` (its /detokenize: ../detokenize.ts). */
import type { FastifyRequest } from 'fastify';
import type { TokenizeInput } from '../../../core/types.js';
import { keepAliveOf } from '../../shared/keep-alive.js';
import { ImageIntake } from '../../shared/image-intake.js';
import { parseBody } from '../../shared/validation.js';
import { modelFor, type RetrievalContext } from '../context.js';
import { scored } from '../scored.js';
import { chatPromptOf, toScoreRequest } from './convert.js';
import { renderScores, renderVllmTokens } from './render.js';
import { scoreSchema, vllmChatTokenizeSchema, vllmTokenizeSchema } from './schema.js';

export async function score(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(scoreSchema, request.body);
  const scoreRequest = toScoreRequest(body, modelFor(context, body.model, 'ranking'));
  const { queries, documents } = scoreRequest;
  const fields = { query: 'text_1', documents: 'text_2', queriesIndexed: queries.length > 1, documentsIndexed: documents.length > 1, tei: false, verb: 'scoring' } as const;
  return renderScores(scoreRequest.model, await scored(context, request, scoreRequest, fields));
}

/** A `messages` body counts the chat prompt (a chat model); a `prompt` body, a text (any model). */
export async function tokenize(context: RetrievalContext, request: FastifyRequest) {
  const chat = typeof request.body === 'object' && request.body !== null && 'messages' in request.body;
  let model: string;
  let input: TokenizeInput;
  let tokenStrs: boolean;
  if (chat) {
    const body = parseBody(vllmChatTokenizeSchema, request.body);
    ({ model } = body);
    const images = new ImageIntake(context.images);
    input = { kind: 'chat', prompt: chatPromptOf(body, images) };
    await images.admit(context.inference.findModel(model));
    tokenStrs = body.return_token_strs ?? false;
  } else {
    const body = parseBody(vllmTokenizeSchema, request.body);
    model = modelFor(context, body.model, 'any');
    input = { kind: 'text', text: body.prompt, addSpecial: body.add_special_tokens ?? true };
    tokenStrs = body.return_token_strs ?? false;
  }
  const result = await context.inference.tokenize({ model, input, pieces: tokenStrs }, keepAliveOf(request));
  return renderVllmTokens(result, context.inference.findModel(model)?.contextLength ?? 0, tokenStrs);
}

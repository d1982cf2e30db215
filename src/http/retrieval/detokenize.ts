/**
 * POST /detokenize: vLLM's and llama-server's body is the same, but vLLM's names its model and is
 * answered `{prompt}`, llama-server's names none and is answered `{content}`.
 */
import type { FastifyRequest } from 'fastify';
import { keepAliveOf } from '../shared/keep-alive.js';
import { parseBody } from '../shared/validation.js';
import { modelFor, type RetrievalContext } from './context.js';
import { located } from './errors.js';
import { detokenizeSchema } from './schema.js';

export async function detokenize(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(detokenizeSchema, request.body);
  const model = modelFor(context, body.model, 'any');
  const text = await context.inference.detokenize({ model, tokens: body.tokens }, keepAliveOf(request)).catch((e: unknown) => Promise.reject(located(e, 'tokens', true, false)));
  return body.model !== undefined ? { prompt: text } : { content: text };
}

/** llama-server's /tokenize, with `content` (its /detokenize: ../detokenize.ts). */
import type { FastifyRequest } from 'fastify';
import { keepAliveOf } from '../../shared/keep-alive.js';
import { parseBody } from '../../shared/validation.js';
import { modelFor, type RetrievalContext } from '../context.js';
import { renderLlamaTokens } from './render.js';
import { llamaTokenizeSchema } from './schema.js';

export async function tokenize(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(llamaTokenizeSchema, request.body);
  const model = modelFor(context, body.model, 'any');
  const withPieces = body.with_pieces ?? false;
  const result = await context.inference.tokenize({ model, input: { kind: 'text', text: body.content, addSpecial: body.add_special ?? false }, pieces: withPieces }, keepAliveOf(request));
  return renderLlamaTokens(result, withPieces);
}

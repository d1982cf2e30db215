/** POST /v1/rerank, /v2/rerank, and /rerank with `documents`: the Cohere v2 shape (Jina, vLLM and llama-server send it too). */
import type { FastifyRequest } from 'fastify';
import { parseBody } from '../../shared/validation.js';
import { modelFor, type RetrievalContext } from '../context.js';
import { bestFirst, scored } from '../scored.js';
import { toScoreRequest } from './convert.js';
import { renderRerank } from './render.js';
import { rerankSchema } from './schema.js';

export async function rerank(context: RetrievalContext, request: FastifyRequest) {
  const body = parseBody(rerankSchema, request.body);
  const score = toScoreRequest(body, modelFor(context, body.model, 'ranking'));
  const result = await scored(context, request, score, { query: 'query', documents: 'documents', queriesIndexed: false, documentsIndexed: true, tei: false, verb: 'ranking' });
  const { model, documents } = score;
  return renderRerank({ model, ranked: bestFirst(result.scores), documents, topN: body.top_n ?? undefined, returnDocuments: body.return_documents ?? false, tokens: result.promptTokens });
}

/** Cohere's rerank body -> the core's score request (one query against every document). */
import type { ScoreRequest } from '../../../core/types.js';
import type { RerankBody } from './schema.js';

export function toScoreRequest(body: RerankBody, model: string): ScoreRequest {
  const documents = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
  const maxTokens = body.max_tokens_per_doc ?? undefined;
  return { model, queries: [body.query], documents, ...(maxTokens ? { maxTokens } : {}) };
}

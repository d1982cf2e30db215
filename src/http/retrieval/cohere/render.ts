/** The Cohere v2 / Jina / vLLM / llama-server rerank answer. */
import { randomUUID } from 'node:crypto';
import type { Scored } from '../../../core/types.js';

/** Cohere counts one search unit per query with up to 100 documents. */
export const searchUnits = (documents: number) => Math.max(1, Math.ceil(documents / 100));

export function renderRerank(options: { model: string; ranked: Scored[]; documents: string[]; topN?: number; returnDocuments: boolean; tokens: number }) {
  const { ranked, documents, topN, returnDocuments, tokens } = options;
  return {
    id: randomUUID(),
    model: options.model,
    results: ranked.slice(0, topN ?? ranked.length).map((r) => ({
      index: r.index,
      relevance_score: r.score,
      ...(returnDocuments ? { document: { text: documents[r.index]! } } : {}),
    })),
    meta: { api_version: { version: '2' }, billed_units: { search_units: searchUnits(documents.length) } },
    usage: { total_tokens: tokens },
  };
}

/** The rerank body of Cohere v2, which Jina, vLLM and llama-server also take: `documents` ranked against `query`. */
import { z } from 'zod';
import { MAX_DOCUMENTS, model, text } from '../schema.js';

export const rerankSchema = z
  .object({
    model,
    query: text,
    documents: z
      .array(z.union([z.string(), z.object({ text: z.string() }).loose()]))
      .min(1, 'must contain at least one document')
      .max(MAX_DOCUMENTS, `at most ${MAX_DOCUMENTS} documents per request`),
    top_n: z.number().int('must be an integer').min(1, 'must be at least 1').nullish(),
    return_documents: z.boolean().nullish(),
    max_tokens_per_doc: z.number().int('must be an integer').min(1, 'must be at least 1').nullish(),
  })
  .loose();
export type RerankBody = z.infer<typeof rerankSchema>;

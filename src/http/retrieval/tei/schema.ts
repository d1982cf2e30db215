/**
 * Text Embeddings Inference's bodies: /rerank with `texts`, /embed (and POST /), /tokenize with
 * `inputs`, /decode.
 */
import { z } from 'zod';
import { MAX_DOCUMENTS, MAX_INPUTS, model, text, tokenIds } from '../schema.js';

const direction = z.string().transform((v) => v.toLowerCase()).pipe(z.enum(['left', 'right']));

export const teiRerankSchema = z
  .object({
    model,
    query: text,
    texts: z.array(z.string()).min(1, 'must contain at least one text').max(MAX_DOCUMENTS, `at most ${MAX_DOCUMENTS} texts per request`),
    raw_scores: z.boolean().nullish(),
    return_text: z.boolean().nullish(),
    truncate: z.boolean().nullish(),
    truncation_direction: direction.nullish(),
  })
  .loose();
export type TeiRerankBody = z.infer<typeof teiRerankSchema>;

const teiInputs = z.union([z.string(), z.array(z.string()).min(1, 'must not be empty').max(MAX_INPUTS)]);

export const teiEmbedSchema = z
  .object({
    model,
    inputs: z.union([teiInputs, tokenIds.min(1), z.array(tokenIds.min(1)).min(1).max(MAX_INPUTS)]),
    normalize: z.boolean().nullish(),
    truncate: z.boolean().nullish(),
    truncation_direction: direction.nullish(),
    dimensions: z.number().int('must be an integer').min(1, 'must be at least 1').nullish(),
    prompt_name: z.string().nullish(),
  })
  .loose();
export type TeiEmbedBody = z.infer<typeof teiEmbedSchema>;

export const teiTokenizeSchema = z
  .object({ model, inputs: teiInputs, add_special_tokens: z.boolean().nullish(), prompt_name: z.string().nullish() })
  .loose();
export type TeiTokenizeBody = z.infer<typeof teiTokenizeSchema>;

export const teiDecodeSchema = z
  .object({ model, ids: z.union([tokenIds, z.array(tokenIds).min(1).max(MAX_INPUTS)]), skip_special_tokens: z.boolean().nullish() })
  .loose();
export type TeiDecodeBody = z.infer<typeof teiDecodeSchema>;

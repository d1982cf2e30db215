/**
 * Wire schemas of the retrieval routes. The body decides the shape: `documents` is the Cohere / Jina
 * / vLLM / llama-server rerank, `texts` TEI's; on /tokenize `inputs` is TEI's, `prompt` or
 * `messages` vLLM's, `content` llama-server's. Unknown fields are ignored, as those servers do.
 */
import { z } from 'zod';

/** Documents one rerank request may hold (Cohere's documented limit); the batcher splits them into forward passes. */
export const MAX_DOCUMENTS = 1000;
/** Inputs of one TEI /embed, /tokenize or /decode request (the OpenAI embeddings route's limit). */
export const MAX_INPUTS = 2048;

const text = z.string().min(1, 'must not be empty');
const model = z.string().min(1, 'must not be empty').optional();

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

const tokenIds = z.array(z.number().int('must be an integer').min(0, 'must be at least 0'));
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

export const teiDecodeSchema = z
  .object({ model, ids: z.union([tokenIds, z.array(tokenIds).min(1).max(MAX_INPUTS)]), skip_special_tokens: z.boolean().nullish() })
  .loose();

export const vllmTokenizeSchema = z
  .object({ model, prompt: z.string(), add_special_tokens: z.boolean().nullish(), return_token_strs: z.boolean().nullish() })
  .loose();

/** The conversation is the chat completions body's (checked by that dialect's schema: the same prompt, the same count). */
export const vllmChatTokenizeSchema = z
  .object({
    model: z.string().min(1, 'must not be empty'),
    messages: z.array(z.unknown()).min(1, 'must contain at least one message'),
    tools: z.array(z.unknown()).nullish(),
    tool_choice: z.unknown().optional(),
    add_generation_prompt: z.boolean().nullish(),
    continue_final_message: z.boolean().nullish(),
    add_special_tokens: z.boolean().nullish(),
    return_token_strs: z.boolean().nullish(),
    reasoning_effort: z.unknown().optional(),
  })
  .loose();

export const llamaTokenizeSchema = z
  .object({ model, content: z.string(), add_special: z.boolean().nullish(), with_pieces: z.boolean().nullish(), parse_special: z.boolean().nullish() })
  .loose();

export const detokenizeSchema = z.object({ model, tokens: tokenIds }).loose();

const scoreText = z.union([text, z.array(text).min(1, 'must not be empty').max(MAX_DOCUMENTS, `at most ${MAX_DOCUMENTS} texts per request`)]);

/** vLLM's score API: text_1 against each of text_2, or pairwise when both are lists of one length. */
export const scoreSchema = z.object({ model, text_1: scoreText, text_2: scoreText, truncate_prompt_tokens: z.number().int().min(1).nullish() }).loose();

/**
 * What the retrieval shapes' wire schemas share: the limits, a text, an optional model, token ids.
 * Each shape's own bodies are in its folder (cohere/, tei/, vllm/, llama/). Unknown fields are
 * ignored, as those servers do.
 */
import { z } from 'zod';

/** Documents one rerank request may hold (Cohere's documented limit); the batcher splits them into forward passes. */
export const MAX_DOCUMENTS = 1000;
/** Inputs of one TEI /embed, /tokenize or /decode request (the OpenAI embeddings route's limit). */
export const MAX_INPUTS = 2048;

export const text = z.string().min(1, 'must not be empty');
export const model = z.string().min(1, 'must not be empty').optional();
export const tokenIds = z.array(z.number().int('must be an integer').min(0, 'must be at least 0'));

/** vLLM's and llama-server's /detokenize: the same body, told apart by its model (shape.ts). */
export const detokenizeSchema = z.object({ model, tokens: tokenIds }).loose();

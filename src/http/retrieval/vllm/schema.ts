/** vLLM's bodies: /score (and /v1/score), /tokenize with `prompt` or `messages`; its /detokenize is the shared one (../schema.ts). */
import { z } from 'zod';
import { MAX_DOCUMENTS, model, text } from '../schema.js';

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
export type VllmChatTokenizeBody = z.infer<typeof vllmChatTokenizeSchema>;

const scoreText = z.union([text, z.array(text).min(1, 'must not be empty').max(MAX_DOCUMENTS, `at most ${MAX_DOCUMENTS} texts per request`)]);

/** vLLM's score API: text_1 against each of text_2, or pairwise when both are lists of one length. */
export const scoreSchema = z.object({ model, text_1: scoreText, text_2: scoreText, truncate_prompt_tokens: z.number().int().min(1).nullish() }).loose();
export type ScoreBody = z.infer<typeof scoreSchema>;

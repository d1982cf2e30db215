/**
 * vLLM's bodies -> the core's requests. Its `messages` are the chat completions conversation,
 * converted by that dialect's own converter, so the count is the prompt the chat endpoints would
 * report.
 */
import type { ChatPrompt, ScoreRequest } from '../../../core/types.js';
import { chatSchema } from '../../openai/chat-schema.js';
import { toChatCompletionRequest } from '../../openai/chat-convert.js';
import { invalidRequest } from '../../shared/errors.js';
import { parseBody } from '../../shared/validation.js';
import { ImageIntake } from '../../shared/image-intake.js';
import type { ScoreBody, VllmChatTokenizeBody } from './schema.js';

/** A vLLM `messages` body -> the chat prompt the chat endpoints would render for it. */
export function chatPromptOf(body: VllmChatTokenizeBody, images = new ImageIntake()): ChatPrompt {
  if (body.add_generation_prompt === false) {
    throw invalidRequest('add_generation_prompt: false is not supported; the count is the prompt a chat request renders, which ends with the generation prompt', 'add_generation_prompt');
  }
  const chat = parseBody(chatSchema, {
    model: body.model,
    messages: body.messages,
    ...(body.tools ? { tools: body.tools } : {}),
    ...(body.tool_choice !== undefined ? { tool_choice: body.tool_choice } : {}),
    ...(body.reasoning_effort !== undefined ? { reasoning_effort: body.reasoning_effort } : {}),
  });
  const { model, system, messages, tools, toolChoice, thinking } = toChatCompletionRequest(chat, 1, images);
  return { model, messages, ...(system !== undefined ? { system } : {}), ...(tools ? { tools } : {}), ...(toolChoice ? { toolChoice } : {}), ...(thinking ? { thinking } : {}) };
}

/** The score body: each text_2 against text_1 (one text), or pairwise (as many of each). */
export function toScoreRequest(body: ScoreBody, model: string): ScoreRequest {
  const queries = typeof body.text_1 === 'string' ? [body.text_1] : body.text_1;
  const documents = typeof body.text_2 === 'string' ? [body.text_2] : body.text_2;
  if (queries.length !== 1 && queries.length !== documents.length) {
    throw invalidRequest(`text_1: ${queries.length} texts against ${documents.length} in text_2; send one text_1, or as many as text_2`, 'text_1');
  }
  return { model, queries, documents };
}

/**
 * The tokenize and detokenize bodies of vLLM, llama-server and TEI -> the core's tokenize request,
 * and each one's answer. vLLM's `messages` are the chat completions conversation, converted by that
 * dialect's own converter, so the count is the prompt the chat endpoints would report.
 */
import type { ChatPrompt, TokenizeResult } from '../../core/types.js';
import { chatSchema } from '../openai/chat-schema.js';
import { toChatCompletionRequest } from '../openai/chat-convert.js';
import { invalidRequest } from '../shared/errors.js';
import { parseBody } from '../shared/validation.js';
import type { vllmChatTokenizeSchema } from './schema.js';
import type { z } from 'zod';

/** A vLLM `messages` body -> the chat prompt the chat endpoints would render for it. */
export function chatPromptOf(body: z.infer<typeof vllmChatTokenizeSchema>): ChatPrompt {
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
  const { model, system, messages, tools, toolChoice, thinking } = toChatCompletionRequest(chat, 1);
  return { model, messages, ...(system !== undefined ? { system } : {}), ...(tools ? { tools } : {}), ...(toolChoice ? { toolChoice } : {}), ...(thinking ? { thinking } : {}) };
}

/** vLLM's answer: `{count, max_model_len, tokens, token_strs}`. */
export function renderVllmTokens(result: TokenizeResult, maxModelLen: number, tokenStrs: boolean) {
  return {
    count: result.tokens.length,
    max_model_len: maxModelLen,
    tokens: result.tokens,
    token_strs: tokenStrs ? (result.pieces ?? []).map((p) => p.token) : null,
  };
}

/** llama-server's answer: `{tokens}`, ids or `{id, piece}` with with_pieces. */
export function renderLlamaTokens(result: TokenizeResult, withPieces: boolean) {
  return { tokens: withPieces ? (result.pieces ?? []).map((p) => ({ id: p.id, piece: p.text })) : result.tokens };
}

/** TEI's answer for one input: `[{id, text, special, start, stop}]`. */
export function renderTeiTokens(result: TokenizeResult) {
  return (result.pieces ?? []).map(({ id, text, special, start, stop }) => ({ id, text, special, start, stop }));
}

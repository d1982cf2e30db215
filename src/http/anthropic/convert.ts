/**
 * Anthropic wire body -> internal ChatRequest. Everything the bundled text-only models cannot do is
 * refused here with a 400 that names it; nothing is silently dropped.
 */
import type { ChatMessage, ChatPrompt, ChatRequest } from '../../core/types.js';
import { HttpError, invalidRequest } from '../shared/errors.js';
import type { CountTokensBody, MessagesBody } from './schema.js';

type PromptBody = CountTokensBody | MessagesBody;

const UNSUPPORTED_FEATURES: Array<[keyof PromptBody, string]> = [
  ['tools', 'tool use'],
  ['tool_choice', 'tool use'],
  ['thinking', 'extended thinking'],
  ['mcp_servers', 'MCP servers'],
  ['context_management', 'context management'],
];

export function toChatPrompt(body: PromptBody): ChatPrompt {
  for (const [field, feature] of UNSUPPORTED_FEATURES) {
    const value = body[field];
    if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) continue;
    if (field === 'thinking' && (value as { type?: string }).type === 'disabled') continue;
    throw unsupported(field, feature, body.model);
  }
  if (body.output_config?.format != null) throw unsupported('output_config.format', 'structured output', body.model);
  if (body.messages.length === 0) throw invalidRequest('messages: at least one message is required', 'messages');
  if (body.messages[0]!.role !== 'user') throw invalidRequest('messages: first message must use the "user" role', 'messages.0.role');
  const texts = body.messages.map((message, i) => ({ role: message.role, content: textOf(message.content, `messages.${i}.content`, body.model) }));
  const last = texts.length - 1;
  texts.forEach((message, i) => {
    const isFinalAssistant = i === last && message.role === 'assistant';
    if (message.content.trim() === '' && !isFinalAssistant) {
      throw invalidRequest(`messages.${i}: ${message.role} messages must have non-empty content`, `messages.${i}.content`);
    }
  });
  // An empty final assistant message, which the API allows, means no prefill: it is dropped rather
  // than rendered as a finished empty turn (or merged into the turn before it as "\n\n").
  if (texts[last]!.role === 'assistant' && texts[last]!.content === '') texts.pop();
  // As in the Anthropic API, consecutive turns of one role are combined into a single turn, so
  // templates that require strict alternation accept every valid conversation.
  const messages: ChatMessage[] = [];
  for (const message of texts) {
    const previous = messages.at(-1);
    if (previous?.role === message.role) previous.content = `${previous.content}\n\n${message.content}`;
    else messages.push({ ...message });
  }
  // The prefill is the merged final assistant turn: checked as a whole, whatever it was sent as.
  const prefill = messages.at(-1)!;
  if (prefill.role === 'assistant' && /\s$/.test(prefill.content)) {
    throw invalidRequest('messages: final assistant content cannot end with trailing whitespace', `messages.${last}.content`);
  }
  const system = body.system === undefined ? undefined : textOf(body.system, 'system', body.model);
  return { model: body.model, system, messages };
}

const unsupported = (field: string, feature: string, model: string) =>
  new HttpError('unsupported_feature', `\`${field}\`: the model \`${model}\` does not support ${feature}; remove \`${field}\` from the request.`, field);

export function toChatRequest(body: MessagesBody): ChatRequest {
  return {
    ...toChatPrompt(body),
    maxTokens: body.max_tokens,
    sampling: { temperature: body.temperature, topP: body.top_p, topK: body.top_k },
    stopStrings: body.stop_sequences ?? [],
  };
}

/** Joins text blocks in order; any other block type is refused with its position. */
function textOf(content: string | Array<{ type: string; text?: unknown }>, where: string, model: string): string {
  if (typeof content === 'string') return content;
  return content
    .map((block, j) => {
      if (block.type !== 'text') {
        throw new HttpError(
          'unsupported_feature',
          `${where}.${j}: content blocks of type \`${block.type}\` are not supported by the text-only model \`${model}\`; send text blocks only.`,
          `${where}.${j}.type`,
        );
      }
      if (typeof block.text !== 'string') throw invalidRequest(`${where}.${j}.text: Field required`, `${where}.${j}.text`);
      return block.text;
    })
    .join('');
}

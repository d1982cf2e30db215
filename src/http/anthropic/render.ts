/**
 * Internal results -> Anthropic wire shapes: the message JSON (text, thinking and tool_use blocks),
 * the SSE events of a stream, and the error envelope.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AnswerPart, ChatResult, FinishReason } from '../../core/types.js';
import type { PartEvent } from '../shared/stream.js';
import type { KnownError } from '../shared/errors.js';
import { anthropicErrors } from './errors.js';

/** The core's finish reasons in this dialect's words. */
export const STOP_REASONS: Record<FinishReason, string> = {
  eos: 'end_turn',
  length: 'max_tokens',
  stop_string: 'stop_sequence',
  tool_call: 'tool_use',
  context_full: 'model_context_window_exceeded',
};

export function newMessageId(): string {
  return `msg_${randomBytes(12).toString('hex')}`;
}

/** The prompt's tokens as the core counts them: all of them, and those whose KV came from the prefix cache. */
export interface PromptTokens {
  inputTokens: number;
  cachedInputTokens?: number;
}

/**
 * Usage as Anthropic defines it: input_tokens + cache_creation_input_tokens + cache_read_input_tokens
 * = the prompt's tokens (count_tokens). Read: the tokens reused from the prefix cache. Creation is
 * always 0: the cache is automatic, writing to it costs nothing extra, and every finished turn is
 * kept (budget allowing), so no prompt tokens are billed as a cache write.
 */
export function usage(prompt: PromptTokens, outputTokens: number) {
  const read = prompt.cachedInputTokens ?? 0;
  return { input_tokens: prompt.inputTokens - read, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: read };
}

/** A core call id as this dialect writes it. */
export const toolUseId = (id: string) => (id.startsWith('toolu_') ? id : `toolu_${id}`);

/**
 * A thinking block's signature: an HMAC of its text under a key made when the server starts. It
 * proves nothing beyond this process (the model's thought is not encrypted); clients only need it
 * to be present and to send it back, which they do.
 */
const SIGNING_KEY = randomBytes(32);
export const signThinking = (thinking: string) => createHmac('sha256', SIGNING_KEY).update(thinking).digest('base64');

function block(part: AnswerPart) {
  switch (part.kind) {
    case 'text':
      return { type: 'text' as const, text: part.text };
    case 'thinking':
      return { type: 'thinking' as const, thinking: part.text, signature: signThinking(part.text) };
    case 'tool_call':
      return { type: 'tool_use' as const, id: toolUseId(part.call.id), name: part.call.name, input: part.call.input };
  }
}

export function renderMessage(id: string, model: string, result: ChatResult) {
  return {
    id,
    type: 'message' as const,
    role: 'assistant' as const,
    model,
    content: result.parts.length > 0 ? result.parts.map(block) : [{ type: 'text' as const, text: result.text }],
    stop_reason: STOP_REASONS[result.finish],
    stop_sequence: result.stopString,
    usage: usage(result, result.outputTokens),
  };
}

/** One SSE frame: `event: NAME` and `data: {"type": NAME, ...}`. */
export function sseEvent(name: string, payload: Record<string, unknown>): string {
  return `event: ${name}\ndata: ${JSON.stringify({ type: name, ...payload })}\n\n`;
}

/** The events of a stream, in the documented order. */
export const streamEvents = {
  messageStart: (id: string, model: string, prompt: PromptTokens) =>
    sseEvent('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(prompt, 0) },
    }),
  ping: () => sseEvent('ping', {}),
  messageDelta: (result: ChatResult) =>
    sseEvent('message_delta', { delta: { stop_reason: STOP_REASONS[result.finish], stop_sequence: result.stopString }, usage: usage(result, result.outputTokens) }),
  messageStop: () => sseEvent('message_stop', {}),
  /** The envelope's `error` object, after a 200 has started. */
  error: (error: KnownError, requestId: string) => {
    const { body } = anthropicErrors.render(error, requestId) as { body: { error: object } };
    return sseEvent('error', { error: body.error });
  },
};


/**
 * The content-block events of one stream: each core part event as Anthropic's block events. A
 * thinking block gets its signature (`signature_delta`) just before it stops.
 */
export class BlockEvents {
  private readonly kinds = new Map<number, AnswerPart['kind']>();
  private readonly thoughts = new Map<number, string>();

  frames(event: PartEvent): string {
    // Log probabilities are not part of this dialect (never asked for by its converter).
    if (event.type === 'token_logprobs') return '';
    const index = event.index;
    if (event.type === 'part_start') {
      this.kinds.set(index, event.part.kind);
      const content_block =
        event.part.kind === 'text' ? { type: 'text', text: '' }
        : event.part.kind === 'thinking' ? { type: 'thinking', thinking: '' }
        : { type: 'tool_use', id: toolUseId(event.part.id), name: event.part.name, input: {} };
      return sseEvent('content_block_start', { index, content_block });
    }
    const kind = this.kinds.get(index);
    if (event.type === 'part_delta') {
      if (kind === 'thinking') {
        this.thoughts.set(index, (this.thoughts.get(index) ?? '') + event.text);
        return sseEvent('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: event.text } });
      }
      if (kind === 'tool_call') return sseEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: event.text } });
      return sseEvent('content_block_delta', { index, delta: { type: 'text_delta', text: event.text } });
    }
    const signature = kind === 'thinking' ? sseEvent('content_block_delta', { index, delta: { type: 'signature_delta', signature: signThinking(this.thoughts.get(index) ?? '') } }) : '';
    return signature + sseEvent('content_block_stop', { index });
  }
}

/**
 * Internal results -> Anthropic wire shapes: the message JSON, the SSE events of a stream, and the
 * error envelope.
 */
import { randomBytes } from 'node:crypto';
import type { ChatResult, FinishReason } from '../../core/types.js';
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

export function usage(inputTokens: number, outputTokens: number) {
  return { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

export function renderMessage(id: string, model: string, result: ChatResult) {
  return {
    id,
    type: 'message' as const,
    role: 'assistant' as const,
    model,
    content: [{ type: 'text' as const, text: result.text }],
    stop_reason: STOP_REASONS[result.finish],
    stop_sequence: result.stopString,
    usage: usage(result.inputTokens, result.outputTokens),
  };
}

/** One SSE frame: `event: NAME` and `data: {"type": NAME, ...}`. */
export function sseEvent(name: string, payload: Record<string, unknown>): string {
  return `event: ${name}\ndata: ${JSON.stringify({ type: name, ...payload })}\n\n`;
}

/** The events of a stream, in the documented order. */
export const streamEvents = {
  messageStart: (id: string, model: string, inputTokens: number) =>
    sseEvent('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(inputTokens, 0) },
    }),
  blockStart: () => sseEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ping: () => sseEvent('ping', {}),
  blockDelta: (text: string) => sseEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
  blockStop: () => sseEvent('content_block_stop', { index: 0 }),
  messageDelta: (result: ChatResult) =>
    sseEvent('message_delta', { delta: { stop_reason: STOP_REASONS[result.finish], stop_sequence: result.stopString }, usage: usage(result.inputTokens, result.outputTokens) }),
  messageStop: () => sseEvent('message_stop', {}),
  /** The envelope's `error` object, after a 200 has started. */
  error: (error: KnownError, requestId: string) => {
    const { body } = anthropicErrors.render(error, requestId) as { body: { error: object } };
    return sseEvent('error', { error: body.error });
  },
};

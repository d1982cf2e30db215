/**
 * Internal results -> Anthropic wire shapes: the message JSON, the SSE events of a stream, and the
 * error envelope.
 */
import { randomBytes } from 'node:crypto';
import { ERROR_TABLE, type ServiceError } from '../../errors.js';
import type { ChatResult, StopReason } from '../../inference/types.js';

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
    stop_reason: result.stopReason,
    stop_sequence: result.stopSequence,
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
  messageDelta: (stopReason: StopReason, stopSequence: string | null, inputTokens: number, outputTokens: number) =>
    sseEvent('message_delta', { delta: { stop_reason: stopReason, stop_sequence: stopSequence }, usage: usage(inputTokens, outputTokens) }),
  messageStop: () => sseEvent('message_stop', {}),
  error: (error: ServiceError) => sseEvent('error', { error: { type: ERROR_TABLE[error.kind].anthropicType, message: error.message } }),
};

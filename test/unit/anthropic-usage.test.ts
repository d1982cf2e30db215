/**
 * Anthropic usage from the core's prompt figures (src/http/anthropic/render.ts): tokens read from the
 * prefix cache are cache_read_input_tokens, the rest input_tokens, creation always 0; the three add
 * up to the prompt, in message_start as at the end.
 */
import { describe, expect, it } from 'vitest';
import { renderMessage, streamEvents, usage } from '../../src/http/anthropic/render.js';
import type { ChatResult } from '../../src/core/types.js';

const result: ChatResult = { parts: [{ kind: 'text', text: 'hi' }], text: 'hi', finish: 'eos', stopString: null, inputTokens: 120, cachedInputTokens: 100, outputTokens: 2 };
const data = (frame: string) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as Record<string, any>;

describe('usage with prompt caching', () => {
  it('splits the prompt into read and not read; creation is 0', () => {
    expect(usage(result, 2)).toEqual({ input_tokens: 20, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 100 });
    expect(usage({ inputTokens: 7 }, 0)).toEqual({ input_tokens: 7, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  });

  it('message_start carries the figures of the final usage', () => {
    const start = data(streamEvents.messageStart('msg_1', 'm', { inputTokens: 120, cachedInputTokens: 100 })).message.usage;
    const end = data(streamEvents.messageDelta(result)).usage;
    expect(start).toEqual({ ...end, output_tokens: 0 });
    expect(renderMessage('msg_1', 'm', result).usage).toEqual(end);
  });
});

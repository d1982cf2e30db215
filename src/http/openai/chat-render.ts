/**
 * Internal results -> OpenAI chat wire shapes: the `chat.completion` object and the
 * `chat.completion.chunk` frames of a stream (`data: {...}` lines, `data: [DONE]` at the end, pings as
 * SSE comments, which the SDKs skip).
 */
import { randomBytes } from 'node:crypto';
import type { AnswerPart, ChatResult, FinishReason, TokenLogprob } from '../../core/types.js';
import type { KnownError } from '../shared/errors.js';
import type { PartEvent, StartEvent, StreamFrames } from '../shared/stream.js';
import { openAiErrors } from './errors.js';

/** The core's finish reasons in this dialect's words (a full window is a length cut here). */
export const FINISH_REASONS: Record<FinishReason, 'stop' | 'length' | 'tool_calls'> = {
  eos: 'stop',
  stop_string: 'stop',
  length: 'length',
  context_full: 'length',
  tool_call: 'tool_calls',
};

/** Says which server answered; constant for a build of this server. */
export const SYSTEM_FINGERPRINT = 'fp_local';

export const newCompletionId = () => `chatcmpl-${randomBytes(12).toString('hex')}`;
/** A core call id as this dialect writes it. */
export const callId = (id: string) => (id.startsWith('call_') ? id : `call_${id}`);

export function usage(result: Pick<ChatResult, 'inputTokens' | 'cachedInputTokens' | 'outputTokens' | 'reasoningTokens'>) {
  return {
    prompt_tokens: result.inputTokens,
    completion_tokens: result.outputTokens,
    total_tokens: result.inputTokens + result.outputTokens,
    prompt_tokens_details: { cached_tokens: result.cachedInputTokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: result.reasoningTokens ?? 0 },
  };
}

const toolCall = (part: Extract<AnswerPart, { kind: 'tool_call' }>) => ({
  id: callId(part.call.id),
  type: 'function' as const,
  function: { name: part.call.name, arguments: JSON.stringify(part.call.input) },
});

/** A token's log probability as OpenAI writes it (`bytes`: the UTF-8 of its text); the Responses dialect writes the same. */
export function logprobEntry(entry: TokenLogprob) {
  const wire = (token: string, logprob: number) => ({ token, logprob, bytes: [...Buffer.from(token, 'utf8')] });
  return { ...wire(entry.text, entry.logprob), top_logprobs: entry.top.map((t) => wire(t.text, t.logprob)) };
}

const logprobsOf = (entries: TokenLogprob[] | undefined) => (entries ? { content: entries.map(logprobEntry), refusal: null } : null);

export function renderCompletion(id: string, model: string, result: ChatResult) {
  const calls = result.parts.filter((p): p is Extract<AnswerPart, { kind: 'tool_call' }> => p.kind === 'tool_call');
  const reasoning = result.parts.filter((p) => p.kind === 'thinking').map((p) => (p as { text: string }).text).join('');
  return {
    id,
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant' as const,
          // As OpenAI answers a call without text: null content.
          content: result.text === '' && calls.length > 0 ? null : result.text,
          refusal: null,
          ...(calls.length > 0 ? { tool_calls: calls.map(toolCall) } : {}),
          ...(reasoning !== '' ? { reasoning_content: reasoning } : {}),
        },
        logprobs: logprobsOf(result.logprobs),
        finish_reason: FINISH_REASONS[result.finish],
      },
    ],
    usage: usage(result),
  };
}

const data = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;

/** The frames of one streamed completion. */
export function chunkFrames(id: string, model: string, includeUsage: boolean, requestId: string): StreamFrames {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    data({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: SYSTEM_FINGERPRINT, choices, ...(includeUsage ? { usage: null } : {}), ...extra });
  /** Log probabilities of tokens whose text has not gone out yet: they ride on the next chunk. */
  let pending: TokenLogprob[] = [];
  const take = () => {
    if (pending.length === 0) return null;
    const out = logprobsOf(pending);
    pending = [];
    return out;
  };
  const delta = (d: Record<string, unknown>) => chunk([{ index: 0, delta: d, logprobs: take(), finish_reason: null }]);
  const kinds = new Map<number, AnswerPart['kind']>();
  /** The index of each call among the answer's calls (OpenAI numbers tool_calls from 0). */
  const callIndex = new Map<number, number>();
  return {
    start: (_event: StartEvent) => delta({ role: 'assistant', content: '', refusal: null }),
    part: (event: PartEvent) => {
      if (event.type === 'part_start') {
        kinds.set(event.index, event.part.kind);
        if (event.part.kind !== 'tool_call') return '';
        callIndex.set(event.index, callIndex.size);
        return delta({ tool_calls: [{ index: callIndex.get(event.index), id: callId(event.part.id), type: 'function', function: { name: event.part.name, arguments: '' } }] });
      }
      if (event.type === 'part_stop') return '';
      if (event.type === 'token_logprobs') {
        pending.push(event.entry);
        return '';
      }
      const kind = kinds.get(event.index);
      if (kind === 'thinking') return delta({ reasoning_content: event.text });
      if (kind === 'tool_call') return delta({ tool_calls: [{ index: callIndex.get(event.index), function: { arguments: event.text } }] });
      return delta({ content: event.text });
    },
    end: (result: ChatResult) =>
      chunk([{ index: 0, delta: {}, logprobs: take(), finish_reason: FINISH_REASONS[result.finish] }]) +
      (includeUsage ? data({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: SYSTEM_FINGERPRINT, choices: [], usage: usage(result) }) : '') +
      'data: [DONE]\n\n',
    error: (error: KnownError) => data(openAiErrors.render(error, requestId).body) + 'data: [DONE]\n\n',
    ping: () => ': ping\n\n',
  };
}

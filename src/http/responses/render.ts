/**
 * Internal results -> the Responses dialect's wire shapes: the `response` object (its output items:
 * reasoning, message with output_text, function_call) and the typed events of a stream, each with
 * its increasing `sequence_number`, as the `openai` SDK types them.
 *
 * Item ids are given as the parts start (`ResponseIds`), so a streamed response's final object names
 * the items its events named. The stream's frames: render-stream.ts.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AnswerPart, ChatResult, TokenLogprob } from '../../core/types.js';
import type { KnownError } from '../shared/errors.js';
import { callId, logprobEntry } from '../openai/chat-render.js';
import type { ResponsesBody } from './schema.js';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
export const newResponseId = () => `resp_${hex(24)}`;
export const newItemId = (prefix: 'msg' | 'rs' | 'fc' | 'cmp') => `${prefix}_${hex(24)}`;

export type SealedKind = 'thought' | 'summary';

/**
 * What this server puts in an item's `encrypted_content` (a reasoning item's thought, a compaction
 * item's summary): the text, readable back only by a server with the same key and checked against
 * tampering; encoded, not hidden from the user.
 */
export class ThoughtSeal {
  constructor(private readonly key: Buffer) {}

  static withKey(key: string | undefined): ThoughtSeal {
    return new ThoughtSeal(key ? Buffer.from(key, 'utf8') : randomBytes(32));
  }

  seal(text: string, kind: SealedKind = 'thought'): string {
    const body = Buffer.from(JSON.stringify({ v: 1, kind, text }), 'utf8').toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** The text, or undefined when the content is not one this key sealed as this kind. */
  open(sealed: string, kind: SealedKind = 'thought'): string | undefined {
    const [body, mac] = sealed.split('.');
    if (!body || !mac) return undefined;
    const expected = Buffer.from(this.mac(body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    try {
      const value = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { kind?: unknown; text?: unknown };
      return value.kind === kind && typeof value.text === 'string' ? value.text : undefined;
    } catch {
      return undefined;
    }
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}

/** What the response echoes of its request, and how its items are written. */
export interface ResponseContext {
  id: string;
  createdAt: number;
  body: Omit<ResponsesBody, 'stream'>;
  /** Namespaced tool names as the model sees them -> namespace and own name (convert.ts). */
  namespaced: Map<string, { namespace: string; name: string }>;
  seal: ThoughtSeal;
}

/** Item ids by part index, given as the parts start. */
export class ResponseIds {
  private readonly ids = new Map<number, string>();
  private readonly callIds = new Map<number, string>();
  of(index: number, part: AnswerPart['kind']): string {
    let id = this.ids.get(index);
    if (!id) this.ids.set(index, (id = newItemId(part === 'text' ? 'msg' : part === 'thinking' ? 'rs' : 'fc')));
    return id;
  }
  callOf(index: number, coreId: string): string {
    let id = this.callIds.get(index);
    if (!id) this.callIds.set(index, (id = callId(coreId)));
    return id;
  }
}

export function usageOf(result: Pick<ChatResult, 'inputTokens' | 'cachedInputTokens' | 'outputTokens' | 'reasoningTokens'>) {
  return {
    input_tokens: result.inputTokens,
    input_tokens_details: { cached_tokens: result.cachedInputTokens ?? 0 },
    output_tokens: result.outputTokens,
    output_tokens_details: { reasoning_tokens: result.reasoningTokens ?? 0 },
    total_tokens: result.inputTokens + result.outputTokens,
  };
}

export const outputText = (text: string, logprobs: TokenLogprob[] | undefined) => ({ type: 'output_text' as const, text, annotations: [], logprobs: (logprobs ?? []).map(logprobEntry) });

/** A call as its function_call item: a namespaced tool's call names its namespace. */
export function callNames(context: ResponseContext, name: string): { name: string; namespace?: string } {
  return context.namespaced.get(name) ?? { name };
}

export function reasoningItem(context: ResponseContext, id: string, text: string, status: 'in_progress' | 'completed') {
  const summarized = context.body.reasoning?.summary != null;
  const sealed = context.body.include?.includes('reasoning.encrypted_content');
  return {
    id, type: 'reasoning' as const,
    summary: summarized && text !== '' ? [{ type: 'summary_text' as const, text }] : [],
    content: [{ type: 'reasoning_text' as const, text }],
    ...(sealed ? { encrypted_content: context.seal.seal(text) } : {}),
    status,
  };
}

/** The items of an answer, in the order of its parts. */
export function outputItems(context: ResponseContext, result: ChatResult, ids: ResponseIds) {
  const incomplete = result.finish === 'length' || result.finish === 'context_full';
  let logprobsUsed = false;
  return result.parts.map((part, index) => {
    const id = ids.of(index, part.kind);
    if (part.kind === 'thinking') return reasoningItem(context, id, part.text, 'completed');
    if (part.kind === 'tool_call') {
      return { id, type: 'function_call' as const, call_id: ids.callOf(index, part.call.id), ...callNames(context, part.call.name), arguments: JSON.stringify(part.call.input), status: 'completed' as const };
    }
    // Log probabilities belong to the answer's text (one text part in practice).
    const logprobs = logprobsUsed ? undefined : result.logprobs;
    logprobsUsed = true;
    return { id, type: 'message' as const, role: 'assistant' as const, status: incomplete ? ('incomplete' as const) : ('completed' as const), content: [outputText(part.text, context.body.include?.includes('message.output_text.logprobs') ? logprobs : undefined)] };
  });
}

/** The response object around its output: the request's settings echoed, the status and usage. */
export function responseObject(context: ResponseContext, state: { status: 'in_progress' | 'completed' | 'incomplete' | 'failed'; output: unknown[]; result?: ChatResult; error?: KnownError }) {
  const { body } = context;
  const incomplete = state.status === 'incomplete';
  return {
    id: context.id,
    object: 'response' as const,
    created_at: context.createdAt,
    status: state.status,
    background: false,
    error: state.error ? { code: state.error.code === 'overloaded' ? 'rate_limit_exceeded' : 'server_error', message: state.error.message } : null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' as const } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    model: body.model,
    output: state.output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: 'default' as const,
    store: body.store ?? true,
    temperature: body.temperature ?? null,
    text: { format: body.text?.format ?? { type: 'text' as const }, verbosity: body.text?.verbosity ?? 'medium' },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? null,
    truncation: body.truncation ?? 'disabled',
    usage: state.result ? usageOf(state.result) : null,
    user: body.user ?? null,
  };
}

export const statusOf = (result: ChatResult) => (result.finish === 'length' || result.finish === 'context_full' ? ('incomplete' as const) : ('completed' as const));

export function renderResponse(context: ResponseContext, result: ChatResult, ids = new ResponseIds()) {
  return responseObject(context, { status: statusOf(result), output: outputItems(context, result, ids), result });
}

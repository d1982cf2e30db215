/**
 * `truncation: "auto"`: the oldest turns are dropped, as OpenAI drops them, until the prompt fits
 * the model's window (the system prompt and the last turn are kept; what is left starts at a user
 * turn); the number dropped is said in the `x-truncated-messages` header. `disabled`: a prompt that
 * does not fit is the context error.
 *
 * Each count is a round trip to the model's tokenizer worker, so the places the prompt may start
 * are searched by bisection: a prompt that fits is one count, else 1 + log2(turns) counts (dropping
 * a turn never makes the prompt longer), not one count per dropped turn.
 */
import type { FastifyReply } from 'fastify';
import { isCoreError } from '../../core/errors.js';
import type { ChatRequest, InferenceService } from '../../core/types.js';

type Messages = ChatRequest['messages'];

/**
 * Where the kept messages may start, in order: the whole conversation, then each later user turn
 * (chat templates expect one first; a turn's tool results go with the turn that called them), and
 * last the final message alone.
 */
export function startsOf(messages: Messages): number[] {
  const starts = [0];
  for (let at = 1; at < messages.length; at++) if (messages[at]!.role === 'user' || at === messages.length - 1) starts.push(at);
  return starts;
}

export async function truncated(inference: InferenceService, request: ChatRequest, auto: boolean, reply: FastifyReply): Promise<ChatRequest> {
  const window = inference.findModel(request.model)?.contextLength;
  if (!auto || window === undefined) return request;
  // The service refuses to count a prompt past the window (prompt_too_long): that is "does not fit" too.
  const fits = async (start: number) => {
    try {
      return (await inference.countTokens({ ...request, messages: request.messages.slice(start) })) < window;
    } catch (error) {
      if (isCoreError(error) && error.code === 'prompt_too_long') return false;
      throw error;
    }
  };
  const starts = startsOf(request.messages);
  if (starts.length === 1 || (await fits(0))) return request;
  // The first later start that fits; the last (the final message alone) when none before it does.
  let low = 1;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (await fits(starts[middle]!)) high = middle;
    else low = middle + 1;
  }
  const dropped = starts[low]!;
  reply.header('x-truncated-messages', String(dropped));
  return { ...request, messages: request.messages.slice(dropped) };
}

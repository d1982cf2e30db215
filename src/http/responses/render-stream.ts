/**
 * The typed events of one streamed response, each with its increasing `sequence_number`, as the
 * `openai` SDK types them: an item added as each part starts, its deltas, its done events as it
 * stops, and the final object (the same item ids: render.ts `ResponseIds`).
 */
import type { AnswerPart, ChatEvent, ChatResult, TokenLogprob } from '../../core/types.js';
import { logprobEntry } from '../openai/chat-render.js';
import type { KnownError } from '../shared/errors.js';
import type { PartEvent, StartEvent, StreamFrames } from '../shared/stream.js';
import { responsesErrors as openAiErrors } from './errors.js';
import { callNames, outputText, reasoningItem, renderResponse, responseObject, ResponseIds, type ResponseContext } from './render.js';

type PartStart = Extract<PartEvent, { type: 'part_start' }>;
type PartDelta = Extract<PartEvent, { type: 'part_delta' }>;

/** One stream's state: the sequence, and each part's kind, text, name and output index. */
class ResponseStream {
  readonly ids = new ResponseIds();
  /** Log probabilities of the tokens of the next text delta. */
  pending: TokenLogprob[] = [];
  private sequence = 0;
  private readonly kinds = new Map<number, AnswerPart['kind']>();
  private readonly texts = new Map<number, string>();
  private readonly names = new Map<number, string>();
  private outputIndex = -1;
  private readonly indexOf = new Map<number, number>();
  /**
   * A message's end is held until the next item starts or the response ends: only then is it known
   * whether it ended `completed` or `incomplete` (cut at the output limit), as its item says.
   */
  private heldText: number | undefined;
  private readonly wantLogprobs: boolean;
  private readonly summarized: boolean;

  constructor(private readonly context: ResponseContext) {
    this.wantLogprobs = context.body.include?.includes('message.output_text.logprobs') === true;
    this.summarized = context.body.reasoning?.summary != null;
  }

  event(type: string, payload: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.sequence++, ...payload })}\n\n`;
  }

  partStart({ index, part }: PartStart): string {
    this.kinds.set(index, part.kind);
    this.texts.set(index, '');
    this.indexOf.set(index, ++this.outputIndex);
    const id = this.ids.of(index, part.kind);
    const at = { output_index: this.outputIndex };
    if (part.kind === 'text') {
      return this.event('response.output_item.added', { ...at, item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } })
        + this.event('response.content_part.added', { ...at, item_id: id, content_index: 0, part: outputText('', []) });
    }
    if (part.kind === 'thinking') {
      return this.event('response.output_item.added', { ...at, item: { id, type: 'reasoning', summary: [], status: 'in_progress' } })
        + (this.summarized ? this.event('response.reasoning_summary_part.added', { ...at, item_id: id, summary_index: 0, part: { type: 'summary_text', text: '' } }) : '');
    }
    this.names.set(index, part.name);
    return this.event('response.output_item.added', { ...at, item: { id, type: 'function_call', call_id: this.ids.callOf(index, part.id), ...callNames(this.context, part.name), arguments: '', status: 'in_progress' } });
  }

  partDelta({ index, text }: PartDelta): string {
    this.texts.set(index, (this.texts.get(index) ?? '') + text);
    const id = this.ids.of(index, this.kinds.get(index)!);
    const at = { item_id: id, output_index: this.indexOf.get(index) };
    switch (this.kinds.get(index)) {
      case 'text': {
        const logprobs = this.wantLogprobs ? this.pending.map(logprobEntry) : [];
        this.pending = [];
        return this.event('response.output_text.delta', { ...at, content_index: 0, delta: text, logprobs });
      }
      case 'thinking':
        return this.summarized
          ? this.event('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta: text })
          : this.event('response.reasoning_text.delta', { ...at, content_index: 0, delta: text });
      default:
        return this.event('response.function_call_arguments.delta', { ...at, delta: text });
    }
  }

  /** The held message's done events, with the status now known; nothing when none is held. */
  textDone(status: 'completed' | 'incomplete'): string {
    if (this.heldText === undefined) return '';
    const index = this.heldText;
    this.heldText = undefined;
    const id = this.ids.of(index, 'text');
    const text = this.texts.get(index) ?? '';
    const at = { item_id: id, output_index: this.indexOf.get(index) };
    const part = outputText(text, []);
    return this.event('response.output_text.done', { ...at, content_index: 0, text, logprobs: [] })
      + this.event('response.content_part.done', { ...at, content_index: 0, part })
      + this.event('response.output_item.done', { output_index: at.output_index, item: { id, type: 'message', role: 'assistant', status, content: [part] } });
  }

  partStop(index: number): string {
    const kind = this.kinds.get(index)!;
    const id = this.ids.of(index, kind);
    const text = this.texts.get(index) ?? '';
    const at = { item_id: id, output_index: this.indexOf.get(index) };
    if (kind === 'text') {
      this.heldText = index;
      return '';
    }
    if (kind === 'thinking') {
      return (this.summarized
        ? this.event('response.reasoning_summary_text.done', { ...at, summary_index: 0, text }) + this.event('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { type: 'summary_text', text } })
        : this.event('response.reasoning_text.done', { ...at, content_index: 0, text }))
        + this.event('response.output_item.done', { output_index: at.output_index, item: reasoningItem(this.context, id, text, 'completed') });
    }
    const callId = this.ids.callOf(index, '');
    return this.event('response.function_call_arguments.done', { ...at, arguments: text })
      + this.event('response.output_item.done', { output_index: at.output_index, item: { id, type: 'function_call', call_id: callId, ...callNames(this.context, this.names.get(index) ?? ''), arguments: text, status: 'completed' } });
  }
}

/** The frames of one streamed response; `onDone` receives the final object (to store it). */
export function responseFrames(context: ResponseContext, requestId: string, onDone: (response: ReturnType<typeof renderResponse>) => void): StreamFrames {
  const stream = new ResponseStream(context);
  return {
    start: (_event: StartEvent) => {
      const created = responseObject(context, { status: 'in_progress', output: [] });
      return stream.event('response.created', { response: created }) + stream.event('response.in_progress', { response: created });
    },
    part: (e: PartEvent) => {
      if (e.type === 'part_start') return stream.textDone('completed') + stream.partStart(e);
      if (e.type === 'part_delta') return stream.partDelta(e);
      if (e.type === 'part_stop') return stream.partStop(e.index);
      stream.pending.push((e as Extract<ChatEvent, { type: 'token_logprobs' }>).entry);
      return '';
    },
    end: (result: ChatResult) => {
      const response = renderResponse(context, result, stream.ids);
      onDone(response);
      return stream.textDone(response.status === 'incomplete' ? 'incomplete' : 'completed')
        + stream.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
    },
    error: (error: KnownError) => {
      const body = openAiErrors.render(error, requestId).body as { error: { message: string; code: string; param: string | null } };
      return stream.textDone('incomplete') + stream.event('error', { code: body.error.code, message: body.error.message, param: body.error.param })
        + stream.event('response.failed', { response: responseObject(context, { status: 'failed', output: [], error }) });
    },
    ping: () => ': ping\n\n',
  };
}

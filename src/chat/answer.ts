/**
 * Turns a generation's text, as it streams, into the parts of an answer: thinking (the model's
 * `<think>…</think>`), text, and tool calls (recognised by the tool-call parser of the model's
 * format). Emits each part's start, growth and end as ChatEvents, in order, never overlapping, and
 * keeps the parts for the result. Runs in a worker thread, one per generation.
 *
 * Thinking: when the answer starts with the opening tag (the server forces it as the first token
 * when thinking is on), everything up to the closing tag is the thinking part; the whitespace the
 * model puts after the closing tag is dropped. Tool calls: the parser holds back text that may open a call, and hands back complete calls; a call that does not
 * parse comes back as text (never an error). A call's input streams as a few JSON fragments.
 */
import { randomBytes } from 'node:crypto';
import type { AnswerPart, ChatEvent, ToolCall } from '../core/types.js';
import { callJsonFragments } from './tools/parser.js';
import type { ToolEvent } from './tools/types.js';

export const THINK_OPEN = '<think>';
export const THINK_CLOSE = '</think>';

export interface CallParser {
  push(text: string): ToolEvent[];
  finish(): ToolEvent[];
}

export interface AnswerOptions {
  send: (event: ChatEvent) => void;
  /** Look for a thought at the start of the answer at all (thinking on for this request). */
  thinking: boolean;
  /** The model's tool-call parser, when the request has tools. */
  tools?: CallParser;
}

type Phase = 'thinking' | 'maybe-thinking' | 'answer';

/** A call's id, neutral: each dialect writes it with its own prefix. */
export const newToolCallId = () => randomBytes(12).toString('hex');

export class AnswerBuilder {
  readonly parts: AnswerPart[] = [];
  private phase: Phase;
  /** Text not yet placed: a possible opening tag at the start, a possible closing tag at the end. */
  private pending = '';
  /** The part events currently go to (index into parts), or -1. */
  private open = -1;
  private outputTokens = 0;
  /** Whitespace right after the thought is dropped. */
  private afterThought = false;

  constructor(private readonly options: AnswerOptions) {
    this.phase = options.thinking ? 'maybe-thinking' : 'answer';
  }

  /** The generation is inside a thought now (for the thinking budget). */
  get thinking(): boolean {
    return this.phase === 'thinking';
  }

  push(text: string, outputTokens: number): void {
    this.outputTokens = outputTokens;
    this.pending += text;
    this.drain(false);
  }

  finish(outputTokens: number): void {
    this.outputTokens = outputTokens;
    this.drain(true);
    if (this.options.tools) this.place(this.options.tools.finish());
    this.close();
    // An answer with nothing in it is one empty text part, as Anthropic's API answers.
    if (this.parts.length === 0) {
      this.start({ kind: 'text', text: '' });
      this.close();
    }
  }

  private drain(final: boolean): void {
    for (;;) {
      if (this.phase === 'maybe-thinking') {
        const head = this.pending.trimStart();
        if (head.startsWith(THINK_OPEN)) {
          this.pending = head.slice(THINK_OPEN.length);
          this.phase = 'thinking';
          continue;
        }
        if (!final && THINK_OPEN.startsWith(head)) return;
        this.phase = 'answer';
        continue;
      }
      if (this.phase === 'thinking') {
        const end = this.pending.indexOf(THINK_CLOSE);
        if (end !== -1) {
          this.think(this.pending.slice(0, end));
          this.close();
          this.pending = this.pending.slice(end + THINK_CLOSE.length);
          this.phase = 'answer';
          this.afterThought = true;
          continue;
        }
        // Hold back what may be the start of the closing tag.
        const keep = final ? 0 : partialSuffix(this.pending, THINK_CLOSE);
        this.think(this.pending.slice(0, this.pending.length - keep));
        this.pending = this.pending.slice(this.pending.length - keep);
        return;
      }
      let text = this.pending;
      this.pending = '';
      if (this.afterThought) {
        text = text.trimStart();
        if (text === '' && !final) return;
        this.afterThought = false;
      }
      if (this.options.tools) this.place(this.options.tools.push(text));
      else this.text(text);
      return;
    }
  }

  private place(events: ToolEvent[]): void {
    for (const event of events) {
      if (event.type === 'text') this.text(event.text);
      else if (event.type === 'invalid_call') this.text(event.raw);
      else this.call({ id: newToolCallId(), name: event.name, input: event.input });
    }
  }

  private think(text: string): void {
    if (text === '') return;
    if (this.kindOpen() !== 'thinking') this.start({ kind: 'thinking', text: '' });
    this.grow(text);
  }

  private text(text: string): void {
    if (text === '') return;
    if (this.kindOpen() !== 'text') this.start({ kind: 'text', text: '' });
    this.grow(text);
  }

  private call(call: ToolCall): void {
    this.start({ kind: 'tool_call', call });
    for (const fragment of callJsonFragments(call.input)) this.options.send({ type: 'part_delta', index: this.open, text: fragment, outputTokens: this.outputTokens });
    this.close();
  }

  private kindOpen(): AnswerPart['kind'] | undefined {
    return this.open === -1 ? undefined : this.parts[this.open]!.kind;
  }

  private start(part: AnswerPart): void {
    this.close();
    this.parts.push(part);
    this.open = this.parts.length - 1;
    const wire = part.kind === 'tool_call' ? { kind: 'tool_call' as const, id: part.call.id, name: part.call.name } : { kind: part.kind };
    this.options.send({ type: 'part_start', index: this.open, part: wire });
  }

  private grow(text: string): void {
    const part = this.parts[this.open]!;
    if (part.kind !== 'tool_call') part.text += text;
    this.options.send({ type: 'part_delta', index: this.open, text, outputTokens: this.outputTokens });
  }

  private close(): void {
    if (this.open === -1) return;
    this.options.send({ type: 'part_stop', index: this.open });
    this.open = -1;
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialSuffix(text: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--) if (text.endsWith(tag.slice(0, k))) return k;
  return 0;
}

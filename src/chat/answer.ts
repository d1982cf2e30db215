/**
 * Turns a generation's text, as it streams, into the parts of an answer: thinking (the model's
 * `<think>…</think>`), text, and tool calls (recognised by the tool-call parser of the model's
 * format). Emits each part's start, growth and end as ChatEvents, in order, never overlapping, and
 * keeps the parts for the result. Runs in a worker thread, one per generation.
 *
 * Thinking, in the family's tags (`<think>…</think>`, Mistral's `[THINK]…[/THINK]`): when the answer
 * starts with the opening tag (the server forces it as the first token when thinking is on), or the
 * prompt already opened the thought (templates that end their generation prompt with `<think>`:
 * Qwen3.5, GLM-4.7, DeepSeek R1 / V3.1, MiniMax M2), everything up to the closing tag is the thinking
 * part; the whitespace the model puts after the closing tag is dropped. Harmony's parser reads its
 * own thoughts (the analysis channel) and hands them over as thinking events. The family's marker
 * strings are never shown as text. Tool calls: the parser holds back text that may open a call, and hands back complete calls; a call that does not
 * parse comes back as text (never an error). A call's input streams as a few JSON fragments.
 */
import { randomBytes } from 'node:crypto';
import type { AnswerPart, ChatEvent, ToolCall } from '../core/types.js';
import { callJsonFragments } from './tools/parser.js';
import type { ToolEvent } from './tools/types.js';

/** The family's thought tags. */
export interface ThoughtTags {
  open: string;
  close: string;
  /** What the template's generation prompt already wrote inside a thought it opened (Apriel 1.6's
   * `Here are my reasoning steps:`): the thought begins with it, as llama.cpp reads it. */
  lead?: string;
}

export interface CallParser {
  push(text: string): ToolEvent[];
  finish(): ToolEvent[];
}

export interface AnswerOptions {
  send: (event: ChatEvent) => void;
  /** The family's thought tags: a thought at the start of the answer is looked for. */
  reasoning?: ThoughtTags;
  /** The prompt ends inside a thought the template opened: the answer starts in it. */
  startsInThought?: boolean;
  /** The model's output parser: its tool calls when the request has tools (harmony: always, for
   * its channels). */
  tools?: CallParser;
  /** The family's marker strings: never shown as text (a stray one the parser did not consume). */
  markers?: readonly string[];
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
  /** Text that may be the start of a marker split across deltas: shown (or dropped) with the next. */
  private heldText = '';

  constructor(private readonly options: AnswerOptions) {
    this.phase = options.reasoning === undefined ? 'answer' : options.startsInThought ? 'thinking' : 'maybe-thinking';
    // A thought the prompt opened (or that starts the answer unmarked) holds the prompt's lead first.
    const lead = options.reasoning?.lead;
    if (lead && (options.startsInThought || options.reasoning!.open === '')) this.pending = `${lead}\n`;
  }

  /** The generation is inside a thought now (for the thinking budget). */
  get thinking(): boolean {
    return this.phase === 'thinking' || (this.phase === 'answer' && this.kindOpen() === 'thinking');
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
    this.releaseText();
    this.close();
    // An answer with nothing in it is one empty text part, as Anthropic's API answers.
    if (this.parts.length === 0) {
      this.start({ kind: 'text', text: '' });
      this.close();
    }
  }

  private drain(final: boolean): void {
    for (;;) {
      // The phases before 'answer' exist only with tags.
      const tags = this.options.reasoning;
      if (tags && this.phase === 'maybe-thinking') {
        const head = this.pending.trimStart();
        if (head.startsWith(tags.open)) {
          this.pending = head.slice(tags.open.length);
          this.phase = 'thinking';
          continue;
        }
        if (!final && tags.open.startsWith(head)) return;
        this.phase = 'answer';
        continue;
      }
      if (tags && this.phase === 'thinking') {
        const end = this.pending.indexOf(tags.close);
        if (end !== -1) {
          this.think(this.pending.slice(0, end).trimEnd());
          this.close();
          this.pending = this.pending.slice(end + tags.close.length);
          this.phase = 'answer';
          this.afterThought = true;
          continue;
        }
        // Hold back what may be the start of the closing tag, and trailing whitespace (dropped if
        // the thought closes after it).
        const keep = final ? 0 : partialSuffix(this.pending, tags.close);
        const body = this.pending.slice(0, this.pending.length - keep);
        const shown = body.trimEnd();
        this.think(shown);
        this.pending = final ? '' : this.pending.slice(shown.length);
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
      else if (event.type === 'thinking') this.think(event.text);
      else if (event.type === 'invalid_call') this.text(event.raw);
      else this.call({ id: newToolCallId(), name: event.name, input: event.input });
    }
  }

  /** The held text, shown: nothing follows that could complete a marker. */
  private releaseText(): void {
    const held = this.heldText;
    this.heldText = '';
    this.showText(this.unmarked(held));
  }

  private think(raw: string): void {
    if (this.heldText !== '') this.releaseText();
    // A thought's leading whitespace is dropped (`<think>\n`): a thought of whitespace is none.
    const text = this.kindOpen() === 'thinking' ? raw : raw.trimStart();
    if (text === '') return;
    if (this.kindOpen() !== 'thinking') this.start({ kind: 'thinking', text: '' });
    this.grow(text);
  }

  private text(raw: string): void {
    // A marker can reach this split over deltas (where it is no single token, or the text is fed in
    // pieces): the end that may start one waits for the next delta.
    let text = this.unmarked(this.heldText + raw);
    const keep = Math.max(0, ...(this.options.markers ?? []).map((marker) => partialSuffix(text, marker)));
    this.heldText = text.slice(text.length - keep);
    text = text.slice(0, text.length - keep);
    this.showText(text);
  }

  private showText(text: string): void {
    if (text === '') return;
    if (this.kindOpen() !== 'text') this.start({ kind: 'text', text: '' });
    this.grow(text);
  }

  /** The text without the family's markers. */
  private unmarked(text: string): string {
    let out = text;
    for (const marker of this.options.markers ?? []) if (out.includes(marker)) out = out.split(marker).join('');
    return out;
  }

  private call(call: ToolCall): void {
    this.releaseText();
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

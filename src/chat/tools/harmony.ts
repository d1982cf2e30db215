/**
 * gpt-oss's harmony format, read as it streams: the answer is a run of messages, each a header
 * (`<|channel|>NAME`, maybe ` to=RECIPIENT` and ` <|constrain|>json`), `<|message|>`, a body, and an
 * end (`<|end|>`, `<|call|>` after a call, `<|return|>` after the final answer), the next one opened
 * by `<|start|>assistant`. The `analysis` channel is the thought; a message to `functions.NAME` is a
 * call with JSON arguments; `final` (and a `commentary` preamble with no recipient) is the answer's
 * text. (openai/harmony's docs; llama.cpp common/chat.cpp common_chat_params_init_gpt_oss.)
 *
 * Same contract as the other parsers (./parser.ts): one per generation, fed deltas in order, never
 * throws; a marker, or the start of one, never reaches a text or thinking event.
 */
import { checkedCall, type Tools } from './scan.js';
import { StreamingParser } from './streaming-parser.js';
import type { ToolEvent } from './types.js';

const MESSAGE = '<|message|>';
const CHANNEL = '<|channel|>';
const START = '<|start|>';
const CONSTRAIN = '<|constrain|>';
const ENDS = ['<|end|>', '<|call|>', '<|return|>', START];
/** A header longer than this is no header: what the model wrote is shown as text. */
const MAX_HEADER = 512;

type Body = { kind: 'thinking' } | { kind: 'text' } | { kind: 'call'; recipient: string; chunks: string[] };

export class HarmonyParser extends StreamingParser {
  private header = '';
  private body: Body | null = null;
  /** Body text held back: it may be the start of an end marker. */
  private hold = '';

  constructor(private readonly tools: Tools) {
    super();
  }

  protected feed(text: string, final: boolean): void {
    let s = text;
    for (;;) {
      if (this.body === null) {
        this.header += s;
        s = '';
        const at = this.header.indexOf(MESSAGE);
        if (at !== -1) {
          s = this.header.slice(at + MESSAGE.length);
          this.body = this.open(this.header.slice(0, at));
          this.header = '';
          continue;
        }
        if (this.header.length > MAX_HEADER || final) {
          // Not harmony after all (or cut off in a header): the text, without markers, is the answer.
          s = this.header;
          this.header = '';
          this.body = { kind: 'text' };
          if (s === '' && final) return;
          continue;
        }
        return;
      }
      const w = this.hold + s;
      this.hold = '';
      let end = -1;
      let marker = '';
      for (const m of ENDS) {
        const at = w.indexOf(m);
        if (at !== -1 && (end === -1 || at < end)) {
          end = at;
          marker = m;
        }
      }
      if (end !== -1) {
        this.grow(w.slice(0, end));
        this.close();
        // `<|start|>` opens the next message: its header follows (role, channel, recipient).
        s = w.slice(end + marker.length);
        continue;
      }
      const keep = final ? 0 : partialMarker(w);
      this.grow(w.slice(0, w.length - keep));
      this.hold = w.slice(w.length - keep);
      if (final) this.close();
      return;
    }
  }

  /** What a message's header says its body is. */
  private open(header: string): Body {
    const recipient = /to=([^\s<]+)/.exec(header)?.[1];
    if (recipient !== undefined) return { kind: 'call', recipient, chunks: [] };
    const channel = /<\|channel\|>\s*([A-Za-z]+)/.exec(header)?.[1];
    return channel === 'analysis' ? { kind: 'thinking' } : { kind: 'text' };
  }

  private grow(text: string): void {
    const body = this.body!;
    if (text === '') return;
    if (body.kind === 'call') body.chunks.push(text);
    else this.emit(body.kind, stripMarkers(text));
  }

  private close(): void {
    const body = this.body;
    this.body = null;
    if (body?.kind !== 'call') return;
    const json = body.chunks.join('');
    const name = body.recipient.replace(/^functions\./, '');
    let input: unknown;
    try {
      input = JSON.parse(json);
    } catch {
      input = undefined;
    }
    const call = !body.recipient.startsWith('functions.') ? { reason: `recipient ${body.recipient} is no function` } : input === undefined ? { reason: 'malformed JSON arguments' } : checkedCall(this.tools, name, input);
    if ('reason' in call) this.out.push({ type: 'invalid_call', raw: json, reason: call.reason });
    else this.out.push({ type: 'call', name: call.name, input: call.input });
  }

  private emit(type: 'text' | 'thinking', text: string): void {
    if (text === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === type) last.text += text;
    else this.out.push({ type, text });
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of an end marker. */
function partialMarker(text: string): number {
  for (let k = Math.min(text.length, 11); k > 0; k--) {
    const tail = text.slice(text.length - k);
    if (ENDS.some((m) => m.length > k && m.startsWith(tail))) return k;
  }
  return 0;
}

/** A stray header marker inside a body is no text. */
function stripMarkers(text: string): string {
  return text.includes('<|') ? text.split(CHANNEL).join('').split(CONSTRAIN).join('').split(MESSAGE).join('') : text;
}

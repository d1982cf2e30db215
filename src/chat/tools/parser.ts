/**
 * An incremental tool-call parser: one per generation, fed the decoded text deltas in order (any
 * split, down to one character), yielding free text, complete calls and calls that did not parse.
 *
 * Contract (the caller is the worker's generation loop, one parser per sequence, same thread):
 * - `push(delta)` returns the events that delta completes; `finish()` flushes at the end of the
 *   generation. Nothing is thrown for any text; push after finish is a programming error.
 * - Text is released as soon as it cannot be the start of a call: only a possible partial opener
 *   at the end is held back (as a stop-string hold-back), plus a trailing run of whitespace, which
 *   is dropped if a call follows it. Whitespace right after a valid call is dropped too, so calls
 *   never leave whitespace-only text between them (a whitespace-only text block is something the
 *   Messages API itself rejects in a conversation's history).
 * - Once an opener is seen the call is buffered until it closes (`</tool_call>`; the end of the
 *   JSON object for llama3-json; `</function>` for a Qwen3-Coder call that skipped `<tool_call>`),
 *   then validated against `tools`. A call that ends at finish() without its closing tag is
 *   accepted if what it holds is complete (as vLLM's `<tool_call>(.*)$` fallback does); otherwise
 *   it is `invalid_call`.
 * - The text events and the `raw` of invalid calls, concatenated, are exactly the input minus the
 *   markup of valid calls and the whitespace around them.
 * - Linear time in the length of the text: each character is scanned a bounded number of times
 *   (partial-match waits re-read at most one tag's length) and each call is parsed once.
 *
 * Shaped by vLLM's tool parsers (hermes_tool_parser, qwen3coder_tool_parser, llama_tool_parser) and
 * llama.cpp's common/chat.cpp; see the comments at each format for what was taken from where.
 */
import type { AutoCalls } from '../../models/template-features.js';
import { autoReader } from './auto-calls.js';
import { deepseekReader, gemma4Reader, glmReader, invokeReader, kimiK2Reader, lfm2Reader } from './family-calls.js';
import { HarmonyParser } from './harmony.js';
import { JsonCallScanner } from './json-call.js';
import { MISTRAL_CALLS, MistralCallScanner } from './mistral-call.js';
import { SectionScanner, type SectionReader } from './section-call.js';
import { CallScanner, FUNCTION_OPEN, isWs, matchAt, PYTHON_TAG, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, type Scan, type Tools } from './scan.js';
import type { ToolCallParser, ToolEvent, ToolFormat, ToolSpec } from './types.js';
import { StreamingParser } from './streaming-parser.js';
import { XmlCallScanner } from './xml-call.js';

export type { ToolCallParser } from './types.js';

/** `auto`: the analysed template's call form, for the `auto` format. */
export function createToolCallParser(format: ToolFormat, tools: readonly ToolSpec[], auto?: AutoCalls): ToolCallParser {
  const known = new Map(tools.map((t) => [t.name, t]));
  return format === 'harmony' ? new HarmonyParser(known) : new Parser(format, known, auto);
}

/**
 * Splits a call's input into a few pieces of its JSON text, for a renderer that streams a call's
 * input as partial JSON: their concatenation is exactly `JSON.stringify(input)`. Pieces
 * have near-equal length and never split a UTF-16 surrogate pair (a client that decodes each piece
 * on its own would mangle the character).
 */
export function callJsonFragments(input: Record<string, unknown>, maxPieces = 4): string[] {
  const json = JSON.stringify(input);
  const pieces = Math.max(1, Math.min(Math.floor(maxPieces), json.length));
  const size = Math.ceil(json.length / pieces);
  const out: string[] = [];
  let at = 0;
  while (at < json.length) {
    let end = Math.min(json.length, at + size);
    const last = json.charCodeAt(end - 1);
    if (end < json.length && last >= 0xd800 && last <= 0xdbff) end++;
    out.push(json.slice(at, end));
    at = end;
  }
  return out;
}


/** The formats whose calls sit in a marked section: its markers and the reader of its body. */
const SECTIONS: Record<'kimi-k2' | 'glm' | 'deepseek-r1' | 'deepseek-v3.1' | 'deepseek-dsml' | 'minimax-m2' | 'lfm2' | 'gemma4', [string, string, (tools: Tools) => SectionReader]> = {
  'kimi-k2': ['<|tool_calls_section_begin|>', '<|tool_calls_section_end|>', kimiK2Reader],
  glm: [TOOL_CALL_OPEN, TOOL_CALL_CLOSE, glmReader],
  'deepseek-r1': ['<｜tool▁calls▁begin｜>', '<｜tool▁calls▁end｜>', deepseekReader],
  'deepseek-v3.1': ['<｜tool▁calls▁begin｜>', '<｜tool▁calls▁end｜>', deepseekReader],
  'deepseek-dsml': ['<｜DSML｜function_calls>', '</｜DSML｜function_calls>', (tools) => invokeReader(tools, '｜DSML｜')],
  'minimax-m2': ['<minimax:tool_call>', '</minimax:tool_call>', (tools) => invokeReader(tools, '')],
  lfm2: ['<|tool_call_start|>', '<|tool_call_end|>', lfm2Reader],
  gemma4: ['<|tool_call>', '<tool_call|>', gemma4Reader],
};

/** An opener as text mode looks for it; `start` builds the scanner for the call it opens. */
interface Opener {
  text: string;
  start: () => CallScanner;
}

interface OpenCall {
  chunks: string[];
  /** Whitespace held before the opener: part of `raw` if the call turns out invalid. */
  lead: string;
  scanner: CallScanner;
  /** The parser's afterCall when the call opened (restored if it was plain text after all). */
  afterCall: boolean;
}

class Parser extends StreamingParser {
  private readonly openers: Opener[];
  /** llama3-json: a bare `{` opens a call at the start of the reply or right after a call. */
  private readonly bareJson: boolean;
  /** The first characters of the format's openers. */
  private readonly openerLeads: string[];
  // Text mode.
  /** Unexamined text: a possible partial opener (never longer than the longest opener). */
  private tail = '';
  /** Whitespace after the last released text, held: shown before more text, dropped before a call. */
  private ws = '';
  /** Only whitespace (llama3-json: and `;`) since the last valid call: it is dropped. */
  private afterCall = false;
  /** Nothing but whitespace since the start or the last valid call (for the bare `{` opener). */
  private atCallStart = true;

  // Call mode.
  private call: OpenCall | null = null;

  constructor(
    private readonly format: ToolFormat,
    private readonly tools: Tools,
    auto?: AutoCalls,
  ) {
    super();
    switch (format) {
      case 'auto': {
        // The analysed form's section (its opener may be any text: Command R+'s `Action:`).
        if (!auto) throw new Error('the auto format needs the analysed call form');
        const open = auto.open;
        this.openers = [{ text: open, start: () => new SectionScanner(open.length, auto.close, autoReader(auto, tools)) }];
        break;
      }
      case 'hermes':
      case 'generic':
        this.openers = [{ text: TOOL_CALL_OPEN, start: () => new JsonCallScanner(tools, { openerLength: TOOL_CALL_OPEN.length, closer: TOOL_CALL_CLOSE, bareObject: false }) }];
        break;
      case 'qwen3-xml':
        // llama.cpp (common/parsers/qwen3-coder.cpp): Qwen3-Coder sometimes omits `<tool_call>` and
        // starts with `<function=NAME>`; it only accepts that for the names of the request's tools,
        // since `<function` alone occurs in ordinary code (`#include <functional>`).
        this.openers = [
          { text: TOOL_CALL_OPEN, start: () => new XmlCallScanner(tools, { openerLength: TOOL_CALL_OPEN.length, bare: false }) },
          ...[...tools.keys()].map((name) => {
            const text = `${FUNCTION_OPEN}${name}>`;
            return { text, start: () => new XmlCallScanner(tools, { openerLength: text.length, bare: true }) };
          }),
        ];
        break;
      case 'llama3-json':
        this.openers = [{ text: PYTHON_TAG, start: () => new JsonCallScanner(tools, { openerLength: PYTHON_TAG.length, closer: null, bareObject: false }) }];
        break;
      case 'mistral':
        this.openers = [{ text: MISTRAL_CALLS, start: () => new MistralCallScanner(tools, MISTRAL_CALLS.length) }];
        break;
      case 'harmony':
        // Harmony's channels are read by ./harmony.ts, which hands this parser nothing.
        this.openers = [];
        break;
      default: {
        const [open, close, reader] = SECTIONS[format];
        this.openers = [{ text: open, start: () => new SectionScanner(open.length, close, reader(tools)) }];
      }
    }
    this.bareJson = format === 'llama3-json';
    this.openerLeads = [...new Set(this.openers.map((o) => o.text[0]!))];
  }

  /** The first position from `from` where an opener may start, or -1. */
  private nextLead(s: string, from: number): number {
    let first = -1;
    for (const lead of this.openerLeads) {
      const at = s.indexOf(lead, from);
      if (at !== -1 && (first === -1 || at < first)) first = at;
    }
    return first;
  }

  private emitText(text: string): void {
    if (text === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === 'text') last.text += text;
    else this.out.push({ type: 'text', text });
  }

  protected feed(input: string, final: boolean): void {
    let text = input;
    for (;;) {
      if (this.call !== null) {
        const call = this.call;
        if (text !== '') call.chunks.push(text);
        const scan = call.scanner.scan(text, final);
        if (scan.kind === 'more') return;
        this.call = null;
        const all = call.chunks.join('');
        this.closeCall(call, all.slice(0, all.length - scan.rest.length), scan);
        text = scan.rest;
        continue;
      }
      const opened = this.scanText(text, final);
      if (opened === null) return;
      text = opened;
    }
  }

  /**
   * Text mode over tail + text. When an opener is found, opens the call and returns the text after
   * the opener (for the call's scanner); otherwise null.
   */
  private scanText(text: string, final: boolean): string | null {
    const s = this.tail + text;
    this.tail = '';
    let i = 0;
    if (this.afterCall) {
      while (i < s.length && (isWs(s[i]) || (this.format === 'llama3-json' && s[i] === ';'))) i++;
    }

    let openAt = -1;
    let opener: Opener | null = null;
    if (this.bareJson && this.atCallStart) {
      let k = i;
      while (k < s.length && isWs(s[k])) k++;
      if (s[k] === '{') {
        openAt = k;
        opener = { text: '{', start: () => new JsonCallScanner(this.tools, { openerLength: 1, closer: null, bareObject: true }) };
      }
    }
    // Look only where an opener's first character is ('<' for most, '[' for Mistral's).
    let partialAt = -1;
    for (let p = this.nextLead(s, i); p !== -1 && (openAt === -1 || p < openAt); p = this.nextLead(s, p + 1)) {
      let partial = false;
      for (const o of this.openers) {
        const m = matchAt(s, p, o.text);
        if (m === 'full') {
          openAt = p;
          opener = o;
          break;
        }
        if (m === 'partial') partial = true;
      }
      if (openAt === p) break;
      if (partial) {
        // A partial match runs to the end of s: nothing after it can match fully.
        partialAt = p;
        break;
      }
    }

    if (opener !== null) {
      this.release(s.slice(i, openAt));
      this.call = { chunks: [opener.text], lead: this.ws, scanner: opener.start(), afterCall: this.afterCall };
      this.ws = '';
      this.afterCall = false;
      this.atCallStart = false;
      return s.slice(openAt + opener.text.length);
    }
    const holdFrom = partialAt !== -1 && !final ? partialAt : s.length;
    this.release(s.slice(i, holdFrom));
    this.tail = s.slice(holdFrom);
    if (final) {
      if (!this.afterCall) this.emitText(this.ws);
      this.ws = '';
    }
    return null;
  }

  /** Releases text that is no call, holding its trailing whitespace. */
  private release(x: string): void {
    let end = x.length;
    while (end > 0 && isWs(x[end - 1])) end--;
    if (end === 0) {
      if (!this.afterCall) this.ws += x;
      return;
    }
    // After a call, scanText has already skipped the whitespace x would start with.
    this.emitText(this.ws + x.slice(0, end));
    this.ws = x.slice(end);
    this.afterCall = false;
    this.atCallStart = false;
  }

  private closeCall(call: OpenCall, markup: string, scan: Exclude<Scan, { kind: 'more' }>): void {
    if (scan.kind === 'reject' && scan.asText) {
      this.ws = call.lead;
      this.afterCall = call.afterCall;
      this.release(markup);
      this.atCallStart = false;
      return;
    }
    const result = scan.kind === 'reject' ? { reason: scan.reason } : call.scanner.interpret(markup);
    if (Array.isArray(result)) {
      for (const c of result) this.out.push({ type: 'call', name: c.name, input: c.input });
      this.afterCall = true;
      this.atCallStart = true;
    } else {
      this.out.push({ type: 'invalid_call', raw: call.lead + markup, reason: result.reason });
      this.afterCall = false;
      this.atCallStart = false;
    }
  }
}


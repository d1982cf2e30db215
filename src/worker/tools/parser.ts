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
import type { JsonSchema, ToolEvent, ToolFormat, ToolSpec } from './types.js';

export interface ToolCallParser {
  /** Feeds one decoded delta; returns the events it completes (often none). */
  push(text: string): ToolEvent[];
  /** The generation ended: flushes held text and any open call. */
  finish(): ToolEvent[];
}

export function createToolCallParser(format: ToolFormat, tools: readonly ToolSpec[]): ToolCallParser {
  return new Parser(format, new Map(tools.map((t) => [t.name, t])));
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

const TOOL_CALL_OPEN = '<tool_call>';
const TOOL_CALL_CLOSE = '</tool_call>';
const PYTHON_TAG = '<|python_tag|>';
const FUNCTION_OPEN = '<function=';
const FUNCTION_CLOSE = '</function>';
const PARAMETER_OPEN = '<parameter=';
const PARAMETER_CLOSE = '</parameter>';

type Tools = ReadonlyMap<string, ToolSpec>;
interface ParsedCall {
  name: string;
  input: Record<string, unknown>;
}

/** JSON's whitespace: the only whitespace the formats put between their tags. */
function isWs(c: string | undefined): boolean {
  return c === ' ' || c === '\n' || c === '\r' || c === '\t';
}

/** Whether `token` starts at s[i]: fully, or partly because s ends first. */
function matchAt(s: string, i: number, token: string): 'full' | 'partial' | 'no' {
  const n = Math.min(token.length, s.length - i);
  for (let k = 0; k < n; k++) if (s.charCodeAt(i + k) !== token.charCodeAt(k)) return 'no';
  return n === token.length ? 'full' : 'partial';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a call scanner says after reading more of a call. `rest` is the text given to it that lies
 * after the call (or after what turned out to open no call); it goes back to text mode.
 */
type Scan =
  | { kind: 'more' }
  | { kind: 'end'; rest: string }
  /** The opener opened no call after all. `asText`: it is plain text (a bare `{` that starts a
   * JSON answer, not a call); otherwise it is markup that failed (invalid_call). */
  | { kind: 'reject'; rest: string; asText: boolean; reason: string };

/**
 * Reads one call's text after its opener, chunk by chunk. Only a bounded carry (a tag that may be
 * completed by the next chunk) is ever read twice: the call's text is never concatenated while it
 * streams, since V8 flattens a growing string on each read (quadratic for a long call fed token by
 * token — a file's content in a Write call).
 */
abstract class CallScanner {
  /** Offset in the call's markup of the first character of the next window. */
  protected base: number;
  private carry = '';

  constructor(openerLength: number) {
    this.base = openerLength;
  }

  scan(text: string, final: boolean): Scan {
    const w = this.carry + text;
    this.carry = '';
    const result = this.step(w, final);
    if (typeof result === 'number') {
      // Wait: w[result…] may be the start of a tag; read it again with the next chunk.
      if (final) throw new Error('a scanner waited at the end of the text');
      this.carry = w.slice(result);
      this.base += result;
      return { kind: 'more' };
    }
    if (result === null) {
      this.base += w.length;
      return { kind: 'more' };
    }
    const at = result.at;
    return result.kind === 'end' ? { kind: 'end', rest: w.slice(at) } : { kind: 'reject', rest: w.slice(at), asText: result.asText, reason: result.reason };
  }

  /**
   * Scans the window w. Returns null when all of w belongs to the call and more is needed, a
   * number i to wait with w[i…] unread (never when final), or where in w the call ends. With
   * final, it must end.
   */
  protected abstract step(w: string, final: boolean): null | number | { kind: 'end'; at: number } | { kind: 'reject'; at: number; asText: boolean; reason: string };

  /** Interprets the call's whole markup (opener included) after an 'end'. */
  abstract interpret(markup: string): ParsedCall[] | { reason: string };
}

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

class Parser implements ToolCallParser {
  private readonly openers: Opener[];
  /** llama3-json: a bare `{` opens a call at the start of the reply or right after a call. */
  private readonly bareJson: boolean;
  private out: ToolEvent[] = [];

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
  private finished = false;

  constructor(
    private readonly format: ToolFormat,
    private readonly tools: Tools,
  ) {
    switch (format) {
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
    }
    this.bareJson = format === 'llama3-json';
  }

  push(text: string): ToolEvent[] {
    if (this.finished) throw new Error('ToolCallParser.push after finish');
    this.feed(text, false);
    return this.flush();
  }

  finish(): ToolEvent[] {
    if (this.finished) return [];
    this.feed('', true);
    this.finished = true;
    return this.flush();
  }

  private flush(): ToolEvent[] {
    const out = this.out;
    this.out = [];
    return out;
  }

  private emitText(text: string): void {
    if (text === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === 'text') last.text += text;
    else this.out.push({ type: 'text', text });
  }

  private feed(input: string, final: boolean): void {
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
    // Every literal opener starts with '<': look only there.
    let partialAt = -1;
    for (let p = s.indexOf('<', i); p !== -1 && (openAt === -1 || p < openAt); p = s.indexOf('<', p + 1)) {
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

/** A call object's shape check: a string name among the tools and an object of arguments. */
function checkJsonCall(value: unknown, tools: Tools): ParsedCall | { reason: string } {
  if (!isObject(value)) return { reason: 'the call is not a JSON object' };
  const { name } = value;
  if (typeof name !== 'string') return { reason: 'the call has no string "name"' };
  // Hermes/Qwen write "arguments", Llama 3.x "parameters" (vLLM's llama3_json accepts both).
  // Missing: a call without arguments (small models write {"name": "now"} for a tool without
  // parameters). A JSON-encoded string of an object: some models double-encode (llama.cpp's
  // parser accepts arguments as a string too).
  let input: unknown = 'arguments' in value ? value.arguments : 'parameters' in value ? value.parameters : {};
  if (typeof input === 'string') {
    try {
      input = JSON.parse(input);
    } catch {
      return { reason: '"arguments" is a string that is not JSON' };
    }
  }
  if (!isObject(input)) return { reason: '"arguments" is not a JSON object' };
  if (!tools.has(name)) return { reason: `unknown tool ${JSON.stringify(name)}` };
  return { name, input };
}

/**
 * Calls written as JSON objects: hermes and generic (`<tool_call>` JSON `</tool_call>`), and
 * llama3-json (a bare object, or one after `<|python_tag|>`, ending with the object).
 *
 * The scan is JSON-aware: it tracks strings and nesting, so a `</tool_call>` inside a string
 * argument (a model writing about tool calls) does not end the call, while one outside any string
 * ends even a broken object (`<` cannot occur outside a string in JSON, so this cannot cut a valid
 * call short). vLLM cuts at the first `</tool_call>` with a regex; llama.cpp parses the JSON and
 * then expects the closing tag, as here. Several objects in one block, or an array of them, are
 * several calls.
 */
class JsonCallScanner extends CallScanner {
  private phase: 'pre' | 'json' | 'post' | 'skip' = 'pre';
  private depth = 0;
  private inString = false;
  private escaped = false;
  private objectStart = 0;
  /** [from, to) of each complete JSON value (an object, or an array of call objects), in markup offsets. */
  private readonly objects: Array<[number, number]> = [];
  /** Set when the markup cannot be a call: why. */
  private broken: string | null = null;
  /** llama3-json's bare `{`: the first key must be "name" or "type" (llama.cpp's function regex),
   * or this is a JSON answer, not a call, and goes back to text at once. */
  private keyState: 'off' | 'before' | 'in' | 'done' = 'off';
  private key = '';
  private readonly closer: string | null;

  constructor(
    private readonly tools: Tools,
    opts: { openerLength: number; closer: string | null; bareObject: boolean },
  ) {
    super(opts.openerLength);
    this.closer = opts.closer;
    if (opts.bareObject) {
      // The opener is the object's own `{`.
      this.phase = 'json';
      this.depth = 1;
      this.objectStart = 0;
      this.keyState = 'before';
    }
  }

  protected step(w: string, final: boolean) {
    const closer = this.closer;
    let i = 0;
    while (i < w.length) {
      const c = w[i]!;
      if (this.phase === 'pre' || this.phase === 'post') {
        if (isWs(c)) {
          i++;
          continue;
        }
        if (c === '{' || c === '[') {
          this.phase = 'json';
          this.depth = 1;
          this.objectStart = this.base + i++;
          continue;
        }
        const m = closer === null ? 'no' : matchAt(w, i, closer);
        if (m === 'full') {
          if (this.objects.length === 0) this.broken = 'no JSON object in the call';
          return { kind: 'end' as const, at: i + closer!.length };
        }
        if (m === 'partial') {
          if (!final) return i;
          // The text ended in the closing tag: a complete call without it still counts.
          if (this.phase === 'post') return { kind: 'end' as const, at: w.length };
        }
        if (this.phase === 'pre') return { kind: 'reject' as const, at: i, asText: false, reason: 'the call does not start with JSON' };
        this.broken = 'text after the JSON object';
        this.phase = 'skip';
        continue;
      }
      if (this.phase === 'skip') {
        const at = w.indexOf(closer!, i);
        if (at !== -1) return { kind: 'end' as const, at: at + closer!.length };
        if (!final) return Math.max(i, w.length - closer!.length + 1);
        i = w.length;
        break;
      }
      // phase 'json'
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') {
          this.inString = false;
          if (this.keyState === 'in') {
            if (this.key !== 'name' && this.key !== 'type') return this.notACall(i + 1);
            this.keyState = 'done';
          }
        } else if (this.keyState === 'in') {
          this.key += c;
          if (!'name'.startsWith(this.key) && !'type'.startsWith(this.key)) return this.notACall(i + 1);
        }
        i++;
        continue;
      }
      if (this.keyState === 'before' && !isWs(c)) {
        if (c !== '"') return this.notACall(i);
        this.keyState = 'in';
      }
      if (c === '"') this.inString = true;
      else if (c === '{' || c === '[') this.depth++;
      else if (c === '}' || c === ']') {
        if (--this.depth === 0) {
          this.objects.push([this.objectStart, this.base + i + 1]);
          if (closer === null) return { kind: 'end' as const, at: i + 1 };
          this.phase = 'post';
        }
      } else if (c === '<' && closer !== null) {
        const m = matchAt(w, i, closer);
        if (m === 'full') {
          this.broken = 'the JSON object is not closed';
          return { kind: 'end' as const, at: i + closer.length };
        }
        if (m === 'partial' && !final) return i;
      }
      i++;
    }
    if (!final) return null;
    // The generation ended inside the call. Complete objects without the closing tag still count.
    if (this.phase !== 'post') this.broken ??= 'the call is not finished';
    return { kind: 'end' as const, at: w.length };
  }

  private notACall(at: number) {
    return { kind: 'reject' as const, at, asText: true, reason: 'not a call' };
  }

  interpret(markup: string): ParsedCall[] | { reason: string } {
    if (this.broken !== null) return { reason: this.broken };
    const calls: ParsedCall[] = [];
    for (const [from, to] of this.objects) {
      let value: unknown;
      try {
        value = JSON.parse(markup.slice(from, to));
      } catch (err) {
        return { reason: `malformed JSON: ${(err as Error).message}` };
      }
      // A list of calls in one block (some models write one): each element is a call.
      const list = Array.isArray(value) ? value : [value];
      if (list.length === 0) return { reason: 'an empty list of calls' };
      for (const item of list) {
        const call = checkJsonCall(item, this.tools);
        if ('reason' in call) return call;
        calls.push(call);
      }
    }
    return calls;
  }
}

/**
 * Qwen3-Coder / Qwen3.5 calls:
 *   <tool_call>\n<function=NAME>\n<parameter=P>\nvalue\n</parameter>\n…</function>\n</tool_call>
 * The scan only tracks where parameter values are, so that `</tool_call>` (or, for a call that
 * skipped `<tool_call>`, `</function>`) inside a value — code that mentions the tags — does not end
 * the call; a value ends at the first `</parameter>`. The markup is then parsed once.
 */
class XmlCallScanner extends CallScanner {
  private phase: 'pre' | 'body' | 'pname' | 'value' | 'after-function';
  /** Markup offsets of the body: from after `<tool_call>` (or 0 for a bare `<function=`) to
   * before `</tool_call>` (or after `</function>`). */
  private readonly bodyStart: number;
  private bodyEnd = -1;
  private readonly bare: boolean;

  constructor(
    private readonly tools: Tools,
    opts: { openerLength: number; bare: boolean },
  ) {
    super(opts.openerLength);
    this.bare = opts.bare;
    // The bare opener `<function=NAME>` is itself the start of the body.
    this.phase = opts.bare ? 'body' : 'pre';
    this.bodyStart = opts.bare ? 0 : opts.openerLength;
  }

  protected step(w: string, final: boolean) {
    let i = 0;
    while (i < w.length) {
      switch (this.phase) {
        case 'pre': {
          if (isWs(w[i])) {
            i++;
            continue;
          }
          const m = matchAt(w, i, FUNCTION_OPEN);
          if (m === 'full') {
            this.phase = 'body';
            i += FUNCTION_OPEN.length;
            continue;
          }
          if (m === 'partial' && !final) return i;
          return { kind: 'reject' as const, at: i, asText: false, reason: 'the call does not start with <function=' };
        }
        case 'body': {
          const lt = w.indexOf('<', i);
          if (lt === -1) {
            i = w.length;
            continue;
          }
          i = lt;
          const close = this.bare ? FUNCTION_CLOSE : TOOL_CALL_CLOSE;
          const mp = matchAt(w, i, PARAMETER_OPEN);
          const mc = matchAt(w, i, close);
          if (mp === 'full') {
            this.phase = 'pname';
            i += PARAMETER_OPEN.length;
          } else if (mc === 'full') {
            if (!this.bare) {
              this.bodyEnd = this.base + i;
              return { kind: 'end' as const, at: i + close.length };
            }
            i += close.length;
            this.bodyEnd = this.base + i;
            this.phase = 'after-function';
          } else if ((mp === 'partial' || mc === 'partial') && !final) {
            return i;
          } else {
            i++;
          }
          continue;
        }
        case 'pname': {
          const gt = w.indexOf('>', i);
          if (gt === -1) {
            i = w.length;
            continue;
          }
          this.phase = 'value';
          i = gt + 1;
          continue;
        }
        case 'value': {
          const at = w.indexOf(PARAMETER_CLOSE, i);
          if (at === -1) {
            if (!final) return Math.max(i, w.length - PARAMETER_CLOSE.length + 1);
            i = w.length;
            continue;
          }
          this.phase = 'body';
          i = at + PARAMETER_CLOSE.length;
          continue;
        }
        case 'after-function': {
          // A call that skipped `<tool_call>` may still close it: take that tag with the call.
          if (isWs(w[i])) {
            i++;
            continue;
          }
          const m = matchAt(w, i, TOOL_CALL_CLOSE);
          if (m === 'full') return { kind: 'end' as const, at: i + TOOL_CALL_CLOSE.length };
          if (m === 'partial' && !final) return i;
          // Anything else follows the call: hand back all after `</function>` (the whitespace in
          // between is dropped as whitespace after a call).
          return { kind: 'end' as const, at: Math.max(0, this.bodyEnd - this.base) };
        }
      }
    }
    if (!final) return null;
    if (this.phase === 'after-function') return { kind: 'end' as const, at: w.length };
    this.bodyEnd = this.base + w.length;
    return { kind: 'end' as const, at: w.length };
  }

  interpret(markup: string): ParsedCall[] | { reason: string } {
    const functions = parseXmlFunctions(markup.slice(this.bodyStart, this.bodyEnd));
    if ('reason' in functions) return functions;
    const calls: ParsedCall[] = [];
    for (const f of functions) {
      const tool = this.tools.get(f.name);
      if (tool === undefined) return { reason: `unknown tool ${JSON.stringify(f.name)}` };
      const properties = isObject(tool.inputSchema?.properties) ? tool.inputSchema.properties : {};
      const input: Record<string, unknown> = {};
      for (const [name, value] of f.params) {
        const schema = properties[name];
        // An unknown parameter keeps its text (vLLM does the same).
        input[name] = isObject(schema) ? typeXmlValue(value, schema) : value;
      }
      calls.push({ name: f.name, input });
    }
    return calls;
  }
}

/**
 * The functions of a Qwen3-Coder call body. Between tags only whitespace is allowed. A missing
 * `</function>` at the end of the body is accepted (vLLM's `<function=(.*)$`); a parameter without
 * `</parameter>` is not (what would end its value is a guess).
 */
function parseXmlFunctions(body: string): Array<{ name: string; params: Array<[string, string]> }> | { reason: string } {
  const functions: Array<{ name: string; params: Array<[string, string]> }> = [];
  let i = 0;
  const skipWs = () => {
    while (i < body.length && isWs(body[i])) i++;
  };
  for (;;) {
    skipWs();
    if (i >= body.length) break;
    if (!body.startsWith(FUNCTION_OPEN, i)) return { reason: 'expected <function=NAME>' };
    const gt = body.indexOf('>', i + FUNCTION_OPEN.length);
    if (gt === -1) return { reason: 'unterminated <function=' };
    const name = body.slice(i + FUNCTION_OPEN.length, gt).trim();
    i = gt + 1;
    const params: Array<[string, string]> = [];
    for (;;) {
      skipWs();
      if (body.startsWith(PARAMETER_OPEN, i)) {
        const pgt = body.indexOf('>', i + PARAMETER_OPEN.length);
        if (pgt === -1) return { reason: 'unterminated <parameter=' };
        const pname = body.slice(i + PARAMETER_OPEN.length, pgt).trim();
        const end = body.indexOf(PARAMETER_CLOSE, pgt + 1);
        if (end === -1) return { reason: `parameter ${JSON.stringify(pname)} is not closed` };
        params.push([pname, trimOneNewline(body.slice(pgt + 1, end))]);
        i = end + PARAMETER_CLOSE.length;
      } else if (body.startsWith(FUNCTION_CLOSE, i)) {
        i += FUNCTION_CLOSE.length;
        break;
      } else if (i >= body.length) {
        break;
      } else {
        return { reason: 'unexpected text inside <function>' };
      }
    }
    functions.push({ name, params });
  }
  if (functions.length === 0) return { reason: 'no <function=NAME> in the call' };
  return functions;
}

/** The template writes `<parameter=P>\nVALUE\n</parameter>`: one newline each side is markup
 * (vLLM strips exactly one; llama.cpp's grammar puts them in the tags). */
function trimOneNewline(value: string): string {
  let from = 0;
  let to = value.length;
  if (value.startsWith('\r\n')) from = 2;
  else if (value.startsWith('\n')) from = 1;
  if (to - from >= 2 && value.endsWith('\r\n')) to -= 2;
  else if (to - from >= 1 && value.endsWith('\n')) to -= 1;
  return value.slice(from, to);
}

/** The JSON types a schema admits; empty when it says nothing about types. */
function schemaTypes(schema: JsonSchema, depth = 0): Set<string> {
  const types = new Set<string>();
  if (depth > 8) return types;
  const { type } = schema;
  if (typeof type === 'string') types.add(type);
  else if (Array.isArray(type)) for (const t of type) if (typeof t === 'string') types.add(t);
  const values = Array.isArray(schema.enum) ? schema.enum : 'const' in schema ? [schema.const] : [];
  for (const v of values) types.add(v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = schema[key];
    if (Array.isArray(list)) for (const sub of list) if (isObject(sub)) for (const t of schemaTypes(sub, depth + 1)) types.add(t);
  }
  if (types.size === 0 && isObject(schema.properties)) types.add('object');
  if (types.size === 0 && schema.items !== undefined) types.add('array');
  return types;
}

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * A Qwen3-Coder parameter value (text) typed by its JSON Schema, as vLLM's qwen3coder parser does:
 * a string schema keeps the text as it is; otherwise null, numbers (integers only where only
 * integer is allowed), booleans (`true`/`false`, any case) and JSON objects/arrays are parsed when
 * the schema admits them. Text that fits none of the admitted types stays a string (vLLM
 * "degenerates to string"); with no type information at all it stays a string too.
 */
function typeXmlValue(value: string, schema: JsonSchema): unknown {
  const types = schemaTypes(schema);
  if (types.size === 0 || (types.size === 1 && types.has('string'))) return value;
  const text = value.trim();
  if (text.toLowerCase() === 'null' && (types.has('null') || !types.has('string'))) return null;
  if ((types.has('number') || types.has('integer')) && JSON_NUMBER.test(text)) {
    const n = Number(text);
    if (types.has('number') || Number.isInteger(n)) return n;
  }
  if (types.has('boolean')) {
    const lower = text.toLowerCase();
    if (lower === 'true' || lower === 'false') return lower === 'true';
  }
  if (types.has('object') || types.has('array')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if ((types.has('object') && isObject(parsed)) || (types.has('array') && Array.isArray(parsed))) return parsed;
    } catch {
      // not JSON: falls through
    }
  }
  return value;
}

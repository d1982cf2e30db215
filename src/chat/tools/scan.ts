/**
 * What the tool-call scanners share (parser.ts drives them): the formats' tags, the shape of a parsed
 * call, and the base of a scanner that reads one call's text as it streams.
 */
import type { ToolSpec } from './types.js';

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';
export const PYTHON_TAG = '<|python_tag|>';
export const FUNCTION_OPEN = '<function=';
export const FUNCTION_CLOSE = '</function>';
export const PARAMETER_OPEN = '<parameter=';
export const PARAMETER_CLOSE = '</parameter>';

export type Tools = ReadonlyMap<string, ToolSpec>;
export interface ParsedCall {
  name: string;
  input: Record<string, unknown>;
}

/** JSON's whitespace: the only whitespace the formats put between their tags. */
export function isWs(c: string | undefined): boolean {
  return c === ' ' || c === '\n' || c === '\r' || c === '\t';
}

/** Whether `token` starts at s[i]: fully, or partly because s ends first. */
export function matchAt(s: string, i: number, token: string): 'full' | 'partial' | 'no' {
  const n = Math.min(token.length, s.length - i);
  for (let k = 0; k < n; k++) if (s.charCodeAt(i + k) !== token.charCodeAt(k)) return 'no';
  return n === token.length ? 'full' : 'partial';
}

/** The end (exclusive) of the JSON object or array starting at `start`, strings skipped; -1 if none. */
export function jsonEnd(text: string, start: number): number {
  let depth = 0;
  let quoted = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a call scanner says after reading more of a call. `rest` is the text given to it that lies
 * after the call (or after what turned out to open no call); it goes back to text mode.
 */
export type Scan =
  | { kind: 'more' }
  | { kind: 'end'; rest: string }
  /** The opener opened no call after all. `asText`: it is plain text (a bare `{` that starts a
   * JSON answer, not a call); otherwise it is markup that failed (invalid_call). */
  | { kind: 'reject'; rest: string; asText: boolean; reason: string };

/** A call once its name and input are read: the tool must be one of the request's, the input an
 * object (a JSON string of one is accepted: some models double-encode). */
export function checkedCall(tools: Tools, name: string, input: unknown): ParsedCall | { reason: string } {
  if (!tools.has(name)) return { reason: `unknown tool ${JSON.stringify(name)}` };
  if (typeof input === 'string') {
    try {
      input = JSON.parse(input);
    } catch {
      return { reason: `the arguments of ${name} are not JSON` };
    }
  }
  if (!isObject(input)) return { reason: `the arguments of ${name} are not a JSON object` };
  return { name, input };
}

/**
 * Reads one call's text after its opener, chunk by chunk. Only a bounded carry (a tag that may be
 * completed by the next chunk) is ever read twice: the call's text is never concatenated while it
 * streams, since V8 flattens a growing string on each read (quadratic for a long call fed token by
 * token — a file's content in a Write call).
 */
/**
 * What a scan of the window says: null, read on (nothing decided, more text needed); a number, hold
 * back the text from there; the call's end; or not a call after all.
 */
export type StepResult = null | number | { kind: 'end'; at: number } | { kind: 'reject'; at: number; asText: boolean; reason: string };

/** A part of a scan either moves on to `next` in the window or ends the step with its result. */
export type StepMove = { next: number } | { done: StepResult };

export abstract class CallScanner {
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
  protected abstract step(w: string, final: boolean): StepResult;

  /** Interprets the call's whole markup (opener included) after an 'end'. */
  abstract interpret(markup: string): ParsedCall[] | { reason: string };
}


/**
 * Mistral's calls after `[TOOL_CALLS]`: `NAME[ARGS]{json}` (Mistral Small 3.1+, Devstral, Ministral
 * and Magistral; Mistral Small 3.2 puts `[CALL_ID]ID` before `[ARGS]`), one `[TOOL_CALLS]` per call;
 * or Mistral Nemo's `[{"name": …, "arguments": {…}}, …]`. There is no closing marker: a call ends
 * with its JSON value, which the scan finds by tracking strings and nesting as it streams.
 */
import { checkJsonCall } from './json-call.js';
import { CallScanner, isObject, isWs, matchAt, type ParsedCall, type StepResult, type Tools } from './scan.js';

export const MISTRAL_CALLS = '[TOOL_CALLS]';
const ARGS = '[ARGS]';
const CALL_ID = '[CALL_ID]';
/** Longer than any tool name a client sends: past it, the text is no call. */
const MAX_NAME = 256;

export class MistralCallScanner extends CallScanner {
  private phase: 'head' | 'id' | 'json' = 'head';
  private name = '';
  /** Nemo's JSON list (or one object) right after the marker, rather than NAME[ARGS]. */
  private list = false;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private jsonFrom = -1;
  private jsonTo = -1;

  constructor(
    private readonly tools: Tools,
    openerLength: number,
  ) {
    super(openerLength);
  }

  protected step(w: string, final: boolean): StepResult {
    let i = 0;
    while (i < w.length) {
      const c = w[i]!;
      if (this.phase === 'head' || this.phase === 'id') {
        if (this.phase === 'head' && this.name === '' && (c === '[' || c === '{') && matchAt(w, i, ARGS) === 'no' && matchAt(w, i, CALL_ID) === 'no') {
          this.list = true;
          this.openJson(i);
          i++;
          continue;
        }
        if (c === '[') {
          const args = matchAt(w, i, ARGS);
          if (args === 'full') {
            this.phase = 'json';
            i += ARGS.length;
            continue;
          }
          const id = matchAt(w, i, CALL_ID);
          if (id === 'full' && this.phase === 'head') {
            this.phase = 'id';
            i += CALL_ID.length;
            continue;
          }
          if ((args === 'partial' || id === 'partial') && !final) return i;
        }
        if (this.phase === 'head') {
          if (isWs(c) && this.name === '') {
            i++;
            continue;
          }
          this.name += c;
          if (this.name.length > MAX_NAME || c === '\n') return { kind: 'reject', at: i + 1, asText: false, reason: 'no [ARGS] after the tool name' };
        }
        i++;
        continue;
      }
      // json
      if (this.jsonFrom === -1) {
        if (isWs(c)) {
          i++;
          continue;
        }
        if (c !== '{') return { kind: 'reject', at: i, asText: false, reason: 'the arguments are not a JSON object' };
        this.openJson(i);
        i++;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === '{' || c === '[') this.depth++;
      else if ((c === '}' || c === ']') && --this.depth === 0) {
        this.jsonTo = this.base + i + 1;
        return { kind: 'end', at: i + 1 };
      }
      i++;
    }
    if (!final) return null;
    return { kind: 'end', at: w.length };
  }

  private openJson(i: number): void {
    this.phase = 'json';
    this.depth = 1;
    this.jsonFrom = this.base + i;
  }

  interpret(markup: string): ParsedCall[] | { reason: string } {
    if (this.jsonTo === -1) return { reason: 'the call is not finished' };
    let value: unknown;
    try {
      value = JSON.parse(markup.slice(this.jsonFrom, this.jsonTo));
    } catch (error) {
      return { reason: `malformed JSON: ${(error as Error).message}` };
    }
    if (this.list) {
      const calls: ParsedCall[] = [];
      for (const item of Array.isArray(value) ? value : [value]) {
        const call = checkJsonCall(item, this.tools);
        if ('reason' in call) return call;
        calls.push(call);
      }
      return calls.length ? calls : { reason: 'an empty list of calls' };
    }
    const name = this.name.trim();
    if (!this.tools.has(name)) return { reason: `unknown tool ${JSON.stringify(name)}` };
    if (!isObject(value)) return { reason: 'the arguments are not a JSON object' };
    return [{ name, input: value }];
  }
}

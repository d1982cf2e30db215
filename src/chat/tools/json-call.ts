/**
 * The JSON call forms: hermes and generic (`<tool_call>{"name", "arguments"}</tool_call>`) and
 * llama3-json (a bare `{"name", "parameters"}` object), scanned JSON-aware as they stream.
 */
import { CallScanner, isObject, isWs, matchAt, type ParsedCall, type StepMove, type StepResult, type Tools } from './scan.js';

/** A call object's shape check: a string name among the tools and an object of arguments. */
export function checkJsonCall(value: unknown, tools: Tools): ParsedCall | { reason: string } {
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
export class JsonCallScanner extends CallScanner {
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

  protected step(w: string, final: boolean): StepResult {
    const closer = this.closer;
    let i = 0;
    while (i < w.length) {
      const c = w[i]!;
      if (this.phase === 'pre' || this.phase === 'post') {
        const move = this.outsideObject(w, i, final);
        if ('done' in move) return move.done;
        i = move.next;
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

  /** Before the JSON (`pre`) or after it (`post`): whitespace, an object or array opening, or the closing tag. */
  private outsideObject(w: string, i: number, final: boolean): StepMove {
    const c = w[i]!;
    const closer = this.closer;
    if (isWs(c)) return { next: i + 1 };
    if (c === '{' || c === '[') {
      this.phase = 'json';
      this.depth = 1;
      this.objectStart = this.base + i;
      return { next: i + 1 };
    }
    const m = closer === null ? 'no' : matchAt(w, i, closer);
    if (m === 'full') {
      if (this.objects.length === 0) this.broken = 'no JSON object in the call';
      return { done: { kind: 'end', at: i + closer!.length } };
    }
    if (m === 'partial') {
      if (!final) return { done: i };
      // The text ended in the closing tag: a complete call without it still counts.
      if (this.phase === 'post') return { done: { kind: 'end', at: w.length } };
    }
    if (this.phase === 'pre') return { done: { kind: 'reject', at: i, asText: false, reason: 'the call does not start with JSON' } };
    this.broken = 'text after the JSON object';
    this.phase = 'skip';
    return { next: i };
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


/**
 * The Qwen3-Coder / Qwen3.5 XML call form (`<function=NAME><parameter=P>value</parameter></function>`),
 * its values typed by the tool's JSON Schema as vLLM's qwen3coder parser does.
 */
import { CallScanner, FUNCTION_CLOSE, type StepMove, FUNCTION_OPEN, isObject, isWs, matchAt, PARAMETER_CLOSE, PARAMETER_OPEN, TOOL_CALL_CLOSE, type ParsedCall, type StepResult, type Tools } from './scan.js';
import type { JsonSchema } from './types.js';

/**
 * Qwen3-Coder / Qwen3.5 calls:
 *   <tool_call>\n<function=NAME>\n<parameter=P>\nvalue\n</parameter>\n…</function>\n</tool_call>
 * The scan only tracks where parameter values are, so that `</tool_call>` (or, for a call that
 * skipped `<tool_call>`, `</function>`) inside a value — code that mentions the tags — does not end
 * the call; a value ends at the first `</parameter>`. The markup is then parsed once.
 */
export class XmlCallScanner extends CallScanner {
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

  protected step(w: string, final: boolean): StepResult {
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
          const move = this.inBody(w, i, final);
          if ('done' in move) return move.done;
          i = move.next;
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

  /** Between parameters: a parameter opens, or the call closes (the body's end is noted), or text goes by. */
  private inBody(w: string, from: number, final: boolean): StepMove {
    const lt = w.indexOf('<', from);
    if (lt === -1) return { next: w.length };
    const close = this.bare ? FUNCTION_CLOSE : TOOL_CALL_CLOSE;
    const mp = matchAt(w, lt, PARAMETER_OPEN);
    const mc = matchAt(w, lt, close);
    if (mp === 'full') {
      this.phase = 'pname';
      return { next: lt + PARAMETER_OPEN.length };
    }
    if (mc === 'full') {
      if (!this.bare) {
        this.bodyEnd = this.base + lt;
        return { done: { kind: 'end', at: lt + close.length } };
      }
      this.bodyEnd = this.base + lt + close.length;
      this.phase = 'after-function';
      return { next: lt + close.length };
    }
    if ((mp === 'partial' || mc === 'partial') && !final) return { done: lt };
    return { next: lt + 1 };
  }

  interpret(markup: string): ParsedCall[] | { reason: string } {
    const functions = parseXmlFunctions(markup.slice(this.bodyStart, this.bodyEnd));
    if ('reason' in functions) return functions;
    const calls: ParsedCall[] = [];
    for (const f of functions) {
      const tool = this.tools.get(f.name);
      if (tool === undefined) return { reason: `unknown tool ${JSON.stringify(f.name)}` };
      const properties = isObject(tool.inputSchema?.properties) ? tool.inputSchema.properties : {};
      // Own keys only, both ways: a parameter the model names `constructor` or `__proto__` is a plain key.
      const args = Object.fromEntries(
        f.params.map(([name, value]) => {
          const schema = Object.hasOwn(properties, name) ? properties[name] : undefined;
          // An unknown parameter keeps its text (vLLM does the same).
          return [name, isObject(schema) ? typeXmlValue(value, schema) : value];
        }),
      );
      calls.push({ name: f.name, input: args });
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
export function typeXmlValue(value: string, schema: JsonSchema): unknown {
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


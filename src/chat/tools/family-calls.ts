/**
 * The readers of the families whose calls sit in a marked section (./section-call.ts): each takes
 * the section's body, as the family's template renders a call in the history (and as
 * llama.cpp's common/chat.cpp and tests/test-chat.cpp read it back), and returns the calls, each
 * checked against the request's tools. Values written as text (GLM, MiniMax, DSML) are typed by the
 * tool's JSON Schema, as the Qwen3-Coder XML form is (./xml-call.ts).
 */
import { checkedCall, isObject, isWs, type ParsedCall, type Tools } from './scan.js';
import type { SectionReader } from './section-call.js';
import { typeXmlValue } from './xml-call.js';

type Calls = ParsedCall[] | { reason: string };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A text value typed by the tool's schema for that parameter (an unknown parameter keeps its text). */
function typedArgs(tools: Tools, name: string, pairs: Array<[string, string]>): Record<string, unknown> {
  const schema = tools.get(name)?.inputSchema;
  const properties = isObject(schema?.properties) ? schema.properties : {};
  // Own keys only, both ways: an argument the model names `__proto__` or `constructor` is a plain key
  // (assigned, it set the input's prototype; looked up, it read Object.prototype as its schema).
  return Object.fromEntries(pairs.map(([key, value]) => {
    const property = Object.hasOwn(properties, key) ? properties[key] : undefined;
    return [key, isObject(property) ? typeXmlValue(value, property) : value];
  }));
}

/** Splits `body` at each `begin`; the text before the first must be whitespace. */
function pieces(body: string, begin: string): string[] | { reason: string } {
  const parts = body.split(begin);
  if (parts[0]!.trim() !== '') return { reason: `text before the first ${begin}` };
  return parts.slice(1);
}

function collect<T>(parts: T[] | { reason: string }, read: (part: T) => ParsedCall | { reason: string }): Calls {
  if ('reason' in parts) return parts;
  const calls: ParsedCall[] = [];
  for (const part of parts) {
    const call = read(part);
    if ('reason' in call) return call;
    calls.push(call);
  }
  return calls;
}

/**
 * Kimi K2: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>`
 * per call. The id's `functions.` prefix and `:IDX` suffix are the template's; the name is between.
 */
export const kimiK2Reader = (tools: Tools): SectionReader => (body) =>
  collect(pieces(body, '<|tool_call_begin|>'), (part) => {
    const sep = part.indexOf('<|tool_call_argument_begin|>');
    if (sep === -1) return { reason: 'a call without <|tool_call_argument_begin|>' };
    const id = part.slice(0, sep).trim();
    const name = id.replace(/^functions\./, '').replace(/:\d+$/, '');
    const end = part.indexOf('<|tool_call_end|>', sep);
    const args = part.slice(sep + '<|tool_call_argument_begin|>'.length, end === -1 ? undefined : end).trim();
    if (end !== -1 && part.slice(end + '<|tool_call_end|>'.length).trim() !== '') return { reason: 'text after <|tool_call_end|>' };
    const input = parseJson(args);
    return input === undefined ? { reason: `malformed JSON arguments for ${name}` } : checkedCall(tools, name, input);
  });

/**
 * GLM 4.5 / 4.6 / 4.7: one call per `<tool_call>` section: `NAME` then `<arg_key>K</arg_key>`
 * `<arg_value>V</arg_value>` pairs, with or without newlines between (4.7 writes none). The template
 * writes a string value as it is and any other as JSON.
 */
export const glmReader = (tools: Tools): SectionReader => (body) => {
  const first = body.indexOf('<arg_key>');
  const name = (first === -1 ? body : body.slice(0, first)).trim();
  if (name === '' || /\s/.test(name)) return { reason: 'the call has no name' };
  const pairs: Array<[string, string]> = [];
  let i = first === -1 ? body.length : first;
  while (i < body.length) {
    while (i < body.length && isWs(body[i])) i++;
    if (i >= body.length) break;
    if (!body.startsWith('<arg_key>', i)) return { reason: 'unexpected text between arguments' };
    const keyEnd = body.indexOf('</arg_key>', i);
    if (keyEnd === -1) return { reason: 'an <arg_key> is not closed' };
    const key = body.slice(i + '<arg_key>'.length, keyEnd).trim();
    let j = keyEnd + '</arg_key>'.length;
    while (j < body.length && isWs(body[j])) j++;
    if (!body.startsWith('<arg_value>', j)) return { reason: `argument ${JSON.stringify(key)} has no <arg_value>` };
    const valueEnd = body.indexOf('</arg_value>', j);
    if (valueEnd === -1) return { reason: `the value of ${JSON.stringify(key)} is not closed` };
    pairs.push([key, body.slice(j + '<arg_value>'.length, valueEnd)]);
    i = valueEnd + '</arg_value>'.length;
  }
  const call = checkedCall(tools, name, typedArgs(tools, name, pairs));
  return 'reason' in call ? call : [call];
};

const DS_CALL_BEGIN = '<｜tool▁call▁begin｜>';
const DS_CALL_END = '<｜tool▁call▁end｜>';
const DS_SEP = '<｜tool▁sep｜>';

/**
 * DeepSeek R1 and V3.1, one reader for both: per call `<｜tool▁call▁begin｜>` … `<｜tool▁call▁end｜>`.
 * R1 writes `function<｜tool▁sep｜>NAME\n```json\n{json}\n```` (the fence's closing newline is
 * optional in its outputs); V3.1 writes `NAME<｜tool▁sep｜>{json}`.
 */
export const deepseekReader = (tools: Tools): SectionReader => (body) =>
  collect(pieces(body, DS_CALL_BEGIN), (part) => {
    const end = part.indexOf(DS_CALL_END);
    if (end !== -1 && part.slice(end + DS_CALL_END.length).trim() !== '') return { reason: `text after ${DS_CALL_END}` };
    const call = end === -1 ? part : part.slice(0, end);
    const sep = call.indexOf(DS_SEP);
    if (sep === -1) return { reason: `a call without ${DS_SEP}` };
    const head = call.slice(0, sep).trim();
    const rest = call.slice(sep + DS_SEP.length);
    const fence = rest.indexOf('```json');
    if (head === 'function' && fence !== -1) {
      const name = rest.slice(0, fence).trim();
      const json = rest.slice(fence + '```json'.length).replace(/```\s*$/, '').trim();
      const input = parseJson(json);
      return input === undefined ? { reason: `malformed JSON arguments for ${name}` } : checkedCall(tools, name, input);
    }
    const input = parseJson(rest.trim());
    return input === undefined ? { reason: `malformed JSON arguments for ${head}` } : checkedCall(tools, head, input);
  });

/**
 * The `<invoke name="N"><parameter name="P">V</parameter></invoke>` form: MiniMax M2 as it is,
 * DeepSeek V3.2 with `｜DSML｜` after each `<` and a `string="true|false"` attribute saying whether
 * the value is text or JSON (without it, the tool's schema decides).
 */
export const invokeReader = (tools: Tools, prefix: '' | '｜DSML｜'): SectionReader => {
  const invokeOpen = `<${prefix}invoke name="`;
  const invokeClose = `</${prefix}invoke>`;
  const paramOpen = `<${prefix}parameter name="`;
  const paramClose = `</${prefix}parameter>`;
  return (body) =>
    collect(pieces(body, invokeOpen), (part) => {
      const quote = part.indexOf('"');
      const gt = part.indexOf('>', quote);
      if (quote === -1 || gt === -1) return { reason: 'an unterminated invoke tag' };
      const name = part.slice(0, quote);
      const end = part.indexOf(invokeClose, gt);
      if (end !== -1 && part.slice(end + invokeClose.length).trim() !== '') return { reason: `text after ${invokeClose}` };
      const inner = part.slice(gt + 1, end === -1 ? undefined : end);
      const text: Array<[string, string]> = [];
      // Values the attribute types (own keys, as typedArgs keeps them).
      const json: Array<[string, unknown]> = [];
      let i = 0;
      for (;;) {
        while (i < inner.length && isWs(inner[i])) i++;
        if (i >= inner.length) break;
        if (!inner.startsWith(paramOpen, i)) return { reason: `unexpected text inside the invoke of ${name}` };
        const q = inner.indexOf('"', i + paramOpen.length);
        const pgt = q === -1 ? -1 : inner.indexOf('>', q);
        if (pgt === -1) return { reason: 'an unterminated parameter tag' };
        const key = inner.slice(i + paramOpen.length, q);
        const attributes = inner.slice(q + 1, pgt);
        const close = inner.indexOf(paramClose, pgt);
        if (close === -1) return { reason: `parameter ${JSON.stringify(key)} is not closed` };
        const value = inner.slice(pgt + 1, close);
        if (/string="false"/.test(attributes)) {
          const parsed = parseJson(value.trim());
          if (parsed === undefined) return { reason: `parameter ${JSON.stringify(key)} is not JSON` };
          json.push([key, parsed]);
        } else if (/string="true"/.test(attributes)) json.push([key, value]);
        else text.push([key, value.replace(/^\n/, '').replace(/\n$/, '')]);
        i = close + paramClose.length;
      }
      return checkedCall(tools, name, { ...typedArgs(tools, name, text), ...Object.fromEntries(json) });
    });
};

/**
 * LFM2: a Python list of calls, `[NAME(k=v, …), …]`, the values Python literals (strings in either
 * quote, numbers, True / False / None, lists, dicts) or JSON literals (true / false / null), as
 * llama.cpp's python_style_tool_calls reads them.
 */
export const lfm2Reader = (tools: Tools): SectionReader => (body) => collect(new PythonCalls(body).calls(), (c) => checkedCall(tools, c.name, c.input));

/**
 * Gemma 4: `call:NAME{key:value,…}` per `<|tool_call>` section, the values JSON-like with bare keys
 * and strings quoted by `<|"|>` (llama.cpp's gemma4 handler); quoted JSON keys and strings are read
 * too.
 */
export const gemma4Reader = (tools: Tools): SectionReader => (body) => {
  const text = body.trim();
  if (!text.startsWith('call:')) return { reason: 'the call does not start with call:' };
  const brace = text.indexOf('{');
  if (brace === -1) return { reason: 'no arguments after the name' };
  const reader = new PythonCalls(text.slice(brace), { bareKeys: true });
  const input = reader.whole();
  if ('reason' in input) return input;
  const call = checkedCall(tools, text.slice('call:'.length, brace).trim(), input.value);
  return 'reason' in call ? call : [call];
};

/** Gemma 4's string quote. */
const GEMMA_QUOTE = '<|"|>';

/** A small reader of Python call syntax with literal arguments (and of Gemma 4's argument objects). */
class PythonCalls {
  private i = 0;
  constructor(
    private readonly s: string,
    private readonly options: { bareKeys?: boolean } = {},
  ) {}

  /** The whole text as one value. */
  whole(): { value: unknown } | { reason: string } {
    try {
      const value = this.value();
      this.ws();
      if (this.i !== this.s.length) throw new Error('text after the arguments');
      return { value };
    } catch (error) {
      return { reason: (error as Error).message };
    }
  }

  calls(): ParsedCall[] | { reason: string } {
    try {
      this.ws();
      this.expect('[');
      const out: ParsedCall[] = [];
      this.ws();
      while (this.s[this.i] !== ']') {
        out.push(this.call());
        this.ws();
        if (this.s[this.i] === ',') {
          this.i++;
          this.ws();
        } else if (this.s[this.i] !== ']') throw new Error('expected , or ] between calls');
      }
      this.i++;
      this.ws();
      if (this.i !== this.s.length) throw new Error('text after the list of calls');
      return out;
    } catch (error) {
      return { reason: (error as Error).message };
    }
  }

  private call(): ParsedCall {
    const name = this.name();
    this.ws();
    this.expect('(');
    const input = this.pairs({ close: ')', separator: '=', key: () => this.name(), missingComma: 'expected , or ) between arguments' });
    return { name, input };
  }

  /**
   * `key separator value` pairs separated by commas, up to `close` (consumed): a call's arguments or a
   * dict. Own keys only: a model may write `__proto__` or `constructor` as a key.
   */
  private pairs(o: { close: string; separator: string; key: () => string; missingComma: string }): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.ws();
    while (this.s[this.i] !== o.close) {
      const key = o.key();
      this.ws();
      this.expect(o.separator);
      this.ws();
      Object.defineProperty(out, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.ws();
      if (this.s[this.i] === ',') {
        this.i++;
        this.ws();
      } else if (this.s[this.i] !== o.close) throw new Error(o.missingComma);
    }
    this.i++;
    return out;
  }

  private name(): string {
    const m = /^[A-Za-z_][\w.-]*/.exec(this.s.slice(this.i, this.i + 256));
    if (!m) throw new Error('expected a name');
    this.i += m[0].length;
    return m[0];
  }

  private value(): unknown {
    const c = this.s[this.i];
    if (this.s.startsWith(GEMMA_QUOTE, this.i)) {
      const end = this.s.indexOf(GEMMA_QUOTE, this.i + GEMMA_QUOTE.length);
      if (end === -1) throw new Error('an unterminated string');
      const text = this.s.slice(this.i + GEMMA_QUOTE.length, end);
      this.i = end + GEMMA_QUOTE.length;
      return text;
    }
    if (c === '"' || c === "'") return this.string(c);
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      this.i++;
      const list: unknown[] = [];
      this.ws();
      while (this.s[this.i] !== close) {
        list.push(this.value());
        this.ws();
        if (this.s[this.i] === ',') {
          this.i++;
          this.ws();
        } else if (this.s[this.i] !== close) throw new Error('expected , in a list');
      }
      this.i++;
      return list;
    }
    if (c === '{') {
      this.i++;
      return this.pairs({
        close: '}',
        separator: ':',
        key: () => {
          const key = this.options.bareKeys && /[A-Za-z_]/.test(this.s[this.i] ?? '') ? this.name() : this.value();
          if (typeof key !== 'string') throw new Error('a dict key that is not a string');
          return key;
        },
        missingComma: 'expected , in a dict',
      });
    }
    const m = /^(?:True|False|None|true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(this.s.slice(this.i, this.i + 64));
    if (!m) throw new Error('expected a literal value');
    this.i += m[0].length;
    const word = m[0];
    if (word === 'True' || word === 'true') return true;
    if (word === 'False' || word === 'false') return false;
    if (word === 'None' || word === 'null') return null;
    return Number(word);
  }

  /** A Python string literal: backslash escapes as Python reads them (the common ones). */
  private string(quote: string): string {
    this.i++;
    let out = '';
    const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };
    while (this.i < this.s.length) {
      const c = this.s[this.i]!;
      if (c === quote) {
        this.i++;
        return out;
      }
      if (c === '\\') {
        const next = this.s[this.i + 1] ?? '';
        if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(this.s.slice(this.i + 2, this.i + 6))) {
          out += String.fromCharCode(parseInt(this.s.slice(this.i + 2, this.i + 6), 16));
          this.i += 6;
          continue;
        }
        out += escapes[next] ?? `\\${next}`;
        this.i += 2;
        continue;
      }
      out += c;
      this.i++;
    }
    throw new Error('an unterminated string');
  }

  private expect(c: string): void {
    if (this.s[this.i] !== c) throw new Error(`expected ${c}`);
    this.i++;
  }

  private ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }
}

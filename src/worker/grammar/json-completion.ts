/**
 * The shortest text that completes a partial JSON value so that it validates against its schema,
 * for the budget rule of constrained decoding (./constraint.ts): when the tokens left reach what
 * that completion needs, the decoder writes it instead of letting the model wander on, so an output
 * cut by the token limit still validates.
 *
 * The JSON is the grammar's own compact form (no whitespace between tokens; properties in the
 * schema's order, as XGrammar's converter lays them out), fed one character at a time. Where the
 * shortest completion cannot be known (a string with a pattern, an unknown kind), `completion()`
 * is undefined and nothing is forced. The completion is a proposal: the caller checks each of its
 * tokens against the grammar's mask and stops forcing at the first the grammar refuses.
 */
import type { JsonSchema } from './schema-subset.js';

type Frame =
  | { kind: 'object'; schema: JsonSchema; keys: string[]; state: 'start' | 'key' | 'colon' | 'value' | 'after' }
  | { kind: 'array'; schema: JsonSchema; count: number; state: 'start' | 'value' | 'after' }
  | { kind: 'string'; schema: JsonSchema; isKey: boolean; text: string; escape: number }
  | { kind: 'number'; schema: JsonSchema; text: string }
  | { kind: 'literal'; text: string; word: string };

const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_DEPTH = 32;

/** Fixed valid values for the string formats with a short canonical instance. */
const FORMAT_EXAMPLES: Record<string, string> = {
  date: '2000-01-01',
  'date-time': '2000-01-01T00:00:00Z',
  time: '00:00:00Z',
  uuid: '00000000-0000-0000-0000-000000000000',
  ipv4: '0.0.0.0',
  ipv6: '::',
};

export class JsonCompletion {
  private readonly stack: Frame[] = [];
  private done = false;
  /** The text could not be followed (not the grammar's JSON): no completion is offered any more. */
  private lost = false;

  constructor(private readonly root: JsonSchema) {}

  /** The value is complete. */
  get complete(): boolean {
    return this.done;
  }

  /** Feeds text the model produced (any split); returns the text after the end of the value, if it ended. */
  push(text: string): string {
    for (let i = 0; i < text.length; i++) {
      if (this.done) return text.slice(i);
      if (this.lost) continue;
      const c = text[i]!;
      // A number ends at the first character that cannot continue it, which belongs to what follows.
      const top = this.stack.at(-1);
      if (top?.kind === 'number' && !/[0-9eE.+-]/.test(c)) {
        this.stack.pop();
        this.valueEnded();
        if (this.done) return text.slice(i);
      }
      this.char(c);
    }
    return '';
  }

  /** The shortest text that completes the value; '' once complete; undefined when it cannot be known. */
  completion(): string | undefined {
    if (this.done) return '';
    if (this.lost) return undefined;
    if (this.stack.length === 0) return this.minimal(this.root, 0);
    let out = '';
    for (let i = this.stack.length - 1; i >= 0; i--) {
      const rest = this.close(this.stack[i]!, i);
      if (rest === undefined) return undefined;
      out += rest;
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------
  // Following the text

  private char(c: string): void {
    const top = this.stack.at(-1);
    // Whitespace between tokens (the grammar writes none where the schema is known; untyped parts may).
    if ((c === ' ' || c === '\n' || c === '\t' || c === '\r') && top?.kind !== 'string') return;
    if (!top) return this.startValue(this.root, c);
    switch (top.kind) {
      case 'string':
        if (top.escape > 0) {
          top.escape = top.escape === 1 && c === "u" ? 4 : top.escape - 1;
          top.text += c;
        } else if (c === '\\') {
          top.escape = 1;
          top.text += c;
        } else if (c === '"') {
          this.stack.pop();
          if (top.isKey) {
            const parent = this.stack.at(-1);
            if (parent?.kind === 'object') {
              parent.keys.push(top.text);
              parent.state = 'colon';
            }
          } else this.valueEnded();
        } else top.text += c;
        return;
      case 'number':
        top.text += c; // push() ends the number at a character that cannot continue it
        return;
      case 'literal':
        top.text += c;
        if (top.text === top.word) {
          this.stack.pop();
          this.valueEnded();
        } else if (!top.word.startsWith(top.text)) this.lost = true;
        return;
      case 'object':
        if (top.state === 'start' || top.state === 'key') {
          if (c === '"') this.stack.push({ kind: 'string', schema: {}, isKey: true, text: '', escape: 0 });
          else if (c === '}' && top.state === 'start') this.closeContainer();
          else this.lost = true;
        } else if (top.state === 'colon') {
          if (c === ':') top.state = 'value';
          else this.lost = true;
        } else if (top.state === 'value') {
          this.startValue(this.propertySchema(top.schema, top.keys.at(-1)!), c);
        } else if (c === ',') top.state = 'key';
        else if (c === '}') this.closeContainer();
        else this.lost = true;
        return;
      case 'array':
        if (top.state === 'after') {
          if (c === ',') top.state = 'value';
          else if (c === ']') this.closeContainer();
          else this.lost = true;
        } else if (c === ']' && top.state === 'start') this.closeContainer();
        else {
          const item = this.itemSchema(top.schema, top.count);
          top.count++;
          this.startValue(item, c);
        }
        return;
    }
  }

  private startValue(schema: JsonSchema, c: string): void {
    const kind = c === '{' ? 'object' : c === '[' ? 'array' : c === '"' ? 'string' : /[-0-9]/.test(c) ? 'number' : c === 't' || c === 'f' || c === 'n' ? 'literal' : undefined;
    if (!kind) {
      this.lost = true;
      return;
    }
    const branch = this.branchFor(schema, kind);
    if (kind === 'object') this.stack.push({ kind, schema: branch, keys: [], state: 'start' });
    else if (kind === 'array') this.stack.push({ kind, schema: branch, count: 0, state: 'start' });
    else if (kind === 'string') this.stack.push({ kind, schema: branch, isKey: false, text: '', escape: 0 });
    else if (kind === 'number') this.stack.push({ kind, schema: branch, text: c });
    else this.stack.push({ kind, text: c, word: c === 't' ? 'true' : c === 'f' ? 'false' : 'null' });
  }

  private valueEnded(): void {
    const parent = this.stack.at(-1);
    if (!parent) this.done = true;
    else if (parent.kind === 'object' || parent.kind === 'array') parent.state = 'after';
  }

  private closeContainer(): void {
    this.stack.pop();
    this.valueEnded();
  }

  // ------------------------------------------------------------------------------------------
  // Schemas

  private resolve(schema: unknown, depth = 0): JsonSchema {
    if (!isObject(schema)) return {};
    const ref = schema.$ref;
    if (typeof ref === 'string' && depth < MAX_DEPTH) {
      const [, group, name] = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref) ?? [];
      const defs = group ? this.root[group] : undefined;
      if (isObject(defs) && name !== undefined) return this.resolve(defs[name], depth + 1);
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return this.resolve(schema.allOf[0], depth + 1);
    return schema;
  }

  /** The branch of an anyOf (or type list) a value of this JSON kind follows: the first that allows the kind. */
  private branchFor(schema: JsonSchema, kind: 'object' | 'array' | 'string' | 'number' | 'literal'): JsonSchema {
    const s = this.resolve(schema);
    if (Array.isArray(s.anyOf)) {
      for (const member of s.anyOf) {
        const branch = this.resolve(member);
        if (this.allows(branch, kind)) return this.branchFor(branch, kind);
      }
    }
    return s;
  }

  private allows(schema: JsonSchema, kind: string): boolean {
    const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? undefined : [schema.type];
    if (types) return types.some((t) => (kind === 'number' ? t === 'number' || t === 'integer' : kind === 'literal' ? t === 'boolean' || t === 'null' : t === kind));
    if (schema.const !== undefined || Array.isArray(schema.enum)) {
      const values = schema.const !== undefined ? [schema.const] : (schema.enum as unknown[]);
      return values.some((v) => kindOf(v) === kind);
    }
    if (kind === 'object') return 'properties' in schema || !('items' in schema);
    return true;
  }

  private propertySchema(schema: JsonSchema, key: string): JsonSchema {
    const props = isObject(schema.properties) ? schema.properties : {};
    if (key in props) return this.resolve(props[key]);
    return this.resolve(isObject(schema.additionalProperties) ? schema.additionalProperties : {});
  }

  private itemSchema(schema: JsonSchema, index: number): JsonSchema {
    if (Array.isArray(schema.prefixItems) && index < schema.prefixItems.length) return this.resolve(schema.prefixItems[index]);
    return this.resolve(schema.items);
  }

  // ------------------------------------------------------------------------------------------
  // Completions

  /** What closes frame `at` of the stack (its inner frames already closed). */
  private close(frame: Frame, at: number): string | undefined {
    switch (frame.kind) {
      case 'literal':
        return frame.word.slice(frame.text.length);
      case 'number':
        return completeNumber(frame.text, frame.schema);
      case 'string': {
        // Inside an escape: `\n` after a lone backslash, zeros for the hex digits a `\u` still needs.
        const escape = frame.escape === 0 ? '' : frame.escape === 1 && frame.text.endsWith('\\') ? 'n' : '0'.repeat(frame.escape);
        const typed = frame.text + escape;
        const rest = frame.isKey ? this.closeKey(this.stack[at - 1] as Extract<Frame, { kind: 'object' }>, typed) : this.closeString(frame.schema, typed);
        return rest === undefined ? undefined : escape + rest;
      }
      case 'object': {
        const inner = this.stack[at + 1];
        if (inner?.kind === 'string' && inner.isKey) return '}'; // the key's closing already added the rest
        if (frame.state === 'colon') return this.afterKey(frame, frame.keys.at(-1)!);
        if (frame.state === 'value') {
          const key = frame.keys.at(-1)!;
          if (inner) return this.restOfObject(frame, key);
          const value = this.minimal(this.propertySchema(frame.schema, key), at + 1);
          const rest = this.restOfObject(frame, key);
          return value === undefined || rest === undefined ? undefined : value + rest;
        }
        if (frame.state === 'key') {
          // After a comma: a property must follow; the first one left in order.
          const next = this.nextProperties(frame, frame.keys.at(-1));
          const name = next.required[0] ?? next.optional[0];
          if (name === undefined) return undefined;
          return this.afterKeyText(frame, name, JSON.stringify(name).slice(0));
        }
        if (frame.state === 'start') return this.objectBody(frame.schema, undefined, at + 1, true);
        return this.restOfObject(frame, frame.keys.at(-1));
      }
      case 'array': {
        const inner = this.stack[at + 1];
        const min = typeof frame.schema.minItems === 'number' ? frame.schema.minItems : 0;
        let out = '';
        let count = frame.count;
        if (frame.state === 'value' && !inner) {
          const item = this.minimal(this.itemSchema(frame.schema, count), at + 1);
          if (item === undefined) return undefined;
          out += item;
          count++;
        }
        for (; count < min; count++) {
          const item = this.minimal(this.itemSchema(frame.schema, count), at + 1);
          if (item === undefined) return undefined;
          out += (count === 0 ? '' : ',') + item;
        }
        return out + ']';
      }
    }
  }

  /** A key being written: the shortest property name it can still become, then its value and the rest. */
  private closeKey(object: Extract<Frame, { kind: 'object' }>, typed: string): string | undefined {
    // The key being written is one of the properties after the last one, in order; it cannot skip a required one.
    const previous = object.keys.at(-2);
    let best: string | undefined;
    for (const name of this.candidateKeys(object, previous)) {
      if (!name.startsWith(typed)) continue;
      const rest = this.afterKeyText(object, name, `${JSON.stringify(name).slice(1 + typed.length)}`);
      if (rest !== undefined && (best === undefined || rest.length < best.length)) best = rest;
    }
    if (best !== undefined) return best.slice(0, -1); // the object's own frame adds its '}'
    if (object.schema.additionalProperties === false) return undefined;
    const rest = this.afterKeyText(object, typed, '"');
    return rest?.slice(0, -1);
  }

  /** `keyText` ends the key `name`; then `:`, its minimal value and what the object still needs, with its `}`. */
  private afterKeyText(object: Extract<Frame, { kind: 'object' }>, name: string, keyText: string): string | undefined {
    const value = this.minimal(this.propertySchema(object.schema, name), this.stack.length);
    const rest = this.restOfObject(object, name);
    return value === undefined || rest === undefined ? undefined : `${keyText}:${value}${rest}`;
  }

  private afterKey(object: Extract<Frame, { kind: 'object' }>, name: string): string | undefined {
    return this.afterKeyText(object, name, '');
  }

  /** The properties that may come next after `previous`: in schema order, up to the first required one. */
  private candidateKeys(object: Extract<Frame, { kind: 'object' }>, previous: string | undefined): string[] {
    const { required } = this.nextProperties(object, previous);
    const names = isObject(object.schema.properties) ? Object.keys(object.schema.properties) : [];
    const after = previous === undefined ? names : names.slice(names.indexOf(previous) + 1);
    const stop = required[0] === undefined ? after.length : after.indexOf(required[0]) + 1;
    return after.slice(0, stop).filter((n) => !object.keys.includes(n));
  }

  /** Properties after `previous` in schema order, required and optional. */
  private nextProperties(object: Extract<Frame, { kind: 'object' }>, previous: string | undefined): { required: string[]; optional: string[] } {
    const names = isObject(object.schema.properties) ? Object.keys(object.schema.properties) : [];
    const required = new Set(Array.isArray(object.schema.required) ? (object.schema.required as string[]) : []);
    const after = previous === undefined ? names : names.slice(names.indexOf(previous) + 1);
    const left = after.filter((n) => !object.keys.includes(n));
    return { required: left.filter((n) => required.has(n)), optional: left.filter((n) => !required.has(n)) };
  }

  /** The required properties after `previous` with minimal values, then `}`. */
  private restOfObject(object: Extract<Frame, { kind: 'object' }>, previous: string | undefined): string | undefined {
    const { required } = this.nextProperties(object, previous);
    let out = '';
    for (const name of required) {
      const value = this.minimal(this.propertySchema(object.schema, name), this.stack.length);
      if (value === undefined) return undefined;
      out += `,${JSON.stringify(name)}:${value}`;
    }
    return `${out}}`;
  }

  /** An object's required properties with minimal values (after `{`), and `}`. */
  private objectBody(schema: JsonSchema, previous: string | undefined, depth: number, first: boolean): string | undefined {
    const names = isObject(schema.properties) ? Object.keys(schema.properties) : [];
    const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
    const ordered = [...names.filter((n) => required.includes(n)), ...required.filter((n) => !names.includes(n))];
    const start = previous === undefined ? 0 : ordered.indexOf(previous) + 1;
    let out = '';
    let lead = first;
    for (const name of ordered.slice(start)) {
      const value = this.minimal(this.propertySchema(schema, name), depth + 1);
      if (value === undefined) return undefined;
      out += `${lead ? '' : ','}${JSON.stringify(name)}:${value}`;
      lead = false;
    }
    return `${out}}`;
  }

  private closeString(schema: JsonSchema, typed: string): string | undefined {
    const values = schema.const !== undefined ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
    if (values) {
      const fits = values.filter((v): v is string => typeof v === 'string').map((v) => JSON.stringify(v).slice(1)).filter((v) => v.startsWith(typed));
      if (fits.length === 0) return undefined;
      return fits.reduce((a, b) => (b.length < a.length ? b : a)).slice(typed.length);
    }
    if (schema.pattern !== undefined || schema.format !== undefined) return undefined;
    const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
    const length = [...typed.replace(/\\u[0-9a-fA-F]{4}|\\./g, 'x')].length;
    return 'a'.repeat(Math.max(0, min - length)) + '"';
  }

  /** The shortest JSON text valid against `schema`; undefined when it cannot be known. */
  private minimal(schema: unknown, depth: number): string | undefined {
    if (depth > MAX_DEPTH) return undefined;
    const s = this.resolve(schema);
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) return shortest(s.enum.map((v) => JSON.stringify(v)));
    if (Array.isArray(s.anyOf)) return shortest(s.anyOf.map((m) => this.minimal(m, depth + 1)));
    const types = Array.isArray(s.type) ? (s.type as string[]) : s.type === undefined ? undefined : [s.type as string];
    if (!types) return 'properties' in s || 'required' in s ? `{${this.objectBody(s, undefined, depth, true) ?? ''}` : 'null';
    return shortest(types.map((type) => this.minimalOfType(s, type, depth)));
  }

  private minimalOfType(s: JsonSchema, type: string, depth: number): string | undefined {
    switch (type) {
      case 'null':
        return 'null';
      case 'boolean':
        return 'true';
      case 'integer':
      case 'number':
        return completeNumber('', s);
      case 'string': {
        if (typeof s.format === 'string') return FORMAT_EXAMPLES[s.format] === undefined ? undefined : JSON.stringify(FORMAT_EXAMPLES[s.format]);
        if (s.pattern !== undefined) return undefined;
        return `"${'a'.repeat(typeof s.minLength === 'number' ? s.minLength : 0)}"`;
      }
      case 'array': {
        const min = typeof s.minItems === 'number' ? s.minItems : 0;
        const items: string[] = [];
        for (let i = 0; i < min; i++) {
          const item = this.minimal(this.itemSchema(s, i), depth + 1);
          if (item === undefined) return undefined;
          items.push(item);
        }
        return `[${items.join(',')}]`;
      }
      case 'object': {
        const body = this.objectBody(s, undefined, depth, true);
        return body === undefined ? undefined : `{${body}`;
      }
      default:
        return undefined;
    }
  }
}

function kindOf(value: unknown): string {
  if (value === null || typeof value === 'boolean') return 'literal';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'string') return 'string';
  return Array.isArray(value) ? 'array' : 'object';
}

function shortest(options: Array<string | undefined>): string | undefined {
  let best: string | undefined;
  for (const o of options) if (o !== undefined && (best === undefined || o.length < best.length)) best = o;
  return best;
}

/** What completes a number's text `typed` ('' for a whole number) to the shortest value within the schema's bounds. */
function completeNumber(typed: string, schema: JsonSchema): string | undefined {
  const lower = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
  const upper = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : typeof schema.maximum === 'number' ? schema.maximum : Infinity;
  const within = (text: string) => /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text) && Number(text) >= lower && Number(text) <= upper;
  if (typed === '') {
    if (within('0')) return '0';
    return Number.isFinite(lower) ? String(Math.ceil(lower)) : Number.isFinite(upper) ? String(Math.floor(upper)) : undefined;
  }
  // The number so far, then digits appended until it is valid and within bounds.
  for (const tail of ['', '0', '00', '000', '0000']) if (within(typed + tail)) return tail;
  return undefined;
}

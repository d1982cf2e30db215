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
 * tokens against the grammar's mask and stops forcing at the first the grammar refuses. What the
 * schema allows at each point, and its shortest values, come from schema-minimum.ts.
 */
import type { JsonSchema } from './schema-subset.js';
import { completeNumber, isObject, SchemaMinimum } from './schema-minimum.js';

type Frame =
  | { kind: 'object'; schema: JsonSchema; keys: string[]; state: 'start' | 'key' | 'colon' | 'value' | 'after' }
  | { kind: 'array'; schema: JsonSchema; count: number; state: 'start' | 'value' | 'after' }
  | { kind: 'string'; schema: JsonSchema; isKey: boolean; text: string; escape: number }
  | { kind: 'number'; schema: JsonSchema; text: string }
  | { kind: 'literal'; text: string; word: string };

export class JsonCompletion {
  private readonly stack: Frame[] = [];
  private done = false;
  /** The text could not be followed (not the grammar's JSON): no completion is offered any more. */
  private lost = false;
  /** The schema's branches, parts and shortest values (schema-minimum.ts). */
  private readonly schemas: SchemaMinimum;

  constructor(private readonly root: JsonSchema) {
    this.schemas = new SchemaMinimum(root);
  }

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
    if (this.stack.length === 0) return this.schemas.minimal(this.root, 0);
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
          this.startValue(this.schemas.propertySchema(top.schema, top.keys.at(-1)!), c);
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
          const item = this.schemas.itemSchema(top.schema, top.count);
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
    const branch = this.schemas.branchFor(schema, kind);
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
        const rest = frame.isKey ? this.closeKey(this.stack[at - 1] as Extract<Frame, { kind: 'object' }>, typed) : this.schemas.closeString(frame.schema, typed);
        return rest === undefined ? undefined : escape + rest;
      }
      case 'object': {
        const inner = this.stack[at + 1];
        if (inner?.kind === 'string' && inner.isKey) return '}'; // the key's closing already added the rest
        if (frame.state === 'colon') return this.afterKey(frame, frame.keys.at(-1)!);
        if (frame.state === 'value') {
          const key = frame.keys.at(-1)!;
          if (inner) return this.restOfObject(frame, key);
          const value = this.schemas.minimal(this.schemas.propertySchema(frame.schema, key), at + 1);
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
        if (frame.state === 'start') return this.schemas.objectBody(frame.schema, undefined, at + 1, true);
        return this.restOfObject(frame, frame.keys.at(-1));
      }
      case 'array': {
        const inner = this.stack[at + 1];
        const min = typeof frame.schema.minItems === 'number' ? frame.schema.minItems : 0;
        let out = '';
        let count = frame.count;
        if (frame.state === 'value' && !inner) {
          const item = this.schemas.minimal(this.schemas.itemSchema(frame.schema, count), at + 1);
          if (item === undefined) return undefined;
          out += item;
          count++;
        }
        for (; count < min; count++) {
          const item = this.schemas.minimal(this.schemas.itemSchema(frame.schema, count), at + 1);
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
    const value = this.schemas.minimal(this.schemas.propertySchema(object.schema, name), this.stack.length);
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
      const value = this.schemas.minimal(this.schemas.propertySchema(object.schema, name), this.stack.length);
      if (value === undefined) return undefined;
      out += `,${JSON.stringify(name)}:${value}`;
    }
    return `${out}}`;
  }
}

/**
 * What a JSON schema allows, as JsonCompletion (json-completion.ts) needs it: which branch of an
 * anyOf a value follows, the schema of a property or an array item (through $ref and one-member
 * allOf), and the shortest JSON text valid against a schema, in the grammar's compact form
 * (properties in the schema's order). Undefined wherever that shortest text cannot be known.
 */
import { integerOnly, isGrammarNumber, safeIntegerBounds, type JsonSchema } from './schema-subset.js';
import { closeFormat, formatInstance, shortestMatch } from './string-completion.js';

export const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_DEPTH = 32;

export class SchemaMinimum {
  constructor(private readonly root: JsonSchema) {}

  private resolve(schema: unknown, depth = 0): JsonSchema {
    if (!isObject(schema)) return {};
    const ref = schema.$ref;
    if (typeof ref === 'string' && depth < MAX_DEPTH) {
      const [, group, name] = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref) ?? [];
      const defs = group ? this.root[group] : undefined;
      if (isObject(defs) && name !== undefined && Object.hasOwn(defs, name)) return this.resolve(defs[name], depth + 1);
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length === 1) return this.resolve(schema.allOf[0], depth + 1);
    return schema;
  }

  /** The branch of an anyOf (or type list) a value of this JSON kind follows: the first that allows the kind. */
  branchFor(schema: JsonSchema, kind: 'object' | 'array' | 'string' | 'number' | 'literal'): JsonSchema {
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

  propertySchema(schema: JsonSchema, key: string): JsonSchema {
    const props = isObject(schema.properties) ? schema.properties : {};
    if (Object.hasOwn(props, key)) return this.resolve(props[key]);
    return this.resolve(isObject(schema.additionalProperties) ? schema.additionalProperties : {});
  }

  itemSchema(schema: JsonSchema, index: number): JsonSchema {
    if (Array.isArray(schema.prefixItems) && index < schema.prefixItems.length) return this.resolve(schema.prefixItems[index]);
    return this.resolve(schema.items);
  }

  /** An object's required properties with minimal values (after `{`), and `}`. */
  objectBody(schema: JsonSchema, previous: string | undefined, depth: number, first: boolean): string | undefined {
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

  /** A string value written as far as `typed` (escapes included): the shortest valid rest of it, its closing quote included. */
  closeString(schema: JsonSchema, typed: string): string | undefined {
    const values = schema.const !== undefined ? [schema.const] : Array.isArray(schema.enum) ? schema.enum : undefined;
    if (values) {
      const fits = values.filter((v): v is string => typeof v === 'string').map((v) => JSON.stringify(v).slice(1)).filter((v) => v.startsWith(typed));
      if (fits.length === 0) return undefined;
      return fits.reduce((a, b) => (b.length < a.length ? b : a)).slice(typed.length);
    }
    if (typeof schema.format === 'string') {
      const rest = closeFormat(schema.format, typed);
      return rest === undefined ? undefined : `${rest}"`;
    }
    if (schema.pattern !== undefined) return typed === '' ? this.patternValue(schema)?.slice(1) : undefined;
    const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
    const length = [...typed.replace(/\\u[0-9a-fA-F]{4}|\\./g, 'x')].length;
    return 'a'.repeat(Math.max(0, min - length)) + '"';
  }

  /** The shortest JSON text valid against `schema`; undefined when it cannot be known. */
  minimal(schema: unknown, depth: number): string | undefined {
    if (depth > MAX_DEPTH) return undefined;
    const s = this.resolve(schema);
    if (s.const !== undefined) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) return shortest(s.enum.map((v) => JSON.stringify(v)));
    if (Array.isArray(s.anyOf)) return shortest(s.anyOf.map((m) => this.minimal(m, depth + 1)));
    const types = Array.isArray(s.type) ? (s.type as string[]) : s.type === undefined ? undefined : [s.type as string];
    if (!types) return 'properties' in s || 'required' in s ? `{${this.objectBody(s, undefined, depth, true) ?? ''}` : 'null';
    return shortest(types.map((type) => this.minimalOfType(s, type, depth)));
  }

  /** The shortest string a pattern matches, as JSON text, when the string's length bounds allow it. */
  private patternValue(s: JsonSchema): string | undefined {
    const value = typeof s.pattern === 'string' ? shortestMatch(s.pattern) : undefined;
    if (value === undefined) return undefined;
    const length = [...value].length;
    if ((typeof s.minLength === 'number' && length < s.minLength) || (typeof s.maxLength === 'number' && length > s.maxLength)) return undefined;
    return JSON.stringify(value);
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
        if (typeof s.format === 'string') {
          const instance = formatInstance(s.format);
          return instance === undefined ? undefined : JSON.stringify(instance);
        }
        if (s.pattern !== undefined) return this.patternValue(s);
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

/**
 * What completes a number's text `typed` ('' for a whole number) to the shortest value within the
 * schema's bounds, written as the grammar writes numbers (schema-subset.ts NUMBER_DIGITS: bounded
 * digits and exponent; an integer safe, and never `-0`).
 */
export function completeNumber(typed: string, schema: JsonSchema): string | undefined {
  const integer = integerOnly(schema);
  let lower = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : typeof schema.minimum === 'number' ? schema.minimum : -Infinity;
  let upper = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : typeof schema.maximum === 'number' ? schema.maximum : Infinity;
  if (integer) ({ minimum: lower, maximum: upper } = safeIntegerBounds(schema));
  const within = (text: string) => isGrammarNumber(text, integer) && Number(text) >= lower && Number(text) <= upper;
  if (typed === '') {
    if (within('0')) return '0';
    const edge = Number.isFinite(lower) ? String(Math.ceil(lower)) : Number.isFinite(upper) ? String(Math.floor(upper)) : undefined;
    return edge !== undefined && within(edge) ? edge : undefined;
  }
  // The number so far, then digits appended until it is valid and within bounds ('1': an integer's `-`).
  for (const tail of ['', '0', '1', '00', '000', '0000']) if (within(typed + tail)) return tail;
  return undefined;
}

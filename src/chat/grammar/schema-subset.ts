/**
 * The JSON Schema subset the grammar expresses exactly, checked before a schema reaches the grammar
 * compiler (./xgrammar.ts): what it would silently ignore or get wrong is found here, by keyword and
 * path. A schema the client requires to hold (an output format, a strict tool) is refused with the
 * first such feature; any other tool's schema is relaxed instead: the feature's keyword is dropped,
 * which only widens what validates, so the call still parses and the request keeps working.
 *
 * Expressed exactly (probed against XGrammar 0.1.27's converter): type (one or several), properties,
 * required, additionalProperties, items, prefixItems, minItems, maxItems, enum, const, anyOf, allOf
 * with one member, local $ref to $defs / definitions (recursion included), string pattern, minLength,
 * maxLength and the formats in FORMATS, integer minimum / maximum (exclusive too) that leave some safe
 * integer. Annotations and unknown keywords are ignored as JSON Schema itself ignores them.
 *
 * Numbers are the grammar's own subset of JSON's (see NUMBER_DIGITS): those a client's parser reads
 * back as written.
 */

import { unsupportedRegex } from './regex-subset.js';

export type JsonSchema = Record<string, unknown>;

/**
 * The digits of a number the grammar writes (./xgrammar.ts) and the budget rule completes
 * (./schema-minimum.ts). JSON bounds neither digits nor exponent, nor do XGrammar's rules
 * (`[0-9]*`), so a weak model could write `-35e70984098409…`, which every client's parser reads as
 * -Infinity (and the server's own JSON.stringify of a tool input it parsed writes as null). Here:
 * at most 17 integer digits (all a double holds), 17 fraction digits (the most a double's shortest
 * round-trip form needs) and a two-digit exponent, so |value| < 1e17 × 1e99: always finite.
 * Integers stay within ±MAX_SAFE_INTEGER, where a double holds each one exactly.
 */
export const NUMBER_DIGITS = { integer: 17, fraction: 17, exponent: 2 } as const;
export const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

const NUMBER_TEXT = new RegExp(
  `^-?(0|[1-9][0-9]{0,${NUMBER_DIGITS.integer - 1}})(\\.[0-9]{1,${NUMBER_DIGITS.fraction}})?([eE][+-]?[0-9]{1,${NUMBER_DIGITS.exponent}})?$`,
);
const INTEGER_TEXT = new RegExp(`^(0|-?[1-9][0-9]{0,${String(MAX_SAFE_INTEGER).length - 1}})$`);

/** `text` is a whole number as the grammar writes it: an integer (no `-0`) when `integer`, else any number. */
export function isGrammarNumber(text: string, integer: boolean): boolean {
  return integer ? INTEGER_TEXT.test(text) && Number.isSafeInteger(Number(text)) : NUMBER_TEXT.test(text);
}

/** The schema takes integers only (its value, when a number, is written as an integer). */
export function integerOnly(schema: JsonSchema): boolean {
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  return types.includes('integer') && !types.includes('number');
}

/** An integer schema's bounds as inclusive integers within ±MAX_SAFE_INTEGER (minimum > maximum: none fits). */
export function safeIntegerBounds(schema: JsonSchema): { minimum: number; maximum: number } {
  const bound = (key: string) => (typeof schema[key] === 'number' && Number.isFinite(schema[key]) ? (schema[key] as number) : undefined);
  const lower = [-MAX_SAFE_INTEGER];
  const upper = [MAX_SAFE_INTEGER];
  if (bound('minimum') !== undefined) lower.push(Math.ceil(bound('minimum')!));
  if (bound('exclusiveMinimum') !== undefined) lower.push(Math.floor(bound('exclusiveMinimum')!) + 1);
  if (bound('maximum') !== undefined) upper.push(Math.floor(bound('maximum')!));
  if (bound('exclusiveMaximum') !== undefined) upper.push(Math.ceil(bound('exclusiveMaximum')!) - 1);
  return { minimum: Math.max(...lower), maximum: Math.min(...upper) };
}

/**
 * `schema` (a copy) with each bounded integer schema bounded on both sides, inclusively, within
 * ±MAX_SAFE_INTEGER, for the grammar compiler: XGrammar then writes the exact range. Its one-sided
 * ranges have no digit limit (`[1-9] [0-9]*`), and the one for a negative minimum is wrong
 * (`minimum: -5` gave `"-" ( )`: a bare minus sign, and no negative number). An integer without
 * bounds is left as it is: its rule is bounded once for all in the grammar (./xgrammar.ts), which
 * compiles far faster than an exact range written out for each such property. An array whose
 * minItems needs items beyond its prefixItems gets `items: {}` where it names none (see below).
 */
export function withSafeIntegers(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withSafeIntegers);
  if (!isObject(schema)) return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    // No keyword: assigned, it would set the copy's prototype (the client's object) instead.
    if (key === '__proto__') continue;
    if (SUBSCHEMA_MAPS.includes(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withSafeIntegers(sub)]));
    else if (SUBSCHEMA_LISTS.includes(key) || SUBSCHEMAS.includes(key)) out[key] = withSafeIntegers(value);
    else out[key] = value;
  }
  // The converter's strict mode reads an array without `items` as one without more items than its
  // prefixItems (items: false) and aborts on a minItems beyond them; JSON Schema allows any item there.
  const fixedItems = Array.isArray(out.prefixItems) ? out.prefixItems.length : 0;
  if (out.items === undefined && typeof out.minItems === 'number' && out.minItems > fixedItems) out.items = {};
  const bounded = NUMBER_BOUNDS.some((k) => out[k] !== undefined);
  const numeric = NUMBER_BOUNDS.every((k) => out[k] === undefined || (typeof out[k] === 'number' && Number.isFinite(out[k])));
  if (out.type === 'integer' && bounded && numeric && out.enum === undefined && out.const === undefined) {
    const { minimum, maximum } = safeIntegerBounds(out);
    delete out.exclusiveMinimum;
    delete out.exclusiveMaximum;
    Object.assign(out, { minimum, maximum });
  }
  return out;
}

/**
 * `schema` with the length and item counts no output of `reach` characters can meet made equivalent
 * and cheap: a `maxLength` / `maxItems` of `reach` or more can never bind (every string and every item
 * takes a character of the output), so it goes; a `minLength` / `minItems` above `reach` can never be
 * met, so it becomes `reach + 1`, which cannot either (the grammar then allows the same tokens at
 * every step the output can take). XGrammar's compile of a bounded repetition costs about a second
 * per 20 states on a 152k vocabulary, up to 9 s at 200 and more (web-xgrammar 0.1.27, measured
 * here), and blocks the model's thread meanwhile.
 */
export function withinReach(schema: unknown, reach: number): unknown {
  if (Array.isArray(schema)) return schema.map((s) => withinReach(s, reach));
  if (!isObject(schema)) return schema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '__proto__') continue;
    if (SUBSCHEMA_MAPS.includes(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withinReach(sub, reach)]));
    else if (SUBSCHEMA_LISTS.includes(key) || SUBSCHEMAS.includes(key)) out[key] = withinReach(value, reach);
    else if ((key === 'maxLength' || key === 'maxItems') && typeof value === 'number' && value >= reach) continue;
    else if ((key === 'minLength' || key === 'minItems') && typeof value === 'number' && value > reach) out[key] = reach + 1;
    else out[key] = value;
  }
  return out;
}

export interface SchemaFeature {
  /** JSON pointer of the subschema, '' for the root. */
  path: string;
  /** The keyword (with its value where that is what matters, e.g. `format: "iri"`). */
  feature: string;
}

/** String formats the converter turns into a grammar (others it would ignore). */
const FORMATS = new Set([
  'date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid',
  'uri', 'uri-reference', 'uri-template', 'json-pointer', 'relative-json-pointer',
]);

/** Keywords with an effect the converter does not express (ignored, or wrong, or it aborts). */
const UNSUPPORTED = new Set([
  'not', 'if', 'then', 'else', 'oneOf', 'dependentRequired', 'dependentSchemas', 'dependencies',
  'patternProperties', 'propertyNames', 'minProperties', 'maxProperties', 'uniqueItems', 'contains',
  'minContains', 'maxContains', 'multipleOf', 'unevaluatedProperties', 'unevaluatedItems',
  'additionalItems', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef',
]);

const NUMBER_BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];

export const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);
export const pointer = (path: string, ...keys: Array<string | number>) => path + keys.map((k) => `/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** Where a keyword's value holds subschemas, and how. */
export const SUBSCHEMA_MAPS = ['properties', '$defs', 'definitions'];
export const SUBSCHEMA_LISTS = ['prefixItems', 'anyOf', 'allOf'];
export const SUBSCHEMAS = ['items', 'additionalProperties'];
/**
 * How deep subschemas may nest: far beyond any real schema, and well within what the grammar
 * compiler's recursion (and this file's) takes. Deeper is refused (./schema-problems.ts).
 */
export const MAX_SCHEMA_DEPTH = 64;

/** The features of `schema` the grammar cannot express, in document order (empty: exact). */
export function unsupportedFeatures(schema: unknown): SchemaFeature[] {
  const found: SchemaFeature[] = [];
  walk(schema, '', (node, path) => {
    for (const [key, value] of Object.entries(node)) {
      const feature = featureOf(node, key, value);
      if (feature) found.push({ path, feature });
    }
  });
  return found;
}

/** The keyword `key` of `node` as an unsupported feature, or undefined when the grammar expresses it. */
function featureOf(node: JsonSchema, key: string, value: unknown): string | undefined {
  if (UNSUPPORTED.has(key)) {
    if (key === 'uniqueItems' && value === false) return undefined;
    return key;
  }
  if (key === 'format' && typeof value === 'string' && (node.type === undefined || node.type === 'string' || (Array.isArray(node.type) && node.type.includes('string'))) && !FORMATS.has(value)) {
    return `format: ${JSON.stringify(value).slice(0, 64)}`;
  }
  if (key === 'allOf' && Array.isArray(value) && value.length > 1) return 'allOf with more than one schema';
  if (key === '$ref' && !(typeof value === 'string' && /^#\/(\$defs|definitions)\/[^/]+$/.test(value))) return `$ref: ${JSON.stringify(value).slice(0, 64)} (only #/$defs/… and #/definitions/… references)`;
  if (key === 'pattern' && typeof value === 'string') {
    const construct = unsupportedRegex(value);
    if (construct) return `pattern: ${construct}`;
  }
  if (NUMBER_BOUNDS.includes(key) && node.type !== 'integer') return `${key} on a non-integer number`;
  if (NUMBER_BOUNDS.includes(key) && typeof value === 'number' && beyondSafeIntegers(key, value)) return `${key} beyond the safe integers (±${MAX_SAFE_INTEGER})`;
  return undefined;
}

/** An integer bound no safe integer satisfies (the grammar writes only safe integers). */
function beyondSafeIntegers(key: string, value: number): boolean {
  const { minimum, maximum } = safeIntegerBounds({ [key]: value });
  return minimum > maximum;
}

/**
 * Visits `schema` and each subschema the supported keywords hold (depth-first, document order), to
 * MAX_SCHEMA_DEPTH levels below the root (./schema-problems.ts refuses what lies deeper).
 */
export function walk(schema: unknown, path: string, visit: (node: JsonSchema, path: string, depth: number) => void, depth = 0): void {
  if (!isObject(schema) || depth > MAX_SCHEMA_DEPTH) return;
  visit(schema, path, depth);
  for (const [key, value] of Object.entries(schema)) {
    if (SUBSCHEMA_MAPS.includes(key) && isObject(value)) for (const [name, sub] of Object.entries(value)) walk(sub, pointer(path, key, name), visit, depth + 1);
    else if (SUBSCHEMA_LISTS.includes(key) && Array.isArray(value)) value.forEach((sub, i) => walk(sub, pointer(path, key, i), visit, depth + 1));
    else if (SUBSCHEMAS.includes(key)) walk(value, pointer(path, key), visit, depth + 1);
  }
}

/** Keywords a compile can still refuse for their values (a regex it cannot parse, min above max). */
const VALUE_CHECKED = ['pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'enum', 'const'];

/** A keyword's problem as ./schema-problems.ts finds it (the reason), or undefined. */
export type KeywordCheck = (node: JsonSchema, key: string, value: unknown) => string | undefined;

/**
 * `schema` with every unsupported feature's keyword removed (oneOf becomes anyOf, its widening):
 * every value the original accepts, the relaxed one accepts. The features removed are returned too.
 * `loose`: also the keywords in VALUE_CHECKED, for a schema whose relaxed form the compiler refused.
 * `problem`: keywords it names are removed too (a keyword the compiler would refuse for its value);
 * a `false` subschema (no value) becomes `{}`, and subschemas nested deeper than MAX_SCHEMA_DEPTH `{}`.
 */
export function relaxSchema(schema: JsonSchema, loose = false, problem?: KeywordCheck): { schema: JsonSchema; relaxed: SchemaFeature[] } {
  const relaxed: SchemaFeature[] = [];
  const copy = (node: unknown, path: string, depth = 0): unknown => {
    if (problem && (node === false || (isObject(node) && depth > MAX_SCHEMA_DEPTH))) {
      relaxed.push({ path, feature: node === false ? 'false' : `nesting deeper than ${MAX_SCHEMA_DEPTH}` });
      return {};
    }
    if (!isObject(node)) return node;
    const out: JsonSchema = {};
    const sub = (value: unknown, ...keys: Array<string | number>) => copy(value, pointer(path, ...keys), depth + 1);
    for (const [key, value] of Object.entries(node)) {
      if (key === '__proto__') continue; // no keyword (see withSafeIntegers)
      const feature = featureOf(node, key, value) ?? (loose && VALUE_CHECKED.includes(key) ? key : undefined) ?? (problem?.(node, key, value) !== undefined ? key : undefined);
      if (feature) relaxed.push({ path, feature });
      if (feature && key === 'oneOf' && Array.isArray(value)) {
        if (!Object.hasOwn(node, 'anyOf')) out.anyOf = value.map((member, i) => sub(member, 'oneOf', i));
        continue;
      }
      if (feature) continue;
      if (SUBSCHEMA_MAPS.includes(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([name, member]) => [name, sub(member, key, name)]));
      else if (SUBSCHEMA_LISTS.includes(key) && Array.isArray(value)) out[key] = value.map((member, i) => sub(member, key, i));
      else if (SUBSCHEMAS.includes(key)) out[key] = value === false ? false : sub(value, key); // `false` here is meaningful: no more items or properties
      else out[key] = value;
    }
    return out;
  };
  return { schema: copy(schema, '') as JsonSchema, relaxed };
}

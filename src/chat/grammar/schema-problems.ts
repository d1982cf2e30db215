/**
 * Schemas no value satisfies, or that are not valid JSON Schema, found before they reach the grammar
 * compiler: `minimum` above `maximum`, `minLength` above `maxLength`, an empty `enum`, a `pattern`
 * that is no regular expression, a `$ref` to no definition, a keyword of the wrong type, absurd
 * bounds. XGrammar (0.1.27, WebAssembly) answers each of these by aborting the compile, and every
 * abort leaks part of its instance's stack: after a few dozen, every later compile on that instance
 * fails (`memory access out of bounds`) for every client. So what it would abort on is refused here,
 * by keyword, path and reason (the client's fault: a 400), and ./xgrammar.ts replaces its instance
 * after any failure that still gets through.
 *
 * Each problem belongs to one keyword, so that a tool schema that is not strict can drop that
 * keyword instead (schema-subset.ts relaxSchema), as it drops the features the grammar cannot express.
 */
import { invalidRegex } from './regex-subset.js';
import {
  isObject,
  MAX_SCHEMA_DEPTH,
  safeIntegerBounds,
  SUBSCHEMA_LISTS,
  SUBSCHEMA_MAPS,
  SUBSCHEMAS,
  walk,
  type JsonSchema,
  type SchemaFeature,
} from './schema-subset.js';

export interface SchemaProblem extends SchemaFeature {
  /** Why no value satisfies it, or why it is not a schema: a sentence for the client. */
  problem: string;
}

/**
 * The largest length or item count a schema may name. Counts the request's output cannot reach are
 * made cheap before the compile (./schema-subset.ts withinReach); one it can reach costs the compile
 * time (here, 2 cores: a minLength of 1,000,000 about 35 s, of 100,000 about 5 s).
 */
export const MAX_COUNT = 1_000_000;

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const COUNTS = ['minLength', 'maxLength', 'minItems', 'maxItems'];
const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const show = (value: unknown) => JSON.stringify(value)?.slice(0, 64) ?? String(value);

/** The problems of `schema`, in document order (empty: the compiler can take it). */
export function schemaProblems(schema: unknown): SchemaProblem[] {
  if (!isObject(schema)) return [{ path: '', feature: 'schema', problem: `the schema must be an object, not ${show(schema)}` }];
  const root = schema;
  const found: SchemaProblem[] = [];
  walk(schema, '', (node, path, depth) => {
    if (depth === MAX_SCHEMA_DEPTH) {
      const nested = [...SUBSCHEMA_MAPS, ...SUBSCHEMA_LISTS, ...SUBSCHEMAS].find((key) => typeof node[key] === 'object' && node[key] !== null && Object.hasOwn(node, key));
      if (nested) found.push({ path, feature: nested, problem: `subschemas nest deeper than ${MAX_SCHEMA_DEPTH} levels` });
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      const problem = keywordProblem(node, key, value, root);
      if (problem) found.push({ path, feature: key, problem });
    }
  });
  return found;
}

/**
 * What is wrong with keyword `key` of `node` (a subschema of `root`), or undefined. Unknown keywords
 * and annotations are not looked at: JSON Schema ignores them, and so does the grammar.
 */
export function keywordProblem(node: JsonSchema, key: string, value: unknown, root: JsonSchema): string | undefined {
  if (key === 'type') return typeProblem(value);
  if (SUBSCHEMA_MAPS.includes(key)) {
    if (!isObject(value)) return `${key} must be an object of schemas, not ${show(value)}`;
    const bad = Object.entries(value).find(([, sub]) => !isSchema(sub) || sub === false);
    return bad && `${key}.${bad[0]} must be a schema that some value satisfies (an object or true), not ${show(bad[1])}`;
  }
  if (SUBSCHEMA_LISTS.includes(key)) {
    if (!Array.isArray(value) || (key !== 'prefixItems' && value.length === 0)) return `${key} must be a non-empty array of schemas`;
    const at = value.findIndex((sub) => !isSchema(sub) || (key !== 'prefixItems' && sub === false));
    return at < 0 ? undefined : `${key}[${at}] must be a schema (an object or a boolean), not ${show(value[at])}`;
  }
  if (SUBSCHEMAS.includes(key)) return isSchema(value) ? undefined : `${key} must be a schema (an object or a boolean), not ${show(value)}`;
  if (key === 'required') return requiredProblem(node, value);
  if (key === 'enum' || key === 'const') return valuesProblem(node, key, value);
  if (key === 'pattern') {
    if (typeof value !== 'string') return `pattern must be a string, not ${show(value)}`;
    const why = invalidRegex(value);
    return why && `pattern ${show(value)} is not a valid regular expression: ${why}`;
  }
  if (key === 'format') return typeof value === 'string' ? undefined : `format must be a string, not ${show(value)}`;
  if (key === '$ref') return refProblem(value, root);
  if (COUNTS.includes(key)) return countProblem(node, key, value);
  if (BOUNDS.includes(key)) return boundProblem(node, key, value);
  return undefined;
}

const isSchema = (value: unknown) => isObject(value) || typeof value === 'boolean';

function typeProblem(value: unknown): string | undefined {
  const types = Array.isArray(value) ? value : [value];
  const bad = types.find((t) => typeof t !== 'string' || !TYPES.has(t));
  return bad === undefined ? undefined : `type ${show(bad)} is not a JSON Schema type (${[...TYPES].join(', ')})`;
}

/** The schema's types, or undefined when it names none. */
function typesOf(node: JsonSchema): string[] | undefined {
  if (node.type === undefined || typeProblem(node.type)) return undefined;
  return Array.isArray(node.type) ? (node.type as string[]) : [node.type as string];
}

function requiredProblem(node: JsonSchema, value: unknown): string | undefined {
  if (!Array.isArray(value) || value.some((name) => typeof name !== 'string')) return 'required must be an array of property names';
  if (node.additionalProperties !== false) return undefined;
  const properties = isObject(node.properties) ? node.properties : {};
  const missing = (value as string[]).find((name) => !Object.hasOwn(properties, name));
  return missing === undefined ? undefined : `required names ${show(missing)}, which additionalProperties: false forbids (it is not in properties): no object satisfies the schema`;
}

function valuesProblem(node: JsonSchema, key: 'enum' | 'const', value: unknown): string | undefined {
  const values = key === 'const' ? [value] : value;
  if (!Array.isArray(values) || values.length === 0) return 'enum must be a non-empty array: no value satisfies an empty enum';
  const types = typesOf(node);
  if (!types || values.some((v) => types.some((t) => ofType(v, t)))) return undefined;
  return `no value of ${key} is of type ${types.join(' or ')}: no value satisfies the schema`;
}

function ofType(value: unknown, type: string): boolean {
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'null') return value === null;
  if (type === 'array') return Array.isArray(value);
  if (type === 'object') return isObject(value);
  return typeof value === type;
}

function refProblem(value: unknown, root: JsonSchema): string | undefined {
  const [, group, name] = typeof value === 'string' ? (/^#\/(\$defs|definitions)\/([^/]+)$/.exec(value) ?? []) : [];
  // Other forms are a feature the grammar does not express (schema-subset.ts), not a problem.
  if (group === undefined || name === undefined) return undefined;
  const defs = root[group];
  const decoded = name.replace(/~1/g, '/').replace(/~0/g, '~');
  return isObject(defs) && Object.hasOwn(defs, decoded) ? undefined : `$ref ${show(value)} names no definition in the schema's ${group}`;
}

function countProblem(node: JsonSchema, key: string, value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_COUNT) return `${key} must be an integer from 0 to ${MAX_COUNT}, not ${show(value)}`;
  const kind = key.endsWith('Length') ? 'Length' : 'Items';
  const max = node[`max${kind}`];
  if (key === `min${kind}` && typeof max === 'number' && value > max) return `min${kind} (${value}) is above max${kind} (${max}): no value satisfies the schema`;
  if (key === 'minItems' && node.items === false) {
    const fixed = Array.isArray(node.prefixItems) ? node.prefixItems.length : 0;
    if (value > fixed) return `minItems (${value}) is above the ${fixed} prefixItems, and items: false allows no more: no array satisfies the schema`;
  }
  return undefined;
}

function boundProblem(node: JsonSchema, key: string, value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value)) return `${key} must be a number, not ${show(value)}`;
  // Bounds on other numbers are a feature the grammar does not express (schema-subset.ts); so are integer bounds beyond the safe integers.
  if (node.type !== 'integer' || !key.startsWith('min') && !key.startsWith('exclusiveMin')) return undefined;
  if (BOUNDS.some((k) => node[k] !== undefined && (typeof node[k] !== 'number' || !Number.isFinite(node[k])))) return undefined;
  const { minimum, maximum } = safeIntegerBounds(node);
  const lowerOnly = safeIntegerBounds({ [key]: value });
  if (minimum <= maximum || lowerOnly.minimum > lowerOnly.maximum) return undefined;
  return `${key} (${value}) leaves no integer at or below the maximum (${maximum}): no value satisfies the schema`;
}

/**
 * Body validation shared by both dialects: a zod schema either yields the typed body or a 400 that
 * names the field at fault and says what was expected and what came ("model: expected a string,
 * got a number"), the way the real APIs word it. Nothing here recurses over the client's value:
 * nesting depth is checked first, iteratively, and values echoed in messages are described with a
 * bounded length.
 */
import type { z } from 'zod';
import { clip } from '../../core/errors.js';
import { invalidRequest } from './errors.js';

export interface ParseOptions {
  /** The dialect's wording for unknown fields. */
  unknownKeys?: (keys: string[]) => string;
}

/** Unknown fields an error message names at most. */
const MAX_KEYS_NAMED = 10;

/** Deepest nesting of objects and arrays a body may have (a tool's JSON Schema rarely passes 20). */
export const MAX_BODY_DEPTH = 64;

const defaultUnknownKeys = (keys: string[]) => `${keys.join(', ')}: Extra inputs are not permitted`;

export function parseBody<S extends z.ZodType>(schema: S, body: unknown, options: ParseOptions = {}): z.infer<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest(`The request body must be a JSON object, not ${describeValue(body)}.`);
  }
  if (depthExceeds(body, MAX_BODY_DEPTH)) {
    throw invalidRequest(`The request body is nested more than ${MAX_BODY_DEPTH} levels deep; the server accepts at most ${MAX_BODY_DEPTH}.`);
  }
  return parseField(schema, body, [], options);
}

/**
 * `value` (the body's field at `at`, already within the body's depth) as `schema` reads it, or a 400
 * naming the field at fault from the body's root: for a field a converter checks against one form
 * of a union once it knows which form the client meant (a tool choice of type "function").
 */
export function parseField<S extends z.ZodType>(schema: S, value: unknown, at: Array<string | number>, options: ParseOptions = {}): z.infer<S> {
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  // Paths and keys are the client's strings: each clipped, and only the first few keys named.
  const where = [...at, ...issue.path].map((p) => clip(String(p), 64)).join('.');
  const keys = issue.code === 'unrecognized_keys' ? issue.keys.slice(0, MAX_KEYS_NAMED).map((k) => clip(k, 64)) : [];
  const message = issue.code === 'unrecognized_keys'
    ? (options.unknownKeys ?? defaultUnknownKeys)([...keys.map((k) => (where ? `${where}.${k}` : k)), ...(issue.keys.length > MAX_KEYS_NAMED ? [`(${issue.keys.length - MAX_KEYS_NAMED} more)`] : [])])
    : `${where || 'body'}: ${describeIssue(issue)}`;
  throw invalidRequest(message, where || undefined);
}

/** True when objects/arrays nest deeper than `limit` (iterative: a hostile body cannot overflow the stack). */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'Field required';
    return `expected ${article(issue.expected)}, got ${describeValue(issue.input)}`;
  }
  if (issue.code === 'invalid_value') return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${describeValue(issue.input)}`;
  if (issue.code === 'invalid_union') return `got ${describeValue(issue.input)}, which matches none of the accepted forms`;
  return issue.message;
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** A short, safe description of any JSON value for an error message: its type, and small scalars themselves. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return `an array of ${value.length} item${value.length === 1 ? '' : 's'}`;
  switch (typeof value) {
    case 'string':
      return value.length <= 40 ? `the string ${JSON.stringify(value)}` : `a string of ${value.length} characters`;
    case 'number':
      return Number.isInteger(value) ? `the integer ${value}` : `the number ${value}`;
    case 'boolean':
      return `the boolean ${value}`;
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

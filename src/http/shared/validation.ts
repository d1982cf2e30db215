/**
 * Body validation shared by both dialects: a zod schema either yields the typed body or a 400 that
 * names the field at fault, the way the real APIs word it ("messages.0.content: ...").
 */
import type { z } from 'zod';
import { invalidRequest } from './errors.js';

export interface ParseOptions {
  /** The dialect's wording for unknown fields. */
  unknownKeys?: (keys: string[]) => string;
}

const defaultUnknownKeys = (keys: string[]) => `${keys.join(', ')}: Extra inputs are not permitted`;

export function parseBody<S extends z.ZodType>(schema: S, body: unknown, options: ParseOptions = {}): z.infer<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object.');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.map(String).join('.');
  const message = issue.code === 'unrecognized_keys'
    ? (options.unknownKeys ?? defaultUnknownKeys)(issue.keys.map((k) => (where ? `${where}.${k}` : k)))
    : `${where || 'body'}: ${describeIssue(issue)}`;
  throw invalidRequest(message, where || undefined);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'Field required';
  return issue.message;
}

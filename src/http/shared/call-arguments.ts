/**
 * A tool call's `arguments` as the OpenAI dialects send them back (chat completions' tool_calls,
 * Responses' function_call items): a JSON object written as a string.
 */
import { clip } from '../../core/errors.js';
import { invalidRequest } from './errors.js';

/** The call's input; an empty string means no arguments; anything but a JSON object is a 400 at `where`. */
export function callArguments(text: string, where: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidRequest(`${where}: not valid JSON (${clip(text, 64)})`, where);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidRequest(`${where}: must be a JSON object`, where);
  return value as Record<string, unknown>;
}

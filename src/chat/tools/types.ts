/**
 * The neutral vocabulary of tool calling below src/http: a tool as the model needs it, and what the
 * tool-call parser hands back. No wire shapes here: the dialect renderers name these.
 */

export { TOOL_FORMATS, type ToolFormat } from '../../models/template-features.js';
export type { ToolSpec } from '../../core/types.js';

/** A JSON Schema object, as the client sent it (not validated here). */
export type JsonSchema = Record<string, unknown>;

/**
 * What the parser yields, in the order of the generated text.
 * - text: free text; never contains the markup of a call it recognised.
 * - call: one complete call to a known tool, its input an object.
 * - invalid_call: markup that opened a call but did not parse (malformed, unterminated, unknown
 *   tool). `raw` is the exact text it covered (with any whitespace just before it); the caller
 *   shows it as text, so no generated character is lost.
 */
export type ToolEvent =
  | { type: 'text'; text: string }
  /** The model's thought, from a format whose parser reads thoughts too (harmony's analysis channel). */
  | { type: 'thinking'; text: string }
  | { type: 'call'; name: string; input: Record<string, unknown> }
  | { type: 'invalid_call'; raw: string; reason: string };

/** Reads a family's calls out of the answer's text as it streams (./parser.ts makes one per format). */
export interface ToolCallParser {
  /** Feeds one decoded delta; returns the events it completes (often none). */
  push(text: string): ToolEvent[];
  /** The generation ended: flushes held text and any open call. */
  finish(): ToolEvent[];
}

/**
 * The neutral vocabulary of tool calling below src/http: a tool as the model needs it, and what the
 * tool-call parser hands back. No wire shapes here: the dialect renderers name these.
 */

/**
 * The wire formats a model writes its tool calls in. Chosen per model from its chat template
 * (family.ts); each has one incremental parser (parser.ts).
 * - hermes: `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Qwen2.5, Qwen3, Hermes 2/3).
 * - qwen3-xml: `<tool_call><function=NAME><parameter=P>value</parameter>…</function></tool_call>`
 *   (Qwen3-Coder, Qwen3.5); values are text, typed by the tool's JSON Schema.
 * - llama3-json: a bare `{"name": …, "parameters": {…}}` object at the start of the reply, optionally
 *   after `<|python_tag|>`, several separated by `;` (Llama 3.1/3.2/3.3).
 * - generic: the template knows no tools; the server describes them in the system prompt
 *   (genericToolPrompt) and the model answers in the hermes form.
 */
export const TOOL_FORMATS = ['hermes', 'qwen3-xml', 'llama3-json', 'generic'] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

/** A JSON Schema object, as the client sent it (not validated here). */
export type JsonSchema = Record<string, unknown>;

/** A tool the model may call. Only `name` and `inputSchema` matter to the parser. */
export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the call's input (an object schema). qwen3-xml types parameter values by it. */
  inputSchema?: JsonSchema;
}

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
  | { type: 'call'; name: string; input: Record<string, unknown> }
  | { type: 'invalid_call'; raw: string; reason: string };

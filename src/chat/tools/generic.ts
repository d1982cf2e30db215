/**
 * The one tool-call format the server teaches a model whose chat template knows no tools: the tools
 * described in the system prompt, calls and results written into the history as text in the same
 * form the parser reads back (the hermes form).
 */
import type { ToolSpec } from '../../core/types.js';
import type { ToolFormat } from './types.js';

/**
 * The system-prompt section that teaches a model without native tool support (generic format) to
 * call tools. The server appends it to the system prompt (after the client's system text and a
 * blank line); the parser reads the answer in the same `<tool_call>` form as hermes. The text is a
 * pure function of `tools` (same tools, same bytes: prefix caches keep working):
 *
 *   # Tools
 *
 *   You can call tools to help with the user's request. Each tool is described by one JSON object
 *   per line inside <tools></tools>:
 *   <tools>
 *   {"name": NAME, "description": DESCRIPTION, "parameters": INPUT_SCHEMA}   (one line per tool,
 *   </tools>                                                                 description omitted
 *                                                                            when absent)
 *   To call a tool, write a JSON object with the tool's name and its arguments inside
 *   <tool_call></tool_call> tags, exactly like this:
 *   <tool_call>
 *   {"name": "tool_name", "arguments": {"argument_name": "value"}}
 *   </tool_call>
 *   To call several tools, write one <tool_call></tool_call> block per call, one after another.
 *   After your last call, stop: the results come back in the next turn inside
 *   <tool_response></tool_response> tags. If no tool is needed, answer normally without any
 *   <tool_call> tag.
 *
 * The schema key is `parameters` and the call key `arguments`: the words of the OpenAI-style tool
 * lists models are trained on, and of the Qwen/Hermes prompt this follows, whatever the client's
 * dialect calls them. Schema keys keep the client's order. Text inside a description is written as
 * it is (JSON.stringify does not escape `<`); the parser only ever reads the model's reply.
 */
export function genericToolPrompt(tools: readonly ToolSpec[]): string {
  return [
    ...toolList(tools),
    '',
    "To call a tool, write a JSON object with the tool's name and its arguments inside <tool_call></tool_call> tags, exactly like this:",
    '<tool_call>',
    '{"name": "tool_name", "arguments": {"argument_name": "value"}}',
    '</tool_call>',
    'To call several tools, write one <tool_call></tool_call> block per call, one after another. ' +
      'After your last call, stop: the results come back in the next turn inside <tool_response></tool_response> tags. ' +
      'If no tool is needed, answer normally without any <tool_call> tag.',
  ].join('\n');
}

/** The tools, one JSON object per line, under a heading. */
function toolList(tools: readonly ToolSpec[]): string[] {
  const lines = tools.map((tool) =>
    JSON.stringify({
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.inputSchema ?? { type: 'object', properties: {} },
    }),
  );
  return [
    '# Tools',
    '',
    "You can call tools to help with the user's request. Each tool is described by one JSON object per line inside <tools></tools>:",
    '<tools>',
    ...lines,
    '</tools>',
  ];
}

/**
 * A call as the families whose templates render calls but never describe tools write it (DeepSeek
 * R1 and V3.1, as their templates render an earlier call): the example of nativeToolPrompt.
 */
const NATIVE_EXAMPLES: Partial<Record<ToolFormat, string>> = {
  'deepseek-r1': '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>tool_name\n```json\n{"argument_name": "value"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
  'deepseek-v3.1': '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_name<｜tool▁sep｜>{"argument_name": "value"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
};

/**
 * The system-prompt section for a model whose template renders calls in its family's form but has
 * no place for the tools themselves: the same tool list as genericToolPrompt, then that form as the
 * example (the parser reads it back in that form). A pure function of its arguments.
 */
export function nativeToolPrompt(tools: readonly ToolSpec[], format: ToolFormat): string {
  const example = NATIVE_EXAMPLES[format];
  if (example === undefined) return genericToolPrompt(tools);
  return [
    ...toolList(tools),
    '',
    "To call a tool, write its name and its arguments as a JSON object exactly in this form:",
    example,
    'After your last call, stop: the results come back in the next turn. If no tool is needed, answer normally.',
  ].join('\n');
}

/**
 * An earlier call, as the generic format writes it in an assistant turn of the history (the same
 * form the model was asked to produce, so the parser would read it back as this call).
 */
export function genericToolCallText(call: { name: string; input: Record<string, unknown> }): string {
  return `<tool_call>\n${JSON.stringify({ name: call.name, arguments: call.input })}\n</tool_call>`;
}

/** A tool's result, as the generic format writes it in the next user turn of the history. */
export function genericToolResultText(content: string): string {
  return `<tool_response>\n${content}\n</tool_response>`;
}

/**
 * The scripted weather call of the family end-to-end tests (test/clients/families*.e2e.test.ts)
 * through the Messages and Responses dialects: the family's thought and call, written in its own
 * markup by the script hook, come back as a thinking block and a tool_use block, and as a reasoning
 * item and a function_call item.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { expect } from 'vitest';

const PARAMETERS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
const ASK = 'Weather in Paris?';

export async function expectMessagesCall(anthropic: Anthropic, model: string, thought: string): Promise<void> {
  const tools = [{ name: 'get_weather', description: 'Weather for a city.', input_schema: PARAMETERS as Anthropic.Tool.InputSchema }];
  const message = await anthropic.messages.create({ model, max_tokens: 2048, messages: [{ role: 'user', content: ASK }], tools, thinking: { type: 'enabled', budget_tokens: 1024 } });
  expect(message.stop_reason).toBe('tool_use');
  // A family that does not think (LFM2, Llama 3.1) gives the call alone.
  expect(message.content.map((b) => b.type)).toEqual(thought ? ['thinking', 'tool_use'] : ['tool_use']);
  if (thought) expect((message.content[0] as Anthropic.ThinkingBlock).thinking).toBe(thought);
  const use = message.content.at(-1) as Anthropic.ToolUseBlock;
  expect([use.name, use.input]).toEqual(['get_weather', { city: 'Paris' }]);
}

export async function expectResponsesCall(openai: OpenAI, model: string, thought: string): Promise<void> {
  const response = await openai.responses.create({ model, input: ASK, tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS, strict: true }], reasoning: { effort: 'high' } });
  expect(response.output.map((item) => item.type)).toEqual(thought ? ['reasoning', 'function_call'] : ['function_call']);
  if (thought) expect((response.output[0] as OpenAI.Responses.ResponseReasoningItem).content?.map((part) => part.text).join('')).toBe(thought);
  const call = response.output.at(-1) as OpenAI.Responses.ResponseFunctionToolCall;
  expect([call.name, JSON.parse(call.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);
}

/**
 * The families added after the first seven (Qwen3.5, DeepSeek V3.2, LFM2, Llama 3.1, DeepSeek R1),
 * shared by both engines' files: what each writes for "weather in Paris?" in its own markup. Qwen3.5,
 * V3.2 (thinking on) and R1 have their generation prompt open the thought.
 */
export const LATER_CALLS: Record<string, string> = {
  'qwen35-test': 'Need the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>',
  'deepseek-v32-test':
    'Need the weather.</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
  'lfm2-test': '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
  'llama3-test': '{"name": "get_weather", "parameters": {"city": "Paris"}}',
  'deepseek-r1-test': 'Need the weather.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
};
export const LATER_THOUGHTS: Record<string, string> = {
  'qwen35-test': 'Need the weather.', 'deepseek-v32-test': 'Need the weather.', 'lfm2-test': '', 'llama3-test': '', 'deepseek-r1-test': 'Need the weather.',
};
/** Their arguments written as text (Qwen3.5's, DSML's `string="true"`, LFM2's Python literals): the forced call takes an integer. */
export const LATER_TEXT_ARGS = ['qwen35-test', 'deepseek-v32-test', 'lfm2-test'];
/** What GET /v1/models says of them: tool format, reasoning style, effort levels. */
export const LATER_FORMATS: Record<string, [string, string, boolean]> = {
  'qwen35-test': ['qwen3-xml', 'think-tags', false],
  'deepseek-v32-test': ['deepseek-dsml', 'think-tags', false],
  'lfm2-test': ['lfm2', 'none', false],
  'llama3-test': ['llama3-json', 'none', false],
  'deepseek-r1-test': ['deepseek-r1', 'think-tags', false],
};
/** The forced call's token budget where the family's markup takes more than 60 of the Qwen
 * vocabulary's tokens (DSML's `<｜DSML｜…>` tags are text of many tokens there). */
export const FORCED_TOKENS: Record<string, number> = { 'qwen35-test': 200, 'deepseek-v32-test': 200 };
/** Not yet: Qwen3.5's forced call on the random model runs to the token limit (200) inside
 * XGrammar's qwen_xml_parameter grammar and comes back as a call with `{}` (docs/not-done-yet.md). */
export const UNFORCED = new Set(['qwen35-test']);

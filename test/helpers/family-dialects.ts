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
  expect(message.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
  expect((message.content[0] as Anthropic.ThinkingBlock).thinking).toBe(thought);
  const use = message.content[1] as Anthropic.ToolUseBlock;
  expect([use.name, use.input]).toEqual(['get_weather', { city: 'Paris' }]);
}

export async function expectResponsesCall(openai: OpenAI, model: string, thought: string): Promise<void> {
  const response = await openai.responses.create({ model, input: ASK, tools: [{ type: 'function', name: 'get_weather', parameters: PARAMETERS, strict: true }], reasoning: { effort: 'high' } });
  expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
  const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem;
  expect(reasoning.content?.map((part) => part.text).join('')).toBe(thought);
  const call = response.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
  expect([call.name, JSON.parse(call.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);
}

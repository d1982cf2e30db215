/**
 * The model families' own formats end to end, through HTTP on a listening server: test models built
 * from the bundled one with each family's real template and its markers as special tokens
 * (test/helpers/family-model.ts). The scripted replies (the script hook: the sampler is made to pick
 * these tokens) are what each family writes, markers and all; the dialects must hand back calls and
 * thinking, and no delta of a stream may hold a marker. Forced calls (no script) run under the
 * grammar of the family's own syntax, so they are calls whatever the random weights write.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { FORMAT_MARKERS, REASONING_TAGS } from '../../src/models/template-features.js';
import { expectMessagesCall, expectResponsesCall, FORCED_TOKENS, LATER_CALLS, UNFORCED, LATER_FORMATS, LATER_TEXT_ARGS, LATER_THOUGHTS } from '../helpers/family-dialects.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels, type FamilySpec } from '../helpers/family-model.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'families-key';
const FAMILIES: FamilySpec[] = [FAMILY_SPECS.gptOss, FAMILY_SPECS.devstral, FAMILY_SPECS.glm, FAMILY_SPECS.minimax, FAMILY_SPECS.kimi, FAMILY_SPECS.deepseek, FAMILY_SPECS.gemma4, FAMILY_SPECS.qwen35, FAMILY_SPECS.deepseekV32, FAMILY_SPECS.lfm2, FAMILY_SPECS.llama3, FAMILY_SPECS.deepseekR1];

/** What each family writes for "weather in Paris?": a thought, then a call, in its own markup. */
const CALLS: Record<string, string> = {
  'gpt-oss-test': '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
  'devstral-test': '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
  // GLM-4.7 and MiniMax M2: their generation prompt opens the thought (thinking on for GLM).
  'glm-test': 'Need the weather.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>',
  'minimax-test': 'Need the weather.\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>',
  // Kimi K2 Thinking opens its own thought; the call's id names the function and its index.
  'kimi-test': '<think>Need the weather.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
  // DeepSeek V3.1: thinking on, its generation prompt opens the thought; NAME<｜tool▁sep｜>{json}.
  'deepseek-test': 'Need the weather.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
  // Gemma 4: its thought channel, then call:NAME{key:value} with its own string quote.
  'gemma4-test': '<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
  ...LATER_CALLS,
};
const THOUGHT: Record<string, string> = {
  'gpt-oss-test': 'Need the weather.', 'devstral-test': '', 'glm-test': 'Need the weather.', 'minimax-test': 'Need the weather.', 'kimi-test': 'Need the weather.',
  'deepseek-test': 'Need the weather.', 'gemma4-test': 'Need the weather.', ...LATER_THOUGHTS,
};
/** gpt-oss's answer after the tool result: its final channel, ended by <|return|>. */
const FINAL = '<|channel|>analysis<|message|>It is sunny.<|end|><|start|>assistant<|channel|>final<|message|>Sunny in Paris.<|return|>';
/** Kimi K2's answer after the tool result: a thought, then the text. */
const KIMI_FINAL = '<think>It is sunny.</think>Sunny in Paris.';

const lastUser = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  if (request.toolChoice?.mode === 'any') return undefined;
  if (request.messages.at(-1)?.role === 'tool') return { 'gpt-oss-test': FINAL, 'kimi-test': KIMI_FINAL }[request.model];
  return lastUser(request).includes('Paris') ? CALLS[request.model] : undefined;
};

const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
};
/** Every family's markers and thought tags: none may show in a delta. */
const MARKERS = [...new Set([...Object.values(FORMAT_MARKERS).flat(), ...Object.values(REASONING_TAGS).flatMap((t) => [t.open, t.close])])];
/** A tool whose one argument is an integer, for the families that write arguments as text. */
const COUNT = { type: 'function' as const, function: { name: 'set_count', parameters: { type: 'object', properties: { count: { type: 'integer', minimum: 0, maximum: 1000 } }, required: ['count'] } } };
const TEXT_ARGS = new Set(['glm-test', 'minimax-test', 'gemma4-test', ...LATER_TEXT_ARGS]);
const ASK = [{ role: 'user' as const, content: 'Weather in Paris?' }];

/** Four models start at once: on a loaded machine that takes minutes, not the default hook limit. */
const START_TIMEOUT_MS = 300_000;

let models: FamilyModels;
let server: RealServer;
let openai: OpenAI;
beforeAll(async () => {
  models = makeFamilyModels(FAMILIES);
  server = await startRealServer({ apiKeys: [KEY], modelsDir: models.modelsDir, only: FAMILIES.map((f) => f.id), script });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
}, START_TIMEOUT_MS);
afterAll(async () => {
  await server?.close();
  models?.close();
});

describe.each(FAMILIES.map((f) => f.id))('%s', (model) => {
  it('chat completions: the call and the thought, streamed without a marker in any delta', async () => {
    const body = { model, messages: ASK, tools: [WEATHER], reasoning_effort: 'high' as const, max_completion_tokens: 200 };
    const completion = await openai.chat.completions.create(body);
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(message.content ?? '').toBe('');
    expect(message.reasoning_content ?? '').toBe(THOUGHT[model]);

    let text = '';
    let thought = '';
    const args: string[] = [];
    for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) {
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }) | undefined;
      for (const piece of [delta?.content ?? '', delta?.reasoning_content ?? '']) for (const marker of MARKERS) expect(piece).not.toContain(marker);
      text += delta?.content ?? '';
      thought += delta?.reasoning_content ?? '';
      for (const call of delta?.tool_calls ?? []) args.push(call.function?.arguments ?? '');
    }
    expect(text).toBe('');
    expect(thought).toBe(THOUGHT[model]);
    expect(JSON.parse(args.join(''))).toEqual({ city: 'Paris' });
  });

  it.skipIf(UNFORCED.has(model))("tool_choice required: a call in the family's own syntax, under its grammar", async () => {
    // GLM's, MiniMax's and Gemma 4's arguments are text of their own form; a raw string value ends where the
    // model writes `</`, which a random model need not do: their call takes an integer.
    const tool = TEXT_ARGS.has(model) ? COUNT : WEATHER;
    const completion = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Anything.' }], tools: [tool], tool_choice: 'required', max_completion_tokens: FORCED_TOKENS[model] ?? 60, temperature: 1 });
    const calls = completion.choices[0]!.message.tool_calls ?? [];
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      if (call.type !== 'function') throw new Error('not a function call');
      expect(call.function.name).toBe(tool.function.name);
      const input = JSON.parse(call.function.arguments) as Record<string, unknown>;
      if (tool === COUNT) expect(Number.isInteger(input.count)).toBe(true);
      else expect(typeof input.city).toBe('string');
    }
  });
});

describe.each([FAMILY_SPECS.deepseek.id, FAMILY_SPECS.gemma4.id, ...Object.keys(LATER_CALLS)])('%s across dialects', (model) => {
  it('Messages: thinking and tool_use blocks', () => expectMessagesCall(new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 }), model, THOUGHT[model]!));
  it('Responses: a reasoning item and a function_call item', () => expectResponsesCall(openai, model, THOUGHT[model]!));
});

describe('GET /v1/models', () => {
  it("says each family's tool format and reasoning style", async () => {
    const res = await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    const { data } = (await res.json()) as { data: Array<{ id: string; tool_format?: string; reasoning_format?: string; capabilities: { effort: { supported: boolean } } }> };
    const byId = Object.fromEntries(data.map((m) => [m.id, [m.tool_format, m.reasoning_format, m.capabilities.effort.supported]]));
    expect(byId).toEqual({
      'gpt-oss-test': ['harmony', 'harmony', true],
      'devstral-test': ['mistral', 'none', false],
      'glm-test': ['glm', 'think-tags', false],
      'minimax-test': ['minimax-m2', 'think-tags', false],
      'kimi-test': ['kimi-k2', 'think-tags', false],
      'deepseek-test': ['deepseek-v3.1', 'think-tags', false],
      'gemma4-test': ['gemma4', 'gemma-channel', false],
      ...LATER_FORMATS,
    });
  });
});

describe('gpt-oss across dialects', () => {
  it('Messages: thinking and tool_use blocks; the tool result back gives the final channel as text', async () => {
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
    const tools = [{ name: 'get_weather', description: 'Weather for a city.', input_schema: WEATHER.function.parameters as Anthropic.Tool.InputSchema }];
    const first = await anthropic.messages.create({ model: 'gpt-oss-test', max_tokens: 2048, messages: ASK, tools, thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
    const use = first.content[1] as Anthropic.ToolUseBlock;
    expect(use.input).toEqual({ city: 'Paris' });
    const second = await anthropic.messages.create({
      model: 'gpt-oss-test', max_tokens: 2048, tools, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [...ASK, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([expect.objectContaining({ type: 'thinking', thinking: 'It is sunny.' }), expect.objectContaining({ type: 'text', text: 'Sunny in Paris.' })]);
  });

  it('Responses: a reasoning item and a function_call item', async () => {
    const response = await openai.responses.create({ model: 'gpt-oss-test', input: 'Weather in Paris?', tools: [{ type: 'function', name: 'get_weather', parameters: WEATHER.function.parameters, strict: true }], reasoning: { effort: 'low' } });
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const call = response.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect([call.name, JSON.parse(call.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);
  });
});

describe('Kimi K2 through a tool loop', () => {
  it('chat completions: the call, then its result back (the template renders the tool history) gives the thought and the answer', async () => {
    const body = { model: 'kimi-test', tools: [WEATHER], max_completion_tokens: 200 };
    const first = await openai.chat.completions.create({ ...body, messages: ASK });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && [call.function.name, JSON.parse(call.function.arguments)]).toEqual(['get_weather', { city: 'Paris' }]);
    const second = await openai.chat.completions.create({
      ...body,
      messages: [...ASK, { role: 'assistant', content: null, tool_calls: first.choices[0]!.message.tool_calls }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
    });
    const message = second.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect([message.content, message.reasoning_content]).toEqual(['Sunny in Paris.', 'It is sunny.']);
    // The history's call and result reached the prompt: the second prompt holds the first's and more.
    expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens + first.usage!.completion_tokens);
  });
});

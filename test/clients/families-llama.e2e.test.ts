/**
 * The model families on llama.cpp: the family test models of test/clients/families.e2e.test.ts written
 * as GGUF files (their markers as control tokens, the family's template in the metadata), served
 * from the GGUF alone (Devstral under the tekken pre-tokenizer, Kimi K2 under kimi-k2, GLM-4.7 under
 * glm4, MiniMax M2 under qwen2, all on the Qwen vocabulary), and the families whose vocabulary is on
 * npm with it: gpt-oss (o200k harmony, gpt-4o pre-tokenizer, its harmony markers control tokens),
 * DeepSeek V3.1 (DeepSeek V3's vocabulary, deepseek-v3 pre-tokenizer, its markers user-defined
 * tokens) and Gemma 4 (its gemma4 tokenizer kind over Gemma 3's vocabulary, with Gemma 4's control
 * tokens), then Qwen3.5, DeepSeek V3.2 (DSML), LFM2 and DeepSeek R1 on the Qwen vocabulary with
 * their markers, and Llama 3.1 on Llama 3's own vocabulary (llama3 pre-tokenizer). A scripted call
 * per family through chat completions, streamed without a marker in any delta, and for those with
 * their own pre-tokenizer or vocabulary through Messages and Responses too; a forced call under the
 * family's grammar.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { FORMAT_MARKERS, REASONING_TAGS } from '../../src/models/template-features.js';
import { expectMessagesCall, expectResponsesCall, FORCED_TOKENS, LATER_CALLS, LATER_TEXT_ARGS, LATER_THOUGHTS, UNFORCED } from '../helpers/family-dialects.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels, type FamilySpec } from '../helpers/family-model.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'families-llama-key';
const FAMILIES: FamilySpec[] = [FAMILY_SPECS.gptOss, FAMILY_SPECS.devstral, FAMILY_SPECS.kimi, FAMILY_SPECS.glm, FAMILY_SPECS.minimax, FAMILY_SPECS.deepseek, FAMILY_SPECS.gemma4, FAMILY_SPECS.qwen35, FAMILY_SPECS.deepseekV32, FAMILY_SPECS.lfm2, FAMILY_SPECS.llama3, FAMILY_SPECS.deepseekR1];
/** The families added with their own pre-tokenizer or vocabulary (and the later formats), checked in every dialect. */
const EVERY_DIALECT = [FAMILY_SPECS.gptOss.id, FAMILY_SPECS.kimi.id, FAMILY_SPECS.glm.id, FAMILY_SPECS.deepseek.id, FAMILY_SPECS.gemma4.id, ...Object.keys(LATER_CALLS)];
const CALLS: Record<string, string> = {
  'gpt-oss-test': '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
  'devstral-test': '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
  'kimi-test': '<think>Need the weather.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
  // GLM-4.7 and DeepSeek V3.1 (thinking on) and MiniMax M2: their generation prompts open the thought.
  'minimax-test': 'Need the weather.\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>',
  'glm-test': 'Need the weather.</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>',
  'deepseek-test': 'Need the weather.</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
  'gemma4-test': '<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
  ...LATER_CALLS,
};
const THOUGHT: Record<string, string> = {
  'gpt-oss-test': 'Need the weather.', 'devstral-test': '', 'kimi-test': 'Need the weather.', 'glm-test': 'Need the weather.', 'minimax-test': 'Need the weather.', 'deepseek-test': 'Need the weather.', 'gemma4-test': 'Need the weather.', ...LATER_THOUGHTS,
};
/** Every family's markers and thought tags: none may show in a delta. */
const MARKERS = [...new Set([...Object.values(FORMAT_MARKERS).flat(), ...Object.values(REASONING_TAGS).flatMap((t) => [t.open, t.close])])];
/** A tool whose one argument is an integer, for the families that write arguments as text (a raw
 * string ends where the model writes its closing marker, which a random model need not do). */
const COUNT = { type: 'function' as const, function: { name: 'set_count', parameters: { type: 'object', properties: { count: { type: 'integer', minimum: 0, maximum: 1000 } }, required: ['count'] } } };
const TEXT_ARGS = new Set(['glm-test', 'minimax-test', 'gemma4-test', ...LATER_TEXT_ARGS]);
const START_TIMEOUT_MS = 300_000;

const script = (request: ChatRequest) => (request.toolChoice?.mode === 'any' ? undefined : CALLS[request.model]);
const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
};

let models: FamilyModels;
let server: RealServer;
let openai: OpenAI;
beforeAll(async () => {
  models = makeFamilyModels(FAMILIES, { gguf: true });
  server = await startRealServer({ apiKeys: [KEY], modelsDir: models.modelsDir, script });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
}, START_TIMEOUT_MS);
afterAll(async () => {
  await server?.close();
  models?.close();
});

describe.each(FAMILIES.map((f) => f.id))('%s on llama.cpp', (model) => {
  it('the call and the thought, streamed without a marker in any delta', async () => {
    const body = { model, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools: [WEATHER], reasoning_effort: 'high' as const, max_completion_tokens: 200 };
    const completion = await openai.chat.completions.create(body);
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Paris' }]]);
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

  it.skipIf(UNFORCED.has(model))('tool_choice required: a call under the family\'s grammar', async () => {
    const tool = TEXT_ARGS.has(model) ? COUNT : WEATHER;
    // Seeded: an unseeded run once ended with no call on gpt-oss (docs/not-done-yet.md), so each run samples the same tokens.
    const completion = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Anything.' }], tools: [tool], tool_choice: 'required', max_completion_tokens: FORCED_TOKENS[model] ?? 60, temperature: 1, seed: 7 });
    const calls = (completion.choices[0]!.message.tool_calls ?? []).map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : [c.type]));
    expect(calls.length).toBeGreaterThan(0);
    // Whatever the random weights pick, the grammar keeps it a call of the tool with its argument typed.
    const typed = tool === COUNT ? { count: expect.toSatisfy(Number.isInteger) } : { city: expect.any(String) };
    for (const call of calls) expect(call).toEqual([tool.function.name, typed]);
  });
});

describe.each(EVERY_DIALECT)('%s on llama.cpp across dialects', (model) => {
  it('Messages: thinking and tool_use blocks', () => expectMessagesCall(new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 }), model, THOUGHT[model]!));
  it('Responses: a reasoning item and a function_call item', () => expectResponsesCall(openai, model, THOUGHT[model]!));
});

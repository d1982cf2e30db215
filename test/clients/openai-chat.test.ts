/**
 * POST /v1/chat/completions against a listening server on the bundled chat model, judged by the
 * clients that speak it: `openai` (create, stream with include_usage, tools and a tool-call round
 * trip, chat.completions.parse with a zod schema), LangChain ChatOpenAI (bindTools,
 * withStructuredOutput) and the AI SDK's openai-compatible provider (generateText with tools,
 * streamText). The model's weights are random: forced calls and json_schema outputs are valid by
 * grammar, and usage is checked against the Messages dialect's count_tokens (the same tokenizer).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { WEATHER_TOOL, WEATHER_RESULT } from '../helpers/clients.js';
import { dataUrl, IMAGES } from '../../scripts/fuzz/images.js';

const KEY = 'test-key';
let server: RealServer;
let openai: OpenAI;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL] });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
});
afterAll(() => server?.close());

const ajv = new Ajv({ strict: false });
const validWeather = ajv.compile(WEATHER_TOOL.input_schema);
const WEATHER = { type: 'function' as const, function: { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.input_schema, strict: true } };

/** The prompt's tokens as the Messages dialect counts them (the same tokenizer and template). */
async function countTokens(body: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${server.url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: CHAT_MODEL, ...body }),
  });
  return ((await res.json()) as { input_tokens: number }).input_tokens;
}

describe('openai SDK', () => {
  it('chat.completions.create: a chat.completion with usage from the model\'s tokenizer', async () => {
    const completion = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 8, messages: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: 'Say hello.' }] });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe(CHAT_MODEL);
    expect(completion.choices).toHaveLength(1);
    expect(completion.choices[0]!.message.role).toBe('assistant');
    expect(typeof completion.choices[0]!.message.content).toBe('string');
    expect(['stop', 'length']).toContain(completion.choices[0]!.finish_reason);
    const prompt = await countTokens({ system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello.' }] });
    expect(completion.usage).toMatchObject({ prompt_tokens: prompt, total_tokens: prompt + completion.usage!.completion_tokens });
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens).toBeLessThanOrEqual(8);
  });

  it('max_tokens (the older name) bounds the reply; finish_reason length when it cuts', async () => {
    const completion = await openai.chat.completions.create({ model: CHAT_MODEL, max_tokens: 3, temperature: 1, messages: [{ role: 'user', content: 'Tell a long story.' }], stop: ['never-appears'] });
    expect(completion.usage!.completion_tokens).toBeLessThanOrEqual(3);
    if (completion.usage!.completion_tokens === 3) expect(completion.choices[0]!.finish_reason).toBe('length');
  });

  it('seed: the same request samples the same reply', async () => {
    const ask = () => openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 16, temperature: 1, seed: 42, messages: [{ role: 'user', content: 'Pick words.' }] });
    const [a, b] = [await ask(), await ask()];
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
  });

  it('streamed with include_usage: role first, content deltas, finish_reason, a usage chunk, [DONE]', async () => {
    const stream = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hello.' }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish).toHaveLength(1);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    const plain = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 12, temperature: 0, messages: [{ role: 'user', content: 'Say hello.' }] });
    expect(last.usage).toMatchObject({ prompt_tokens: plain.usage!.prompt_tokens, completion_tokens: plain.usage!.completion_tokens });
    expect(content).toBe(plain.choices[0]!.message.content); // greedy both times
  });

  it('tool_choice required: a tool call whose arguments validate; the round trip with the tool result is answered', async () => {
    for (const temperature of [0, 0.7, 1]) {
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const first = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 64, temperature, tools: [WEATHER], tool_choice: 'required', parallel_tool_calls: false, messages });
      expect(first.choices[0]!.finish_reason, JSON.stringify(first.choices[0])).toBe('tool_calls');
      const calls = first.choices[0]!.message.tool_calls!;
      expect(calls).toHaveLength(1);
      const call = calls[0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
      expect(call.id).toMatch(/^call_/);
      expect(call.function.name).toBe(WEATHER_TOOL.name);
      expect(validWeather(JSON.parse(call.function.arguments)), call.function.arguments).toBe(true);
      messages.push(first.choices[0]!.message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: call.id, content: WEATHER_RESULT });
      const second = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 8, tools: [WEATHER], messages });
      expect(second.usage!.prompt_tokens).toBeGreaterThan(first.usage!.prompt_tokens);
    }
  });

  it('a named tool, streamed: tool_calls deltas (id and name first, then argument fragments) join into valid arguments', async () => {
    const stream = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 64, temperature: 1, stream: true, tools: [WEATHER], tool_choice: { type: 'function', function: { name: WEATHER_TOOL.name } }, messages: [{ role: 'user', content: 'Weather?' }] });
    let args = '';
    let first: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        first ??= call;
        args += call.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(first).toMatchObject({ index: 0, type: 'function', function: { name: WEATHER_TOOL.name } });
    expect(first!.id).toMatch(/^call_/);
    expect(validWeather(JSON.parse(args)), args).toBe(true);
    expect(finish).toBe('tool_calls');
  });

  it('chat.completions.parse with a zod response format returns a schema-valid parsed object', async () => {
    const Event = z.object({ name: z.string(), day: z.enum(['mon', 'tue', 'wed']), attendees: z.array(z.string()), online: z.boolean() });
    for (const temperature of [0, 1]) {
      const completion = await openai.chat.completions.parse({ model: CHAT_MODEL, max_completion_tokens: 120, temperature, messages: [{ role: 'user', content: 'An event.' }], response_format: zodResponseFormat(Event, 'event') });
      const parsed = completion.choices[0]!.message.parsed;
      expect(Event.safeParse(parsed).success, JSON.stringify(parsed)).toBe(true);
    }
  });

  it('response_format json_object: the content is a JSON object', async () => {
    const completion = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 40, temperature: 1, response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'JSON please.' }] });
    const value = JSON.parse(completion.choices[0]!.message.content!);
    expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
  });

  it('logprobs with top_logprobs: one entry per generated token; greedy picks the most likely; streamed the same', async () => {
    const params = { model: CHAT_MODEL, max_completion_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3, messages: [{ role: 'user' as const, content: 'Count.' }] };
    const completion = await openai.chat.completions.create(params);
    const content = completion.choices[0]!.logprobs!.content!;
    const endedByEos = completion.choices[0]!.finish_reason === 'stop';
    expect(content).toHaveLength(completion.usage!.completion_tokens - (endedByEos ? 1 : 0));
    for (const entry of content) {
      expect(entry.top_logprobs).toHaveLength(3);
      expect(entry.logprob).toBeLessThanOrEqual(0);
      expect(entry.top_logprobs[0]!.token).toBe(entry.token);
      expect(entry.top_logprobs[0]!.logprob).toBeCloseTo(entry.logprob, 6);
      expect(entry.top_logprobs[1]!.logprob).toBeLessThanOrEqual(entry.top_logprobs[0]!.logprob);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')]);
    }
    const stream = await openai.chat.completions.create({ ...params, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    // The streamed call reads the prompt's prefix from the cache (on, as shipped): the same tokens,
    // and log probabilities equal up to the rounding of a prefill split differently.
    const tokens = (entries: OpenAI.ChatCompletionTokenLogprob[]) => entries.map((e) => [e.token, e.bytes, e.top_logprobs.map((t) => t.token)]);
    expect(tokens(streamed)).toEqual(tokens(content));
    streamed.forEach((entry, i) => {
      expect(entry.logprob).toBeCloseTo(content[i]!.logprob, 4);
      entry.top_logprobs.forEach((top, k) => expect(top.logprob).toBeCloseTo(content[i]!.top_logprobs[k]!.logprob, 4));
    });
  });

  it('reasoning_effort turns thinking on: reasoning_content and reasoning_tokens', async () => {
    const completion = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 24, temperature: 1, reasoning_effort: 'low', messages: [{ role: 'user', content: 'Think.' }] });
    const message = completion.choices[0]!.message as { reasoning_content?: string };
    expect(typeof message.reasoning_content).toBe('string');
    expect(completion.usage!.completion_tokens_details!.reasoning_tokens).toBeGreaterThan(0);
    expect(completion.usage!.completion_tokens_details!.reasoning_tokens).toBeLessThanOrEqual(completion.usage!.completion_tokens);
  });

  it('serves presence and frequency penalties (their effect is tested on the model: test/model/chat.test.ts)', async () => {
    const completion = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 8, temperature: 0, presence_penalty: 1.5, frequency_penalty: -0.5, messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it.each([
    ['an image part', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(IMAGES.png) } }] }] }, 'messages[0].content[0]', new RegExp(`${CHAT_MODEL} takes no image input`)],
    ['an image part that is no image', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }, 'messages[0].content[0]', /image/],
    ['n above 1', { n: 2 }, 'n', /only 1 choice per request/],
    ['a penalty out of range', { frequency_penalty: 2.5 }, 'frequency_penalty', /frequency_penalty/],
    ['logit bias', { logit_bias: { '1': 5 } }, 'logit_bias', /logit bias is not served/],
    ['top_logprobs without logprobs', { top_logprobs: 2 }, 'top_logprobs', /requires logprobs: true/],
    ['an unknown argument', { frobnicate: 1 }, null, /^Unrecognized request argument supplied: frobnicate$/],
    ['broken tool-call arguments in history', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{oops' } }] }, { role: 'tool', tool_call_id: 'c1', content: 'y' }] }, 'messages[1].tool_calls[0].function.arguments', /not valid JSON/],
    ['a strict schema feature the grammar cannot enforce', { response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true, schema: { type: 'object', properties: { n: { type: 'integer', multipleOf: 2 } } } } } }, 'response_format', /^response_format\.json_schema\.schema: `multipleOf` at '\/properties\/n' is not supported/],
  ])('400 in OpenAI\'s envelope for %s, with param', async (_name, extra, param, message) => {
    const error = await openai.chat.completions.create({ model: CHAT_MODEL, max_completion_tokens: 4, messages: [{ role: 'user', content: 'hi' }], ...(extra as object) } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const e = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.param ?? null).toBe(param);
    expect((e.error as { message: string }).message).toMatch(message);
  });

  it('an unknown model is a 404 with code model_not_found; a prompt over the window is context_length_exceeded', async () => {
    const missing = await openai.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    const long = await openai.chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'word '.repeat(40_000) }] }).catch((e: unknown) => e);
    expect(long).toBeInstanceOf(OpenAI.BadRequestError);
    expect((long as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });

  it('a missing or wrong key is a 401', async () => {
    const bad = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

describe('LangChain ChatOpenAI', () => {
  const chat = async (fields: Record<string, unknown> = {}) => {
    const { ChatOpenAI } = await import('@langchain/openai');
    return new ChatOpenAI({ model: CHAT_MODEL, apiKey: KEY, configuration: { baseURL: `${server.url}/v1` }, maxRetries: 0, maxTokens: 64, ...fields });
  };

  it('invoke and bindTools with tool_choice required', async () => {
    const { tool } = await import('@langchain/core/tools');
    const weather = tool(async () => WEATHER_RESULT, { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, schema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']).optional() }) });
    const plain = await (await chat({ maxTokens: 8 })).invoke('Say hello.');
    expect(typeof plain.content).toBe('string');
    const forced = await (await chat()).bindTools([weather], { tool_choice: 'required' }).invoke('What is the weather in Paris?');
    expect(forced.tool_calls?.[0]?.name).toBe(WEATHER_TOOL.name);
    expect(validWeather(forced.tool_calls![0]!.args), JSON.stringify(forced.tool_calls![0]!.args)).toBe(true);
  });

  it('withStructuredOutput returns a schema-valid object', async () => {
    const Person = z.object({ name: z.string(), age: z.number().int(), pets: z.array(z.enum(['cat', 'dog'])) });
    const result = await (await chat({ maxTokens: 120, temperature: 1 })).withStructuredOutput(Person, { name: 'person' }).invoke('A person.');
    expect(Person.safeParse(result).success, JSON.stringify(result)).toBe(true);
  });
});

describe('AI SDK openai-compatible', () => {
  const model = async () => {
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    return createOpenAICompatible({ name: 'local', baseURL: `${server.url}/v1`, apiKey: KEY, includeUsage: true })(CHAT_MODEL);
  };

  it('generateText with a forced tool: the call validates and its result comes back', async () => {
    const { generateText, tool } = await import('ai');
    const result = await generateText({
      model: await model(), prompt: 'What is the weather in Paris?', maxOutputTokens: 64, maxRetries: 0, toolChoice: 'required',
      tools: { [WEATHER_TOOL.name]: tool({ description: WEATHER_TOOL.description, inputSchema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']).optional() }), execute: async () => WEATHER_RESULT }) },
    });
    expect(result.finishReason).toBe('tool-calls');
    expect(validWeather(result.toolCalls[0]!.input), JSON.stringify(result.toolCalls[0]!.input)).toBe(true);
    expect(result.toolResults[0]!.output).toBe(WEATHER_RESULT);
    expect(result.usage.inputTokens).toBeGreaterThan(50);
  });

  it('streamText streams the text and reports usage', async () => {
    const { streamText } = await import('ai');
    const result = streamText({ model: await model(), prompt: 'Say hello.', maxOutputTokens: 10, maxRetries: 0 });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe(await result.text);
    const usage = await result.usage;
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeLessThanOrEqual(10);
  });
});

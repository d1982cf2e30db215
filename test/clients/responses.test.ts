/**
 * POST /v1/responses (the Responses dialect) against a listening server on the bundled chat model,
 * judged by the `openai` SDK: create plain and streamed (the streamed text equal to the non-streamed
 * at temperature 0), responses.stream with finalResponse(), a required tool call and its
 * function_call_output round trip, responses.parse with zodTextFormat, previous_response_id,
 * retrieve, inputItems.list, delete, inputTokens.count, stored responses kept from another key.
 * The model's weights are random: forced calls and json_schema outputs are valid by grammar, and
 * usage is checked against the tokenizer's count of the same prompt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import type { ChatRequest } from '../../src/core/types.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { WEATHER_RESULT, WEATHER_TOOL } from '../helpers/clients.js';
import { dataUrl, IMAGES } from '../../scripts/fuzz/images.js';

const KEY = 'test-key';
const OTHER_KEY = 'other-key';
let server: RealServer;
let openai: OpenAI;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY, OTHER_KEY], only: [CHAT_MODEL], script: afterToolResult });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
});
afterAll(() => server?.close());

/**
 * After a tool's result the model's answer is written for the test (test hooks: the sampler is made to
 * pick these tokens, then end of sequence), so an agent loop ends whatever the random weights say.
 */
const AFTER_TOOL = 'It is sunny in Paris.';
/** And so is the summary a compaction asks the model for. */
const SUMMARY = 'The user greeted twice; nothing is left to do.';
const afterToolResult = (request: ChatRequest) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return AFTER_TOOL;
  return last?.role === 'user' && last.content.startsWith('Summarize the conversation so far') ? SUMMARY : undefined;
};

const ajv = new Ajv({ strict: false });
const validWeather = ajv.compile(WEATHER_TOOL.input_schema);
const WEATHER = { type: 'function' as const, name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.input_schema, strict: true };

describe('openai SDK, responses', () => {
  it('responses.create: a completed or incomplete response whose usage is the tokenizer count of the prompt', async () => {
    const response = await openai.responses.create({ model: CHAT_MODEL, input: 'Hello', max_output_tokens: 8, temperature: 0 });
    expect(response.id).toMatch(/^resp_/);
    expect(response.object).toBe('response');
    expect(['completed', 'incomplete']).toContain(response.status);
    if (response.status === 'incomplete') expect(response.incomplete_details?.reason).toBe('max_output_tokens');
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant' });
    expect(typeof response.output_text).toBe('string');
    const counted = await openai.responses.inputTokens.count({ model: CHAT_MODEL, input: 'Hello' });
    expect(response.usage!.input_tokens).toBe(counted.input_tokens);
    expect(response.usage!.output_tokens).toBeLessThanOrEqual(8);
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + response.usage!.output_tokens);
  });

  it('stream: true yields the same text as the non-streamed response at temperature 0, with increasing sequence numbers', async () => {
    const params = { model: CHAT_MODEL, instructions: 'Be brief.', input: 'Count to three.', max_output_tokens: 10, temperature: 0 };
    const whole = await openai.responses.create(params);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.create({ ...params, stream: true })) events.push(event);
    expect(events[0]!.type).toBe('response.created');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => (e as { delta: string }).delta).join('');
    expect(text).toBe(whole.output_text);
    const last = events.at(-1)!;
    expect(['response.completed', 'response.incomplete']).toContain(last.type);
    expect((last as { response: OpenAI.Responses.Response }).response.output_text ?? text).toBeDefined();
  });

  it('responses.stream with finalResponse()', async () => {
    const stream = openai.responses.stream({ model: CHAT_MODEL, input: 'Say something.', max_output_tokens: 6, temperature: 0 });
    const final = await stream.finalResponse();
    expect(final.output[0]!.type).toBe('message');
    expect(final.usage!.output_tokens).toBeGreaterThan(0);
  });

  it('a required tool call validates against its schema, and its function_call_output goes back (the grammar makes the random-weight model call it)', async () => {
    const first = await openai.responses.create({ model: CHAT_MODEL, input: 'Weather in Paris?', tools: [WEATHER], tool_choice: 'required', max_output_tokens: 96 });
    const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
    expect(call, JSON.stringify(first.output)).toBeDefined();
    expect(call!.name).toBe(WEATHER_TOOL.name);
    expect(call!.call_id).toMatch(/^call_/);
    const input = JSON.parse(call!.arguments) as unknown;
    expect(validWeather(input), JSON.stringify(validWeather.errors)).toBe(true);
    const second = await openai.responses.create({
      model: CHAT_MODEL, tools: [WEATHER], max_output_tokens: 32, temperature: 0,
      input: [{ role: 'user', content: 'Weather in Paris?' }, ...first.output, { type: 'function_call_output', call_id: call!.call_id, output: WEATHER_RESULT }] as OpenAI.Responses.ResponseInput,
    });
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);
    expect(second.output_text).toBe(AFTER_TOOL);
    expect(second.status).toBe('completed');
  });

  it('responses.parse with zodTextFormat: output_parsed fits the schema', async () => {
    const City = z.object({ city: z.string().max(12), rank: z.number().int().min(1).max(9), temperature: z.number() });
    const parsed = await openai.responses.parse({ model: CHAT_MODEL, input: 'A city.', text: { format: zodTextFormat(City, 'city') }, max_output_tokens: 96 });
    expect(parsed.output_parsed, parsed.output_text).not.toBeNull();
    expect(City.safeParse(parsed.output_parsed).success).toBe(true);
    expect(Number.isFinite(parsed.output_parsed!.temperature)).toBe(true);
  });

  it('previous_response_id continues a stored response; retrieve, inputItems.list and delete', async () => {
    const first = await openai.responses.create({ model: CHAT_MODEL, input: 'Hi there.', max_output_tokens: 4, temperature: 0 });
    const second = await openai.responses.create({ model: CHAT_MODEL, previous_response_id: first.id, input: 'And again.', max_output_tokens: 4, temperature: 0 });
    expect(second.previous_response_id).toBe(first.id);
    // The whole first turn is in the second's prompt, and its prefix was cached.
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + 4);
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    const again = await openai.responses.retrieve(second.id);
    expect(again.id).toBe(second.id);
    expect(again.output).toEqual(second.output);
    const items = await openai.responses.inputItems.list(second.id, { order: 'asc' });
    const texts = items.data.map((item) => JSON.stringify(item));
    expect(texts[0]).toContain('Hi there.');
    expect(texts.at(-1)).toContain('And again.');
    expect(items.data.every((item) => typeof item.id === 'string')).toBe(true);
    // An item_reference names a stored item (here the first response's answer) in a later input.
    const referenced = await openai.responses.create({
      model: CHAT_MODEL, max_output_tokens: 2, temperature: 0,
      input: [{ role: 'user', content: 'Hi there.' }, { type: 'item_reference', id: first.output[0]!.id! }, { role: 'user', content: 'And again.' }] as OpenAI.Responses.ResponseInput,
    });
    expect(referenced.usage!.input_tokens).toBe(second.usage!.input_tokens);
    await openai.responses.delete(second.id);
    await expect(openai.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a stored response is a 404 to another API key', async () => {
    const mine = await openai.responses.create({ model: CHAT_MODEL, input: 'Mine.', max_output_tokens: 2 });
    const other = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: OTHER_KEY, maxRetries: 0 });
    await expect(other.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.create({ model: CHAT_MODEL, previous_response_id: mine.id, input: 'x', max_output_tokens: 2 })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect((await openai.responses.retrieve(mine.id)).id).toBe(mine.id);
  });

  it('Codex-shaped requests: developer input_text messages, a namespace of functions and a hosted web_search tool are served', async () => {
    const response = await openai.responses.create({
      model: CHAT_MODEL, stream: false, store: false, max_output_tokens: 64,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Spawn a helper.' }] },
      ],
      tools: [
        { type: 'namespace', name: 'multi_agent_v1', description: 'Agents.', tools: [{ type: 'function', name: 'spawn', description: 'Spawn an agent.', parameters: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] }, strict: true }] },
        { type: 'web_search' },
      ] as unknown as OpenAI.Responses.Tool[],
      tool_choice: { type: 'function', name: 'multi_agent_v1.spawn' },
      parallel_tool_calls: true,
      reasoning: { summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'session-1',
    });
    const call = response.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall & { namespace?: string };
    expect(call).toMatchObject({ name: 'spawn', namespace: 'multi_agent_v1' });
    expect(JSON.parse(call.arguments)).toHaveProperty('task');
    // reasoning (no effort given: on) came back as a reasoning item first, its summary and its sealed thought.
    const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.type).toBe('reasoning');
    expect(typeof reasoning.encrypted_content).toBe('string');
    expect(reasoning.summary.map((s) => s.text).join('')).toBe((reasoning.content ?? []).map((c) => c.text).join(''));
    // Sent back as Codex sends its history, the sealed thought is read, and the turn goes on.
    const next = await openai.responses.create({
      model: CHAT_MODEL, store: false, max_output_tokens: 32,
      input: [{ role: 'user', content: 'Spawn a helper.' }, { ...reasoning, summary: [], content: undefined }, call, { type: 'function_call_output', call_id: call.call_id, output: 'spawned' }] as OpenAI.Responses.ResponseInput,
      tools: [{ type: 'namespace', name: 'multi_agent_v1', description: 'Agents.', tools: [{ type: 'function', name: 'spawn', parameters: { type: 'object', properties: { task: { type: 'string' } } } }] }] as unknown as OpenAI.Responses.Tool[],
    });
    expect(next.output_text).toBe(AFTER_TOOL);
    const withoutThought = await openai.responses.inputTokens.count({
      model: CHAT_MODEL,
      input: [{ role: 'user', content: 'Spawn a helper.' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'spawned' }] as OpenAI.Responses.ResponseInput,
      tools: [{ type: 'namespace', name: 'multi_agent_v1', description: 'Agents.', tools: [{ type: 'function', name: 'spawn', parameters: { type: 'object', properties: { task: { type: 'string' } } } }] }] as unknown as OpenAI.Responses.Tool[],
    });
    expect(next.usage!.input_tokens).toBeGreaterThan(withoutThought.input_tokens);
    // Not stored: store false.
    await expect(openai.responses.retrieve(response.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('responses.compact: every user message, then a compaction item that stands for the conversation when sent back', async () => {
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Hello.' }, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Hello again.' },
    ];
    const compacted = await openai.responses.compact({ model: CHAT_MODEL, input });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'message', 'compaction']);
    const compaction = compacted.output.at(-1) as { encrypted_content: string };
    expect(compaction.encrypted_content).not.toContain(SUMMARY);
    expect(compacted.usage.output_tokens).toBeGreaterThan(0);
    const next = await openai.responses.create({ model: CHAT_MODEL, input: [...compacted.output, { role: 'user', content: 'Go on.' }] as OpenAI.Responses.ResponseInput, max_output_tokens: 2 });
    const plain = await openai.responses.inputTokens.count({ model: CHAT_MODEL, input: [{ role: 'user', content: 'Hello.' }, { role: 'user', content: 'Hello again.' }, { role: 'user', content: 'Go on.' }] });
    // The summary is in the prompt: more tokens than the user messages alone.
    expect(next.usage!.input_tokens).toBeGreaterThan(plain.input_tokens + 5);
    // A compaction item this server did not write is refused, not taken on trust.
    const forged = { ...compaction, encrypted_content: `${compaction.encrypted_content.split('.')[0]}.forged` };
    await expect(openai.responses.create({ model: CHAT_MODEL, input: [forged, { role: 'user', content: 'x' }] as OpenAI.Responses.ResponseInput, max_output_tokens: 2 })).rejects.toThrow(/encrypted_content/);
  });

  it('refuses what it cannot serve with a 400 naming it: an image, a forced hosted tool, background', async () => {
    const image = openai.responses.create({ model: CHAT_MODEL, input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(IMAGES.png), detail: 'auto' }] }] });
    await expect(image).rejects.toThrow(new RegExp(`input\\[0\\]\\.content\\[0\\].*${CHAT_MODEL} takes no image input`));
    const forced = openai.responses.create({ model: CHAT_MODEL, input: 'x', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } as never });
    await expect(forced).rejects.toThrow(/tool_choice.*web_search/);
    await expect(openai.responses.create({ model: CHAT_MODEL, input: 'x', background: true })).rejects.toThrow(/background/);
  });
});

describe('other clients of the Responses API', () => {
  it('LangChain ChatOpenAI with useResponsesApi: true', async () => {
    const { ChatOpenAI } = await import('@langchain/openai');
    const model = new ChatOpenAI({ model: CHAT_MODEL, apiKey: KEY, useResponsesApi: true, maxTokens: 6, temperature: 0, maxRetries: 0, configuration: { baseURL: `${server.url}/v1` } });
    const reply = await model.invoke('Hello');
    expect(typeof reply.text).toBe('string');
    const counted = await openai.responses.inputTokens.count({ model: CHAT_MODEL, input: [{ role: 'user', content: 'Hello' }] });
    expect(reply.usage_metadata?.input_tokens).toBe(counted.input_tokens);
  });

  it("the AI SDK's openai.responses model: generateText", async () => {
    const { createOpenAI } = await import('@ai-sdk/openai');
    const { generateText } = await import('ai');
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY });
    const result = await generateText({ model: provider.responses(CHAT_MODEL), prompt: 'Hello', maxOutputTokens: 6, temperature: 0, maxRetries: 0 });
    expect(typeof result.text).toBe('string');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });

  it('the OpenAI Agents SDK: run() of an agent with a function tool executes the tool (its first call forced)', async () => {
    const agents = await import('@openai/agents');
    // The Agents SDK types its client with its own copy of the openai package: the same class at run time.
    agents.setDefaultOpenAIClient(new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 }) as unknown as Parameters<typeof agents.setDefaultOpenAIClient>[0]);
    agents.setOpenAIAPI('responses');
    agents.setTracingDisabled(true);
    const calls: unknown[] = [];
    const weather = agents.tool({
      name: WEATHER_TOOL.name, description: WEATHER_TOOL.description,
      parameters: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
      execute: async (input) => (calls.push(input), WEATHER_RESULT),
    });
    // tool_choice required for the first turn; the SDK resets it after the call, so the run ends.
    const agent = new agents.Agent({ name: 'weather', instructions: 'Answer about the weather.', model: CHAT_MODEL, tools: [weather], modelSettings: { toolChoice: 'required', maxTokens: 64 } });
    const result = await agents.run(agent, 'Weather in Paris?', { maxTurns: 4 });
    expect(calls).toHaveLength(1);
    expect(result.finalOutput).toBe(AFTER_TOOL);
  });
});

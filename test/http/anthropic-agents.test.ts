/**
 * What agents send, through the Anthropic dialect, against the fake inference service: the request
 * each wire shape becomes (tools, tool history, thinking, system-role messages, documents, Claude
 * Code's billing header) and the wire shape of each answer part (tool_use and thinking blocks, JSON
 * and SSE). The fake answers "call NAME {json}" with that call, and thinks when thinking is on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ANTHROPIC_HEADERS, fakeApp, parseSse } from '../helpers/inject.js';
import type { FakeInference } from '../helpers/fake-inference.js';

let app: FastifyInstance;
let fake: FakeInference;
beforeAll(async () => ({ app, fake } = await fakeApp()));
afterAll(() => app.close());

const post = (body: unknown, url = '/v1/messages') => app.inject({ method: 'POST', url, headers: ANTHROPIC_HEADERS, payload: JSON.stringify(body) });
const WEATHER = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const base = { model: 'fake-chat', max_tokens: 30 };
const lastCall = () => fake.calls.chat.at(-1)!;

describe('what agent requests become', () => {
  it('system messages anywhere join the system prompt in order; Claude Code’s billing header is dropped', async () => {
    const res = await post({
      ...base,
      system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197.abc; cc_entrypoint=sdk-cli;' }, { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'system', content: 'Rule one.' }, { role: 'user', content: 'hi there' }, { role: 'system', content: 'Rule two.' }],
    });
    expect(res.statusCode).toBe(200);
    expect(lastCall()).toMatchObject({ system: 'You are terse.\n\nRule one.\n\nRule two.', messages: [{ role: 'user', content: 'hi there' }] });
  });

  it('tools, tool_choice, tool_use history and tool_result turns become the core’s tools and turns', async () => {
    const res = await post({
      ...base,
      tools: [WEATHER],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'Need the tool.', signature: 'sig' }, { type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '3°C' }] }, { type: 'text', text: 'And now?' }] },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(lastCall()).toMatchObject({
      tools: [{ name: 'get_weather', description: 'Weather for a city', inputSchema: WEATHER.input_schema }],
      toolChoice: { mode: 'auto', parallel: false },
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: 'Let me check.', reasoning: 'Need the tool.', toolCalls: [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'tool', callId: 'toolu_1', name: 'get_weather', content: '3°C', isError: false },
        { role: 'user', content: 'And now?' },
      ],
    });
  });

  it('an error tool_result, redacted thinking, text documents and cache_control everywhere are accepted', async () => {
    const res = await post({
      ...base,
      tools: [{ ...WEATHER, cache_control: { type: 'ephemeral' } }],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'high' },
      metadata: { user_id: 'u' },
      messages: [
        { role: 'user', content: [{ type: 'document', title: 'Notes', source: { type: 'text', media_type: 'text/plain', data: 'Oslo is cold.' } }, { type: 'text', text: ' Weather?' }] },
        { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'opaque' }, { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'timeout', is_error: true, cache_control: { type: 'ephemeral' } }] },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(lastCall().messages).toEqual([
      { role: 'user', content: 'Notes\n\nOslo is cold. Weather?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'toolu_2', name: 'get_weather', input: { city: 'Oslo' } }] },
      { role: 'tool', callId: 'toolu_2', name: 'get_weather', content: 'timeout', isError: true },
    ]);
  });

  it('thinking: enabled (with its budget) and adaptive turn it on; disabled and between_tools off', async () => {
    // The fake records the request before its own output-limit check (2000 > its 64): conversion is what is tested.
    const thinkingOf = async (thinking: object, max_tokens = 2000) => (await post({ ...base, max_tokens, thinking, messages: [{ role: 'user', content: 'x' }] }), lastCall().thinking);
    expect(await thinkingOf({ type: 'enabled', budget_tokens: 1024 })).toEqual({ enabled: true, budgetTokens: 1024 });
    expect(await thinkingOf({ type: 'adaptive' })).toEqual({ enabled: true });
    expect(await thinkingOf({ type: 'disabled' })).toEqual({ enabled: false });
    expect(await thinkingOf({ type: 'between_tools' })).toEqual({ enabled: false });
  });

  it('count_tokens takes tools and thinking as generation does', async () => {
    const res = await post({ model: 'fake-chat', tools: [WEATHER], thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'a b' }] }, '/v1/messages/count_tokens');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ input_tokens: 2 });
  });
});

describe('answer parts on the wire', () => {
  const toolRequest = { ...base, tools: [WEATHER], messages: [{ role: 'user', content: 'call get_weather {"city":"Oslo"}' }] };

  it('a tool call is a tool_use block with stop_reason tool_use', async () => {
    const body = (await post(toolRequest)).json();
    expect(body).toMatchObject({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'toolu_fake0001', name: 'get_weather', input: { city: 'Oslo' } }] });
  });

  it('streamed: content_block_start with the tool_use, input_json_delta fragments that join to the input, content_block_stop', async () => {
    const events = parseSse((await post({ ...toolRequest, stream: true })).body);
    expect(events.map((e) => e.event)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(events[2]!.data.content_block).toEqual({ type: 'tool_use', id: 'toolu_fake0001', name: 'get_weather', input: {} });
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta);
    expect(deltas.every((d) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(deltas.map((d) => d.partial_json).join(''))).toEqual({ city: 'Oslo' });
    expect(events.at(-2)!.data.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('thinking comes first as a signed thinking block; streamed as thinking_delta then signature_delta', async () => {
    const request = { ...base, thinking: { type: 'adaptive' }, messages: [{ role: 'user', content: 'two words' }] };
    const json = (await post(request)).json();
    expect(json.content).toEqual([{ type: 'thinking', thinking: 'thinking about two words', signature: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/) }, { type: 'text', text: 'two words' }]);
    const events = parseSse((await post({ ...request, stream: true })).body);
    const blocks = events.filter((e) => e.event.startsWith('content_block'));
    expect(blocks.map((e) => `${e.event}:${e.data.content_block?.type ?? e.data.delta?.type ?? ''}`)).toEqual([
      'content_block_start:thinking', 'content_block_delta:thinking_delta', 'content_block_delta:signature_delta', 'content_block_stop:',
      'content_block_start:text', 'content_block_delta:text_delta', 'content_block_delta:text_delta', 'content_block_stop:',
    ]);
    expect(blocks[0]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } });
    expect(blocks[2]!.data.delta.signature).toBe(json.content[0].signature);
    expect(blocks[4]!.data.index).toBe(1);
  });
});

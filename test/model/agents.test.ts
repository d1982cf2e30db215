/**
 * Agents on the real bundled model (Qwen3 tokenizer and template, random weights): tools and tool
 * history through the model's own chat template, counted the same by count_tokens and generation;
 * thinking through the template's switch, opened by the server and closed when its budget is spent.
 * What the random model says is noise; what these tests check is fixed by construction (the
 * template's rendering, and tokens the server forces).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

let server: RealServer;
let tokenizer: PreTrainedTokenizer;
beforeAll(async () => {
  server = await startRealServer({ only: [CHAT_MODEL] });
  useLocalModels(MODELS_DIR);
  tokenizer = await AutoTokenizer.from_pretrained(CHAT_MODEL, { local_files_only: true });
});
afterAll(() => server?.close());

const client = () => new Anthropic({ baseURL: server.url, apiKey: 'x', maxRetries: 0 });
const WEATHER = { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };
const HISTORY: Anthropic.MessageParam[] = [
  { role: 'user', content: 'Weather in Oslo?' },
  { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3°C and windy' }] },
];

/** The prompt as the Qwen3 template renders it in Python transformers' terms, counted by the tokenizer. */
function reference(messages: object[], tools?: object[], enableThinking = false): { text: string; count: number } {
  const text = tokenizer.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: true, ...(tools ? { tools } : {}), enable_thinking: enableThinking } as never) as unknown as string;
  return { text, count: tokenizer.encode(text, { add_special_tokens: false }).length };
}

describe('tools through the chat template (Qwen3, hermes format)', () => {
  it('count_tokens and generation count the tools and the tool-call history exactly as the template renders them', async () => {
    const { count, text } = reference(
      [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ type: 'function', id: 'toolu_1', function: { name: 'get_weather', arguments: { city: 'Oslo' } } }] },
        { role: 'tool', content: '3°C and windy', tool_call_id: 'toolu_1', name: 'get_weather' },
      ],
      [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER.input_schema } }],
    );
    // The template really rendered them: the tool list, the earlier call and its result.
    expect(text).toContain('<tools>');
    expect(text).toContain('"name": "get_weather", "arguments": {"city": "Oslo"}');
    expect(text).toContain('<tool_response>\n3°C and windy\n</tool_response>');
    const counted = await client().messages.countTokens({ model: CHAT_MODEL, tools: [WEATHER], messages: HISTORY });
    expect(counted.input_tokens).toBe(count);
    const message = await client().messages.create({ model: CHAT_MODEL, max_tokens: 3, tools: [WEATHER], messages: HISTORY });
    expect(message.usage.input_tokens).toBe(count);
    const withoutTools = await client().messages.countTokens({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
    expect(withoutTools.input_tokens).toBeLessThan(count);
  });

  it('tool_choice none leaves the tools out of the prompt', async () => {
    const none = await client().messages.countTokens({ model: CHAT_MODEL, tools: [WEATHER], tool_choice: { type: 'none' }, messages: [{ role: 'user', content: 'Hi' }] });
    const plain = await client().messages.countTokens({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'Hi' }] });
    expect(none.input_tokens).toBe(plain.input_tokens);
  });
});

describe('thinking through the template switch', () => {
  it('thinking off is the template with enable_thinking false (its empty think pair); on, without it', async () => {
    const messages = [{ role: 'user' as const, content: 'Hi' }];
    const off = await client().messages.countTokens({ model: CHAT_MODEL, messages });
    const on = await client().messages.countTokens({ model: CHAT_MODEL, messages, thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect(off.input_tokens).toBe(reference(messages, undefined, false).count);
    expect(on.input_tokens).toBe(reference(messages, undefined, true).count);
    expect(on.input_tokens).toBeLessThan(off.input_tokens);
  });

  it('a budget closes the thought: a signed thinking block of the budget’s length first, then the text', async () => {
    const BUDGET = 1024;
    const message = await client().messages.create({
      model: CHAT_MODEL, max_tokens: BUDGET + 40, thinking: { type: 'enabled', budget_tokens: BUDGET },
      messages: [{ role: 'user', content: 'Think, then answer.' }], ...{ temperature: 0 },
    });
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const thought = message.content[0] as Anthropic.ThinkingBlock;
    expect(thought.signature).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    // The server forced `<think>` first and `</think>` once BUDGET tokens were spent thinking.
    expect(tokenizer.encode(thought.thinking, { add_special_tokens: false }).length).toBeGreaterThan(BUDGET - 16);
    expect(message.stop_reason).toBe('max_tokens');
  });

  it('streamed: thinking_delta events, then a signature_delta, then the text block', async () => {
    const stream = client().messages.stream({
      model: CHAT_MODEL, max_tokens: 1100, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Go.' }],
    });
    const deltas: string[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'content_block_delta') deltas.push(event.delta.type);
    });
    const final = await stream.finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    const signatureAt = deltas.indexOf('signature_delta');
    expect(signatureAt).toBeGreaterThan(0);
    expect(deltas.slice(0, signatureAt).every((d) => d === 'thinking_delta')).toBe(true);
    expect(deltas.slice(signatureAt + 1).every((d) => d === 'text_delta')).toBe(true);
  });
});

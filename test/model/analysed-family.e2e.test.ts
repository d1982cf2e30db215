/**
 * Families served by the differential analysis of their templates (src/chat/template/analyze.ts),
 * end to end through HTTP: test models built from the bundled one with Command R7B's and Seed-OSS's
 * real templates and their markers as special tokens (test/helpers/family-model.ts). The scripted
 * replies (the script hook: the sampler is made to pick these tokens) are what each writes: Command
 * R7B a thought in `<|START_THINKING|>`, then an action array (JSON), and an answer in
 * `<|START_RESPONSE|>`; Seed-OSS a thought in `<seed:think>`, then a tagged call. The dialects must
 * hand back the call and the thought, no delta may hold a marker, the models list names the
 * analysed format, and a forced call runs under the grammar of the analysed syntax. On both
 * engines (the GGUF files carry the same tokens and template).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { makeFamilyModels, type FamilyModels } from '../helpers/family-model.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'analysed-key';
const MODEL = 'command-r7b-test';
const SEED = 'seed-oss-test';
const MARKERS = ['<|START_THINKING|>', '<|END_THINKING|>', '<|START_ACTION|>', '<|END_ACTION|>', '<|START_RESPONSE|>', '<|END_RESPONSE|>', '<|START_OF_TURN_TOKEN|>', '<|END_OF_TURN_TOKEN|>', '<|CHATBOT_TOKEN|>', '<|USER_TOKEN|>', '<|SYSTEM_TOKEN|>'];
const SEED_MARKERS = ['<seed:bos>', '<seed:eos>', '<seed:think>', '</seed:think>', '<seed:tool_call>', '</seed:tool_call>'];
const CALLS: Record<string, string> = {
  [MODEL]: '<|START_THINKING|>Need the weather.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>',
  [SEED]: '<seed:think>Need the weather.</seed:think>\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>',
};
const ANSWER = '<|START_RESPONSE|>Sunny in Paris.<|END_RESPONSE|>';

const lastUser = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  if (request.toolChoice?.mode === 'any') return undefined;
  if (request.messages.at(-1)?.role === 'tool') return ANSWER;
  return lastUser(request).includes('Paris') ? CALLS[request.model] : undefined;
};

const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather for a city.', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
};
/** A tool whose one argument is an integer, for a form that writes arguments as text. */
const COUNT = { type: 'function' as const, function: { name: 'set_count', parameters: { type: 'object', properties: { count: { type: 'integer', minimum: 0, maximum: 1000 } }, required: ['count'] } } };
const ASK = [{ role: 'user' as const, content: 'Weather in Paris?' }];
/** A model starts in seconds, on a loaded machine in minutes. */
const START_TIMEOUT_MS = 300_000;

/** Both engines: the ONNX graph, and the same model as a GGUF file on llama.cpp. */
describe.each([{ engine: 'onnx', gguf: false }, { engine: 'llama.cpp', gguf: true }])('on $engine', ({ gguf }) => {
  let models: FamilyModels;
  let server: RealServer;
  let openai: OpenAI;
  beforeAll(async () => {
    models = makeFamilyModels([
      { id: MODEL, template: 'llama-cpp/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja', markers: MARKERS },
      { id: SEED, template: 'llama-cpp/ByteDance-Seed-OSS.jinja', markers: SEED_MARKERS },
    ], { gguf });
    server = await startRealServer({ apiKeys: [KEY], modelsDir: models.modelsDir, only: [MODEL, SEED], script });
    openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.close();
    models?.close();
  });

  describe.each([MODEL, SEED])('%s (its template analysed)', (model) => {
    it('chat completions: the call and the thought, streamed without a marker in any delta', async () => {
      const body = { model, messages: ASK, tools: [WEATHER], reasoning_effort: 'high' as const, max_completion_tokens: 200 };
      const completion = await openai.chat.completions.create(body);
      const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
      expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
      expect(message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Paris' }]]);
      expect(message.content ?? '').toBe('');
      expect(message.reasoning_content).toBe('Need the weather.');

      let text = '';
      let thought = '';
      const args: string[] = [];
      for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) {
        const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }) | undefined;
        for (const piece of [delta?.content ?? '', delta?.reasoning_content ?? '']) for (const marker of [...MARKERS, ...SEED_MARKERS]) expect(piece).not.toContain(marker);
        text += delta?.content ?? '';
        thought += delta?.reasoning_content ?? '';
        for (const call of delta?.tool_calls ?? []) args.push(call.function?.arguments ?? '');
      }
      expect(text).toBe('');
      expect(thought).toBe('Need the weather.');
      expect(JSON.parse(args.join(''))).toEqual({ city: 'Paris' });
    });

    it("tool_choice required: a call in the template's own syntax, under its grammar", async () => {
      // Seed-OSS writes argument values as text: a raw string ends where the model writes `</`, which a
      // random model need not do, so its call takes an integer.
      const tool = model === SEED ? COUNT : WEATHER;
      const completion = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Anything.' }], tools: [tool], tool_choice: 'required', max_completion_tokens: 80, temperature: 1 });
      const calls = (completion.choices[0]!.message.tool_calls ?? []).map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : [c.type]));
      expect(calls.length).toBeGreaterThan(0);
      // Whatever the random weights pick, the grammar keeps it a call of the tool with its argument typed.
      const typed = tool === COUNT ? { count: expect.toSatisfy(Number.isInteger) } : { city: expect.any(String) };
      for (const call of calls) expect(call).toEqual([tool.function.name, typed]);
    });
  });

  describe('Command R7B across dialects', () => {
    it('Messages: thinking and tool_use; the tool result back gives the answer without its wrapper', async () => {
      const anthropic = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
      const tools = [{ name: 'get_weather', description: 'Weather for a city.', input_schema: WEATHER.function.parameters as Anthropic.Tool.InputSchema }];
      const first = await anthropic.messages.create({ model: MODEL, max_tokens: 2048, messages: ASK, tools, thinking: { type: 'enabled', budget_tokens: 1024 } });
      expect(first.stop_reason).toBe('tool_use');
      expect(first.content.map((b) => b.type)).toEqual(['thinking', 'tool_use']);
      const use = first.content[1] as Anthropic.ToolUseBlock;
      expect(use.input).toEqual({ city: 'Paris' });
      const second = await anthropic.messages.create({
        model: MODEL, max_tokens: 2048, tools,
        messages: [...ASK, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
      });
      expect(second.stop_reason).toBe('end_turn');
      expect(second.content).toEqual([expect.objectContaining({ type: 'text', text: 'Sunny in Paris.' })]);
    });

    it('GET /v1/models names the analysed format', async () => {
      const res = await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
      const { data } = (await res.json()) as { data: Array<{ id: string; tool_format?: string; reasoning_format?: string }> };
      expect(Object.fromEntries(data.map((m) => [m.id, [m.tool_format, m.reasoning_format]]))).toEqual({ [MODEL]: ['auto:json', 'auto-tags'], [SEED]: ['auto:tagged', 'auto-tags'] });
    });
  });
});

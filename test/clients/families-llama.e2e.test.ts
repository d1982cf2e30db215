/**
 * The model families on llama.cpp: the family test models of test/clients/families.e2e.test.ts written
 * as GGUF files (their markers as control tokens, the family's template in the metadata), served
 * from the GGUF alone (gpt-oss, Devstral, Kimi K2). A scripted call per family through chat
 * completions, streamed without a marker in any delta; a forced call under the family's grammar.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { FORMAT_MARKERS } from '../../src/models/template-features.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels, type FamilySpec } from '../helpers/family-model.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'families-llama-key';
const FAMILIES: FamilySpec[] = [FAMILY_SPECS.gptOss, FAMILY_SPECS.devstral, FAMILY_SPECS.kimi];
const CALLS: Record<string, string> = {
  'gpt-oss-test': '<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
  'devstral-test': '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
  'kimi-test': '<think>Need the weather.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
};
const THOUGHT: Record<string, string> = { 'gpt-oss-test': 'Need the weather.', 'devstral-test': '', 'kimi-test': 'Need the weather.' };
const MARKERS = [...FORMAT_MARKERS.harmony, ...FORMAT_MARKERS.mistral, ...FORMAT_MARKERS['kimi-k2'], '<think>', '</think>'];
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
    const body = { model, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools: [WEATHER], max_completion_tokens: 200 };
    const completion = await openai.chat.completions.create(body);
    const message = completion.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(message.reasoning_content ?? '').toBe(THOUGHT[model]);
    let text = '';
    for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) {
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }) | undefined;
      for (const piece of [delta?.content ?? '', delta?.reasoning_content ?? '']) for (const marker of MARKERS) expect(piece).not.toContain(marker);
      text += delta?.content ?? '';
    }
    expect(text).toBe('');
  });

  it('tool_choice required: a call under the family\'s grammar', async () => {
    const completion = await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Anything.' }], tools: [WEATHER], tool_choice: 'required', max_completion_tokens: 60, temperature: 1 });
    const calls = completion.choices[0]!.message.tool_calls ?? [];
    expect(calls.map((c) => c.type === 'function' && c.function.name)).toContain('get_weather');
  });
});

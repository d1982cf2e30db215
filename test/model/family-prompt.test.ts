/**
 * Prompts of the model families, rendered by their real templates (test/fixtures/templates/) on the
 * bundled Qwen tokenizer with the families' markers added (test/helpers/family-model.ts), in this
 * thread: a reasoning level reaches gpt-oss's template, earlier reasoning goes back as its analysis,
 * a thought the template opens is seen as opened, and DeepSeek's templates, which render calls but
 * not tools, get the tools described with their own call form as the example.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { familyOf } from '../../src/chat/family.js';
import { renderPrompt } from '../../src/chat/prompt.js';
import type { ChatPrompt, ThinkingOptions } from '../../src/core/types.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import type { LoadedTokenizer } from '../../src/tokenize/load-tokenizer.js';
import { describeModel } from '../../src/models/registry.js';
import { FORMAT_MARKERS } from '../../src/models/template-features.js';
import { makeFamilyModels, type FamilyModels } from '../helpers/family-model.js';

const FAMILIES = [
  { id: 'gpt-oss', template: 'openai-gpt-oss-120b.jinja', markers: FORMAT_MARKERS.harmony },
  { id: 'deepseek-v3.1', template: 'deepseek-ai-DeepSeek-V3.1.jinja', markers: [] },
  { id: 'glm-4.7', template: 'GLM-4.7-Flash.jinja', markers: [] },
  { id: 'minimax-m2', template: 'MiniMax-M2.jinja', markers: [] },
  // Served by the analysis of their templates (src/chat/template/analyze.ts).
  { id: 'command-r7b', template: 'llama-cpp/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja', markers: ['<|START_THINKING|>', '<|END_THINKING|>', '<|START_ACTION|>', '<|END_ACTION|>', '<|START_RESPONSE|>', '<|END_RESPONSE|>'] },
  { id: 'cohere2moe', template: 'llama-cpp/Cohere2MoE.jinja', markers: ['<|START_THINKING|>', '<|END_THINKING|>', '<|START_ACTION|>', '<|END_ACTION|>', '<|START_TEXT|>', '<|END_TEXT|>'] },
  { id: 'seed-oss', template: 'llama-cpp/ByteDance-Seed-OSS.jinja', markers: ['<seed:think>', '</seed:think>', '<seed:tool_call>', '</seed:tool_call>'] },
];
const TOOLS = [{ name: 'get_weather', description: 'Weather for a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
/** A conversation with an earlier call (and the thought before it) and its result. */
const HISTORY: ChatPrompt['messages'] = [
  { role: 'user', content: 'Weather in Paris?' },
  { role: 'assistant', content: '', reasoning: 'Look it up.', toolCalls: [{ id: 'c1', name: 'get_weather', input: { city: 'Paris' } }] },
  { role: 'tool', callId: 'c1', name: 'get_weather', content: 'sunny' },
];

let models: FamilyModels;
const loaded = new Map<string, LoadedTokenizer>();
beforeAll(async () => {
  models = makeFamilyModels(FAMILIES);
  for (const f of FAMILIES) loaded.set(f.id, await loadTokenizer(describeModel(path.join(models.modelsDir, f.id), 1)));
});
afterAll(() => models?.close());

const render = (id: string, thinking?: ThinkingOptions, messages = HISTORY) =>
  renderPrompt(loaded.get(id)!, { model: id, messages, tools: TOOLS, toolChoice: { mode: 'auto', parallel: true }, ...(thinking ? { thinking } : {}) });

describe('family prompts', () => {
  it('gpt-oss: the level reaches the template; thinking off asks for the least; the earlier thought goes back as analysis', () => {
    expect(render('gpt-oss', { enabled: true, level: 'high' }).text).toContain('Reasoning: high');
    expect(render('gpt-oss', { enabled: false }).text).toContain('Reasoning: low');
    expect(render('gpt-oss').text).toContain('Reasoning: medium');
    const text = render('gpt-oss').text;
    expect(text).toContain('<|start|>assistant<|channel|>analysis<|message|>Look it up.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>');
    expect(text.endsWith('<|start|>assistant')).toBe(true);
  });

  it('DeepSeek V3.1: the tools described with its call form; the earlier call in its markup; thinking opens the thought', () => {
    const on = render('deepseek-v3.1', { enabled: true });
    expect(on.text).toContain('"name":"get_weather"');
    expect(on.text).toContain('<｜tool▁call▁begin｜>tool_name<｜tool▁sep｜>{"argument_name": "value"}');
    expect(on.text).toContain('<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>');
    // After a tool result the template opens no assistant turn; after a user turn it does.
    const ask: ChatPrompt['messages'] = [{ role: 'user', content: 'Hi' }];
    expect(render('deepseek-v3.1', { enabled: true }, ask).opensThought).toBe(true);
    expect(render('deepseek-v3.1', { enabled: false }, ask).opensThought).toBe(false);
  });

  it("the answer's text keeps the family's marker tokens for its parser and drops the other special tokens", () => {
    const model = loaded.get('gpt-oss')!;
    const ids = model.tokenizer.encode('<|channel|>analysis<|message|>hm<|end|><|im_start|><|start|>assistant<|channel|>final<|message|>ok<|return|>', { add_special_tokens: false });
    const special = new Set(model.tokenizer.all_special_ids.map(Number));
    expect(ids.filter((id) => special.has(id))).toHaveLength(8);
    const family = familyOf(model);
    expect(family.decode(ids)).toBe('<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>');
    expect(family.endIds.map((id) => model.tokenizer.decode([id]))).toEqual(['<|call|>', '<|return|>']);
    expect(family.continueIds.map((id) => model.tokenizer.decode([id]))).toEqual(['<|end|>']);
  });

  it('GLM-4.7 opens the thought only with thinking on; MiniMax M2 always does', () => {
    const ask: ChatPrompt['messages'] = [{ role: 'user', content: 'Hi' }];
    expect(render('glm-4.7', { enabled: true }, ask).opensThought).toBe(true);
    expect(render('glm-4.7', { enabled: false }, ask).opensThought).toBe(false);
    expect(render('minimax-m2', undefined, ask).opensThought).toBe(true);
  });

  it('analysed families: the template describes the tools (no generic prompt) and writes the earlier call in its own markup', () => {
    const r7b = render('command-r7b').text;
    expect(r7b).not.toContain('To call a tool');
    expect(r7b).toContain('"name": "get_weather"');
    expect(r7b).toContain('<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>');
    const seed = render('seed-oss').text;
    expect(seed).not.toContain('To call a tool');
    expect(seed).toContain('<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>');
    expect(familyOf(loaded.get('seed-oss')!).features).toMatchObject({ toolFormat: 'auto', reasoning: 'auto-tags' });
  });

  it('analysed families: Cohere2MoE opens the thought in its generation prompt; the markers survive decoding for the parser', () => {
    const ask: ChatPrompt['messages'] = [{ role: 'user', content: 'Hi' }];
    expect(render('cohere2moe', undefined, ask).opensThought).toBe(true);
    expect(render('command-r7b', undefined, ask).opensThought).toBe(false);
    const model = loaded.get('command-r7b')!;
    const text = '<|START_THINKING|>hm<|END_THINKING|><|START_ACTION|>[]<|END_ACTION|>';
    expect(familyOf(model).decode(model.tokenizer.encode(text, { add_special_tokens: false }))).toBe(text);
  });
});

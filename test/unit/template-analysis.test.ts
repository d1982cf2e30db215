/**
 * The differential analysis of chat templates (src/chat/template/analyze.ts) on llama.cpp's real
 * templates (test/fixtures/templates/llama-cpp): the markers it finds for the families it serves
 * (Command R / R7B / Cohere2MoE, Seed-OSS, Apriel, SmolLM3's thought), and, for families with a
 * dedicated format (GLM, MiniMax M2, Hermes), that it reads the same markers, while format
 * detection keeps their dedicated parsers (src/chat/template/family-features.ts).
 */
import { describe, expect, it } from 'vitest';
import { analyzeTemplate } from '../../src/chat/template/analyze.js';
import { familyFeatures } from '../../src/chat/template/family-features.js';
import { diffRenders } from '../../src/chat/template/render-diff.js';
import { parseModelOutput } from '../../src/chat/parse-output.js';
import { servedFormat } from '../../src/inference/chat-format.js';
import { chatFormat } from '../../src/models/template-features.js';
import type { ModelInfo } from '../../src/models/registry.js';
import { templateSource } from '../helpers/chat-cases.js';

const analyse = (name: string) => analyzeTemplate(templateSource(name));
const COHERE_JSON = { shape: 'json', open: '<|START_ACTION|>', close: '<|END_ACTION|>', array: true, nameKey: 'tool_name', argsKey: 'parameters', id: { key: 'tool_call_id', value: '0', first: true } };

describe('render diff', () => {
  it('cuts at marker boundaries, never inside a marker', () => {
    expect(diffRenders('a<|START_TEXT|>x<|END|>', 'a<|START_THINKING|>t<|END_THINKING|><|START_TEXT|>x<|END|>')).toEqual({ prefix: 'a', left: '', right: '<|START_THINKING|>t<|END_THINKING|>', suffix: '<|START_TEXT|>x<|END|>' });
    expect(diffRenders('same', 'same')).toEqual({ prefix: 'same', left: '', right: '', suffix: '' });
  });
});

describe('template analysis: the families it serves', () => {
  it('Command R7B: the thought from the empty one of the generation prompt, the text wrapper, an action array', () => {
    const found = analyse('CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja')!;
    expect(found.thought).toEqual({ open: '<|START_THINKING|>', close: '<|END_THINKING|>' });
    expect(found.content).toEqual({ open: '<|START_RESPONSE|>', close: '<|END_RESPONSE|>' });
    expect(found.calls).toEqual(COHERE_JSON);
    expect(found.turn).toEqual(expect.arrayContaining(['<|START_OF_TURN_TOKEN|>', '<|CHATBOT_TOKEN|>', '<|END_OF_TURN_TOKEN|>']));
  });

  it('Cohere2MoE: the thought in the history, <|START_TEXT|>, the same actions', () => {
    const found = analyse('Cohere2MoE.jinja')!;
    expect(found.thought).toEqual({ open: '<|START_THINKING|>', close: '<|END_THINKING|>' });
    expect(found.content).toEqual({ open: '<|START_TEXT|>', close: '<|END_TEXT|>' });
    expect(found.calls).toEqual(COHERE_JSON);
  });

  it('Command R+: no thought; calls as `Action:` and a fenced JSON array', () => {
    const found = analyse('CohereForAI-c4ai-command-r-plus-tool_use.jinja')!;
    expect(found.thought).toBeUndefined();
    expect(found.calls).toEqual({ shape: 'json', open: 'Action:\n```json', close: '```', array: true, nameKey: 'tool_name', argsKey: 'parameters' });
  });

  it('Seed-OSS: <seed:think>, and tagged calls in <seed:tool_call>', () => {
    const found = analyse('ByteDance-Seed-OSS.jinja')!;
    expect(found.thought).toEqual({ open: '<seed:think>', close: '</seed:think>' });
    expect(found.calls).toEqual({ shape: 'tagged', open: '<seed:tool_call>', close: '</seed:tool_call>', nameOpen: '<function=', nameClose: '>', argOpen: '<parameter=', argMid: '>', argClose: '</parameter>', callClose: '</function>' });
  });

  it('Apriel 1.5 and 1.6: a JSON array in <tool_calls>; 1.6 begins its thought with its prompt\'s words and ends it with [BEGIN FINAL RESPONSE]', () => {
    const calls = { shape: 'json', open: '<tool_calls>', close: '</tool_calls>', array: true, nameKey: 'name', argsKey: 'arguments' };
    expect(analyse('unsloth-Apriel-1.5.jinja')!.calls).toEqual(calls);
    const later = analyse('Apriel-1.6-15b-Thinker-fixed.jinja')!;
    expect(later.calls).toEqual(calls);
    // Its generation prompt writes the thought's first words: the thought begins with them.
    expect(later.thought).toEqual({ open: '', close: '[BEGIN FINAL RESPONSE]', lead: 'Here are my reasoning steps:' });
    const source = templateSource('Apriel-1.6-15b-Thinker-fixed.jinja');
    expect(parseModelOutput(source, [...'One step.\n[BEGIN FINAL RESPONSE]\nDone.'])).toEqual({ content: 'Done.', reasoning: 'Here are my reasoning steps:\nOne step.', toolCalls: [] });
  });

  it('SmolLM3: <think> from its generation prompt with thinking off; no calls (its template has no tools)', () => {
    const found = analyse('HuggingFaceTB-SmolLM3-3B.jinja')!;
    expect(found.thought).toEqual({ open: '<think>', close: '</think>' });
    expect(found.calls).toBeUndefined();
  });

  it('format detection: these templates get the analysed format, the others keep theirs', () => {
    for (const name of ['CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja', 'Cohere2MoE.jinja', 'CohereForAI-c4ai-command-r-plus-tool_use.jinja', 'ByteDance-Seed-OSS.jinja', 'unsloth-Apriel-1.5.jinja', 'Apriel-1.6-15b-Thinker-fixed.jinja']) {
      expect(familyFeatures(templateSource(name)).toolFormat, name).toBe('auto');
    }
    expect(familyFeatures(templateSource('ByteDance-Seed-OSS.jinja')).reasoning).toBe('auto-tags');
    const kept: Array<[string, string, string]> = [
      ['GLM-4.6.jinja', 'glm', 'think-tags'],
      ['GLM-4.7-Flash.jinja', 'glm', 'think-tags'],
      ['MiniMax-M2.jinja', 'minimax-m2', 'think-tags'],
      ['deepseek-ai-DeepSeek-V3.1.jinja', 'deepseek-v3.1', 'think-tags'],
      ['llama-cpp-deepseek-r1.jinja', 'deepseek-r1', 'think-tags'],
      ['NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja', 'hermes', 'none'],
      ['ibm-granite-granite-4.0.jinja', 'hermes', 'none'],
      ['HuggingFaceTB-SmolLM3-3B.jinja', 'generic', 'think-tags'],
    ];
    for (const [name, format, reasoning] of kept) {
      const features = familyFeatures(templateSource(name));
      expect([features.toolFormat, features.reasoning], name).toEqual([format, reasoning]);
    }
  });

  it('a Command R7B answer read with the analysed markers, whole and one character at a time', () => {
    const tools = [{ name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const text = '<|START_THINKING|>Look it up.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}\n]<|END_ACTION|>';
    const source = templateSource('CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja');
    for (const chunks of [text, [...text]]) {
      expect(parseModelOutput(source, chunks, { tools })).toEqual({ content: '', reasoning: 'Look it up.', toolCalls: [{ name: 'get_weather', input: { city: 'Paris' } }] });
    }
    expect(parseModelOutput(source, [...'<|START_RESPONSE|>Hi <there>.<|END_RESPONSE|>'], { tools, thinking: false }).content).toBe('Hi <there>.');
  });
});

describe('template analysis: families with a dedicated format read the same markers', () => {
  it('GLM 4.6 and 4.7: <tool_call>NAME then <arg_key>/<arg_value> pairs (4.6 with a newline between)', () => {
    const tagged = { shape: 'tagged', open: '<tool_call>', close: '</tool_call>', nameOpen: '', nameClose: '', argOpen: '<arg_key>', argClose: '</arg_value>', callClose: '' };
    expect(analyse('GLM-4.6.jinja')!.calls).toEqual({ ...tagged, argMid: '</arg_key>\n<arg_value>' });
    expect(analyse('GLM-4.7-Flash.jinja')!.calls).toEqual({ ...tagged, argMid: '</arg_key><arg_value>' });
  });

  it('MiniMax M2: <think>, and <invoke name=…> calls in <minimax:tool_call>', () => {
    const found = analyse('MiniMax-M2.jinja')!;
    expect(found.thought).toEqual({ open: '<think>', close: '</think>' });
    expect(found.calls).toEqual({ shape: 'tagged', open: '<minimax:tool_call>', close: '</minimax:tool_call>', nameOpen: '<invoke name="', nameClose: '">', argOpen: '<parameter name="', argMid: '">', argClose: '</parameter>', callClose: '</invoke>' });
  });

  it('Hermes 2 Pro / 3 and Qwen3: a JSON object with name and arguments in <tool_call>', () => {
    const hermes = { shape: 'json', open: '<tool_call>', close: '</tool_call>', array: false, nameKey: 'name', argsKey: 'arguments' };
    for (const name of ['NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja', 'NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja', 'Qwen-Qwen3-0.6B.jinja']) expect(analyse(name)!.calls, name).toEqual(hermes);
    expect(analyse('Qwen-Qwen3-0.6B.jinja')!.thought).toEqual({ open: '<think>', close: '</think>' });
  });

  it('the analysed reading of a GLM and a MiniMax call gives the dedicated parsers\' result', () => {
    const tools = [{ name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } }];
    const cases: Array<[string, string]> = [
      ['GLM-4.6.jinja', '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>'],
      ['MiniMax-M2.jinja', '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>'],
    ];
    for (const [name, text] of cases) {
      const dedicated = familyFeatures(templateSource(name));
      const analysed = { ...dedicated, toolFormat: 'auto' as const, auto: analyse(name)! };
      const expected = parseModelOutput(dedicated, text, { tools });
      expect(expected.toolCalls, name).toEqual([{ name: 'get_weather', input: { city: 'Paris', days: 3 } }]);
      expect(parseModelOutput(analysed, text, { tools }), name).toEqual(expected);
    }
  });
});

describe('reading an analysed tagged form', () => {
  const tools = [{ name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } } }];
  const minimax = () => {
    const source = templateSource('MiniMax-M2.jinja');
    return { ...familyFeatures(source), toolFormat: 'auto' as const, auto: analyzeTemplate(source)! };
  };

  it('two calls in one section; a value keeps its own whitespace', () => {
    const text = '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city"> Paris\n</parameter>\n</invoke>\n<invoke name="get_weather"><parameter name="days">3</parameter></invoke>\n</minimax:tool_call>';
    expect(parseModelOutput(minimax(), [...text], { tools }).toolCalls).toEqual([{ name: 'get_weather', input: { city: ' Paris\n' } }, { name: 'get_weather', input: { days: 3 } }]);
  });

  it('an argument named __proto__ is a plain key of the input, not its prototype', () => {
    const text = '<minimax:tool_call><invoke name="get_weather"><parameter name="__proto__">{"polluted": true}</parameter></invoke></minimax:tool_call>';
    const [call] = parseModelOutput(minimax(), text, { tools }).toolCalls;
    expect(Object.getPrototypeOf(call!.input)).toBe(Object.prototype);
    expect(Object.hasOwn(call!.input, '__proto__')).toBe(true);
    expect((call!.input as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('a long run of spaces where a key or a value starts is read in linear time, and comes back as text', () => {
    for (const text of [`<minimax:tool_call><invoke name="get_weather"><parameter name="${' '.repeat(200_000)}`, `<minimax:tool_call><invoke name="get_weather"><parameter name="city">${' '.repeat(200_000)}x`]) {
      const started = performance.now();
      const parsed = parseModelOutput(minimax(), text, { tools });
      expect(performance.now() - started).toBeLessThan(2000);
      expect(parsed.toolCalls).toEqual([]);
      expect(parsed.content.length).toBeGreaterThan(200_000);
    }
  });
});

describe('the models list names the analysed format', () => {
  const listed = (name: string) => {
    const template = templateSource(name);
    const info = { id: name, task: 'chat', chatFormat: chatFormat(template), chatTemplate: template } as unknown as ModelInfo;
    const { toolFormat, reasoning } = servedFormat(info).chatFormat!;
    return [toolFormat, reasoning];
  };

  it('auto:json / auto:tagged and auto-tags where the chat layer serves the analysis; the markers\' format elsewhere', () => {
    expect(listed('CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja')).toEqual(['auto:json', 'auto-tags']);
    expect(listed('ByteDance-Seed-OSS.jinja')).toEqual(['auto:tagged', 'auto-tags']);
    expect(listed('unsloth-Apriel-1.5.jinja')).toEqual(['auto:json', 'none']);
    expect(listed('GLM-4.7-Flash.jinja')).toEqual(['glm', 'think-tags']);
    expect(listed('NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja')).toEqual(['hermes', 'none']);
    expect(listed('HuggingFaceTB-SmolLM3-3B.jinja')).toEqual(['generic', 'think-tags']);
  });
});

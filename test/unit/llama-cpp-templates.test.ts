/**
 * Every chat template llama.cpp ships (its models/templates/, copied to
 * test/fixtures/templates/llama-cpp/ with their licence note) renders a tool conversation through the
 * server's prompt rendering (src/chat/prompt.ts: the model's tool format or the generic one, then
 * src/chat/template/render.ts): system, user, an assistant turn with a tool call, its result, and a
 * user turn, with tools, one of whose parameters has no description. No template raises; every
 * output names the tool, and where the template writes earlier calls (it reads `tool_calls`, or the
 * conversation was given in the generic format's text) the call's argument is there too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import { featuresOf, renderPrompt } from '../../src/chat/prompt.js';
import type { ChatPrompt } from '../../src/core/types.js';
import { describeModel } from '../../src/models/registry.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import { rewriteTemplate } from '../../src/chat/template/rewrite.js';
import { MODELS_DIR, ONNX_CHAT_MODEL, ROOT } from '../helpers/paths.js';

const DIR = path.join(ROOT, 'test/fixtures/templates/llama-cpp');
const TEMPLATES = fs.readdirSync(DIR).filter((file) => file.endsWith('.jinja')).sort();
/** The call's argument: a value no other message holds, so finding it means the call was written. */
const CITY = 'Reykjavik-Hofn';

const PROMPT: ChatPrompt = {
  model: 'm',
  system: 'You are terse.',
  messages: [
    { role: 'user', content: 'What is the weather where I am?' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', input: { location: CITY } }] },
    { role: 'tool', content: '18 degrees', callId: 'call_1', name: 'get_weather' },
    { role: 'user', content: 'Thanks. And tomorrow?' },
  ],
  tools: [{
    name: 'get_weather',
    description: 'Weather for a city',
    inputSchema: { type: 'object', properties: { location: { type: 'string', description: 'The city' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['location'] },
  }],
};

describe("llama.cpp's chat templates", () => {
  let tokenizer: PreTrainedTokenizer;
  let info: ReturnType<typeof describeModel>;
  beforeAll(async () => {
    ({ tokenizer, info } = await loadTokenizer(describeModel(path.join(MODELS_DIR, ONNX_CHAT_MODEL), 1)));
  });

  it('are all there', () => {
    expect(TEMPLATES.length).toBeGreaterThanOrEqual(68);
  });

  it('render as before where they rendered before: the rewrites keep their meaning', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: PROMPT.tools![0]!.inputSchema } }];
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', id: 'abcdefghi', function: { name: 'get_weather', arguments: { location: CITY } } }] },
      { role: 'tool', content: '18', tool_call_id: 'abcdefghi', name: 'get_weather' },
      { role: 'assistant', content: 'It is 18.' },
      { role: 'user', content: 'Thanks' },
    ];
    const render = (template: string) => tokenizer.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: true, tools, chat_template: template, bos_token: '<s>', eos_token: '</s>' } as never) as unknown as string;
    let compared = 0;
    for (const file of TEMPLATES) {
      const template = fs.readFileSync(path.join(DIR, file), 'utf8');
      let before: string;
      try {
        before = render(template);
      } catch {
        continue;
      }
      expect(render(rewriteTemplate(template)), file).toBe(before);
      compared++;
    }
    expect(compared).toBeGreaterThan(50);
  });

  /** The bundled model's tokenizer with `template` (a shallow copy per template, as each model has its own). */
  const withTemplate = (template: string) => {
    const own = Object.assign(Object.create(Object.getPrototypeOf(tokenizer)), tokenizer, { chat_template: template, _compiled_template_cache: new Map() }) as PreTrainedTokenizer;
    return { info: { ...info, contextLength: 32_768 }, tokenizer: own };
  };

  it("a conversation no change saves is refused with the template's own reason", () => {
    const loaded = withTemplate("{% for m in messages %}{% if m.role == 'user' and 'tomorrow' in m.content %}{{ raise_exception('Not about tomorrow') }}{% endif %}{{ m.content }}{% endfor %}");
    expect(() => renderPrompt(loaded, PROMPT)).toThrow(expect.objectContaining({ code: 'template_rejected', message: expect.stringContaining('Not about tomorrow') }));
  });

  it('a tool whose parameters are named items, keys and values renders in every template (their .items() is the mapping\'s, as in Python)', () => {
    // Codex's spawn_agent tool has a parameter named `items`: gpt-oss's template refused every Codex
    // request. An array parameter: Hermes 2 Pro's and 3's templates look its item type up by an undefined key.
    const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } }, keys: { type: 'boolean' }, values: { type: 'integer' } }, required: ['items'] };
    const prompt: ChatPrompt = { ...PROMPT, tools: [{ name: 'get_weather', description: 'Weather for a city', inputSchema: schema }] };
    const refused = TEMPLATES.flatMap((file) => {
      try {
        const { text } = renderPrompt(withTemplate(fs.readFileSync(path.join(DIR, file), 'utf8')), prompt);
        return text.includes('get_weather') ? [] : [`${file}: no tool`];
      } catch (error) {
        return [`${file}: ${(error as Error).message}`];
      }
    });
    expect(refused).toEqual([]);
    // Harmony writes each parameter as TypeScript: the three are there, with their types.
    const harmony = renderPrompt(withTemplate(fs.readFileSync(path.join(DIR, 'openai-gpt-oss-120b.jinja'), 'utf8')), prompt).text;
    expect(harmony).toContain('items: string[]');
    expect(harmony).toContain('keys?: boolean');
    expect(harmony).toContain('values?: number');
  });

  it.each(TEMPLATES)('%s renders a tool conversation', (file) => {
    const template = fs.readFileSync(path.join(DIR, file), 'utf8');
    const loaded = withTemplate(template);
    const { text } = renderPrompt(loaded, PROMPT);
    expect(text).toContain('get_weather');
    if (featuresOf(loaded).toolFormat === 'generic' || template.includes('tool_calls')) expect(text).toContain(CITY);
  });
});

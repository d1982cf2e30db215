/**
 * The Responses dialect's converter (src/http/responses/convert.ts): items to the core's turns, tools
 * and choices, what is left out and what is refused. Pure functions, no server.
 */
import { describe, expect, it } from 'vitest';
import { toResponsesRequest } from '../../src/http/responses/convert.js';
import { ThoughtSeal } from '../../src/http/responses/render.js';
import { responsesSchema, type InputItem, type ResponsesBody } from '../../src/http/responses/schema.js';

const seal = ThoughtSeal.withKey('a key of sixteen or more characters');
const options = { defaultMaxTokens: 100, readSealed: (sealed: string, kind: 'thought' | 'summary') => seal.open(sealed, kind) };
const body = (extra: Record<string, unknown>): ResponsesBody => responsesSchema.parse({ model: 'm', ...extra });
const convert = (extra: Record<string, unknown>) => {
  const b = body(extra);
  const items = (typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : (b.input ?? [])) as InputItem[];
  return toResponsesRequest(b, items, options);
};

describe('Responses items -> core turns', () => {
  it('instructions, developer and system items form the system prompt in order; a string input is one user turn', () => {
    const { request } = convert({ instructions: 'First.', input: [
      { role: 'developer', content: [{ type: 'input_text', text: 'Second.' }] },
      { role: 'user', content: 'Hi' },
      { type: 'message', role: 'system', content: 'Third.' },
    ] });
    expect(request.system).toBe('First.\n\nSecond.\n\nThird.');
    expect(request.messages).toEqual([{ role: 'user', content: 'Hi' }]);
    expect(convert({ input: 'Hello' }).request.messages).toEqual([{ role: 'user', content: 'Hello' }]);
  });

  it('a reasoning item, a message and its calls fed back form one assistant turn; outputs are tool results with their names', () => {
    const { request } = convert({ input: [
      { role: 'user', content: 'Weather?' },
      { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'Call the tool.' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }], id: 'msg_1', status: 'completed' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', id: 'fc_1', status: 'completed' },
      { type: 'function_call', call_id: 'call_2', namespace: 'ns', name: 'spawn', arguments: '' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Sunny.' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'ok' }] },
    ] });
    expect(request.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: 'Checking.', reasoning: 'Call the tool.', toolCalls: [{ id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }, { id: 'call_2', name: 'ns.spawn', input: {} }] },
      { role: 'tool', content: 'Sunny.', callId: 'call_1', name: 'get_weather' },
      { role: 'tool', content: 'ok', callId: 'call_2', name: 'ns.spawn' },
    ]);
  });

  it("a reasoning item's encrypted_content is read back only when this key sealed it as a thought", () => {
    const input = (encrypted: string) => [{ role: 'user', content: 'x' }, { type: 'reasoning', summary: [], encrypted_content: encrypted }, { role: 'assistant', content: 'y' }];
    expect(convert({ input: input(seal.seal('Sealed thought.')) }).request.messages[1]).toMatchObject({ reasoning: 'Sealed thought.' });
    expect(convert({ input: input(ThoughtSeal.withKey('another key of sixteen chars').seal('x')) }).request.messages[1]).not.toHaveProperty('reasoning');
    expect(convert({ input: input(seal.seal('A summary.', 'summary')) }).request.messages[1]).not.toHaveProperty('reasoning');
  });
  it('a reasoning item gives one thought: the sealed one, else its content, else its summary (never their join)', () => {
    const thoughtOf = (item: Record<string, unknown>) => (convert({ input: [{ role: 'user', content: 'x' }, { type: 'reasoning', summary: [], ...item }, { role: 'assistant', content: 'y' }] }).request.messages[1] as { reasoning?: string }).reasoning;
    // As this server writes it (and Codex sends it back): the same thought three times.
    const summary = [{ type: 'summary_text', text: 'Run it.' }];
    const content = [{ type: 'reasoning_text', text: 'Run it.' }];
    expect(thoughtOf({ summary, content, encrypted_content: seal.seal('Run it.') })).toBe('Run it.');
    expect(thoughtOf({ summary, content })).toBe('Run it.');
    expect(thoughtOf({ summary: [{ type: 'summary_text', text: 'Short.' }], content: [{ type: 'reasoning_text', text: 'The whole thought.' }] })).toBe('The whole thought.');
    expect(thoughtOf({ summary: [{ type: 'summary_text', text: 'One.' }, { type: 'summary_text', text: 'Two.' }] })).toBe('One.\n\nTwo.');
  });
});

describe('Responses tools and output', () => {
  const fn = (name: string, strict = false) => ({ type: 'function', name, parameters: { type: 'object', properties: { a: { type: 'string' } } }, strict });
  it('function and namespace tools; hosted tools left out; a forced function and allowed_tools', () => {
    const converted = convert({ input: 'x', tools: [fn('one', true), { type: 'namespace', name: 'ns', description: 'd', tools: [fn('two')] }, { type: 'web_search' }], tool_choice: { type: 'function', name: 'ns.two' } });
    expect(converted.request.tools!.map((t) => [t.name, t.strict ?? false])).toEqual([['one', true], ['ns.two', false]]);
    expect(converted.request.toolChoice).toEqual({ mode: 'tool', name: 'ns.two', parallel: true });
    expect(converted.skippedTools).toEqual(['web_search']);
    expect(converted.namespaced.get('ns.two')).toEqual({ namespace: 'ns', name: 'two' });
    const allowed = convert({ input: 'x', tools: [fn('one'), fn('two')], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'two' }] }, parallel_tool_calls: false });
    expect(allowed.request.tools!.map((t) => t.name)).toEqual(['two']);
    expect(allowed.request.toolChoice).toEqual({ mode: 'any', parallel: false });
  });

  it('tool_choice "auto" with no function tools (only hosted ones, or none: Codex compaction turn) is no choice; "required" needs one', () => {
    expect(convert({ input: 'x', tool_choice: 'auto', tools: [{ type: 'web_search' }] }).request).not.toHaveProperty('toolChoice');
    expect(convert({ input: 'x', tool_choice: 'auto' }).request).not.toHaveProperty('tools');
    expect(() => convert({ input: 'x', tool_choice: 'required' })).toThrow(/"required" requires function tools/);
  });

  it('json_schema through the grammar, reasoning effort to thinking, logprobs through include', () => {
    const { request } = convert({ input: 'x', text: { format: { type: 'json_schema', name: 'o', schema: { type: 'object' }, strict: true } }, reasoning: { effort: 'low' }, include: ['message.output_text.logprobs'], top_logprobs: 3, max_output_tokens: 7 });
    expect(request.output).toEqual({ schema: { type: 'object' }, strict: true });
    expect(request.thinking).toEqual({ enabled: true, level: 'low' });
    expect(request.logprobs).toBe(3);
    expect(request.maxTokens).toBe(7);
    expect(convert({ input: 'x', reasoning: { effort: 'minimal' } }).request.thinking).toEqual({ enabled: false, level: 'low' });
    expect(convert({ input: 'x', reasoning: { effort: 'xhigh' } }).request.thinking).toEqual({ enabled: true, level: 'high' });
    expect(convert({ input: 'x', reasoning: {} }).request.thinking).toEqual({ enabled: true });
    expect(convert({ input: 'x' }).request.maxTokens).toBe(100);
  });

  it('refuses, naming it: a client-run tool type, a forced hosted tool, an image part, an unknown item, background', () => {
    expect(() => convert({ input: 'x', tools: [{ type: 'local_shell' }] })).toThrow(/tools\[0\]\.type: `local_shell`/);
    expect(() => convert({ input: 'x', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } })).toThrow(/tool_choice.type: `web_search`/);
    expect(() => convert({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] })).toThrow(/input\[0\]\.content\[0\]: the image URL must be http\(s\) or a base64 data URL/);
    expect(() => convert({ input: [{ type: 'web_search_call', id: 'w' }] })).toThrow(/input\[0\]\.type: `web_search_call`/);
    expect(() => convert({ input: 'x', background: true })).toThrow(/background/);
    expect(() => convert({ input: [{ role: 'developer', content: 'only a system prompt' }] })).toThrow(/at least one item/);
  });
});

describe('Responses items that do not fit their type', () => {
  it('are refused with the field at fault, never a crash (fuzz seed 1902304015, responses:44)', () => {
    expect(() => convert({ input: [{ type: 'message', role: 'someone', content: 'x' }] })).toThrow(/input\[0\]\.role/);
    expect(() => convert({ input: [{ type: 'message', role: 'user', content: 123 }] })).toThrow(/input\[0\]\.content/);
    // No type and no fitting shape: the body's schema refuses it (a 400 from parseBody), before the converter.
    expect(responsesSchema.safeParse({ model: 'm', input: [{ role: 'user', content: [7] }] }).success).toBe(false);
    expect(() => convert({ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] })).toThrow(/input\[0\]\.call_id/);
    expect(() => convert({ input: [{ type: 'function_call_output', call_id: 'c' }] })).toThrow(/input\[0\]\.output/);
  });
});

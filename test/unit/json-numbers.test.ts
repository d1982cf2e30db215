/**
 * The number rules of the constraining grammars (src/chat/grammar/xgrammar.ts, schema-subset.ts):
 * every number the grammar accepts is one a client's JSON parser reads back as written, a finite
 * double (bounded digits and exponent), an integer a safe integer (|n| <= 2^53 - 1). Driven through
 * the real XGrammar (its own string-acceptance check, no model), for an output schema and for the
 * forced tool calls of both call syntaxes (JSON and Qwen3-Coder's XML parameters). Without the
 * bounds the grammar accepted `-35e70984098409…` (seen on the bundled model: -Infinity to every
 * client, `null` once the server re-serialized a tool's input) and integers past 2^53.
 */
import { describe, expect, it } from 'vitest';
import { planConstraint } from '../../src/chat/grammar/constraint.js';
import { JsonCompletion } from '../../src/chat/grammar/json-completion.js';
import { relaxSchema, unsupportedFeatures } from '../../src/chat/grammar/schema-subset.js';
import { schemaGrammar, structuralTag, xgrammar } from '../../src/chat/grammar/xgrammar.js';
import type { ChatRequest, ToolSpec } from '../../src/core/types.js';
import type { ToolFormat } from '../../src/chat/tools/types.js';

interface Testing {
  Grammar: { fromEBNF(ebnf: string, root?: string): Promise<unknown>; fromStructuralTag(tag: Record<string, unknown>): Promise<unknown> };
  Testings: { isGrammarAcceptString(grammar: unknown, text: string): Promise<boolean> };
}
const x = () => xgrammar() as unknown as Testing;
type Accepts = (text: string) => Promise<boolean>;

const SCHEMA = { type: 'object', properties: { temperature: { type: 'number' }, n: { type: 'integer' } }, required: ['temperature', 'n'] };

async function schemaAcceptor(schema: Record<string, unknown>): Promise<Accepts> {
  const grammar = await x().Grammar.fromEBNF(await schemaGrammar(schema), 'root');
  return (text) => x().Testings.isGrammarAcceptString(grammar, text);
}

const TOOL: ToolSpec = { name: 'set', inputSchema: SCHEMA, strict: true };
const request: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }], maxTokens: 100, sampling: {}, stopStrings: [], tools: [TOOL], toolChoice: { mode: 'tool', name: 'set', parallel: false } };

/** The grammar of a forced call of TOOL in `format`, as the server compiles it. */
async function callAcceptor(format: ToolFormat): Promise<Accepts> {
  const source = planConstraint(request, format)!.source;
  if (source.kind !== 'structural_tag') throw new Error('a forced call is a structural tag');
  const grammar = await x().Grammar.fromStructuralTag(await structuralTag(source.tag));
  return (text) => x().Testings.isGrammarAcceptString(grammar, text);
}

const object = (temperature: string, n = '1') => `{"temperature":${temperature},"n":${n}}`;

/** Numbers a double holds as written: the grammar must take them. */
const GOOD_NUMBERS = ['-35.5', '1e10', '0.125', '0', '-0', '42', '1.5E+3', '2.5e-7', '1e99', '-1E-99', '12345678901234567', '0.30000000000000004', '-12345678901234567.12345678901234567e-12'];
/** Numbers that read back as ±Infinity, or with more digits than any double has: refused. */
const BAD_NUMBERS = ['-35e70984098409840984098409840984098409840984098409840984098409', '1e999', '-1e309', '1e100', '1e-100', '1e0001', '123456789012345678', '0.123456789012345678', '1' + '0'.repeat(400)];
const GOOD_INTEGERS = ['0', '-7', '9007199254740991', '-9007199254740991', '1000000000000000', '8999999999999999'];
const BAD_INTEGERS = ['9007199254740992', '-9007199254740992', '9999999999999999', '12345678901234567', '1e3', '1.0', '-'];

/** Deterministic pseudo-random number texts (a fixed seed: the same candidates every run). */
function candidates(count: number): string[] {
  let seed = 4242;
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  const digits = (n: number) => Array.from({ length: n }, (_, i) => String(i === 0 ? 1 + next(9) : next(10))).join('');
  return Array.from({ length: count }, () => {
    let text = (next(2) ? '-' : '') + (next(4) ? digits(1 + next(22)) : '0');
    if (next(2)) text += '.' + digits(1 + next(22)).replace(/^./, String(next(10)));
    if (next(2)) text += (next(2) ? 'e' : 'E') + ['', '+', '-'][next(3)] + String(next(10)).repeat(1 + next(4));
    return text;
  });
}

describe('the grammar takes only numbers a client reads back as written', () => {
  it('an output schema: ordinary numbers in, an unbounded exponent or too many digits out', async () => {
    const accepts = await schemaAcceptor(SCHEMA);
    for (const t of GOOD_NUMBERS) expect(await accepts(object(t)), t).toBe(true);
    for (const t of BAD_NUMBERS) expect(await accepts(object(t)), t).toBe(false);
    for (const n of GOOD_INTEGERS) expect(await accepts(object('1', n)), n).toBe(true);
    for (const n of BAD_INTEGERS) expect(await accepts(object('1', n)), n).toBe(false);
  });

  it('whatever number it accepts parses to a finite double, whatever integer to a safe integer', async () => {
    const accepts = await schemaAcceptor(SCHEMA);
    let taken = 0;
    for (const t of candidates(300)) {
      if (await accepts(object(t))) {
        taken++;
        expect(Number.isFinite((JSON.parse(object(t)) as { temperature: number }).temperature), t).toBe(true);
      }
      if (await accepts(object('1', t))) expect(Number.isSafeInteger((JSON.parse(object('1', t)) as { n: number }).n), t).toBe(true);
    }
    expect(taken).toBeGreaterThan(50);
  });

  it.each(['hermes', 'llama3-json'] as const)('a forced tool call (%s): the same bounds on its input', async (format) => {
    const accepts = await callAcceptor(format);
    const call = (input: string) => (format === 'hermes' ? `<tool_call>\n{"name": "set", "arguments": ${input}}\n</tool_call>` : `<|python_tag|>{"name": "set", "parameters": ${input}}`);
    for (const t of GOOD_NUMBERS) expect(await accepts(call(object(t))), t).toBe(true);
    for (const t of BAD_NUMBERS) expect(await accepts(call(object(t))), t).toBe(false);
    for (const n of GOOD_INTEGERS) expect(await accepts(call(object('1', n))), n).toBe(true);
    for (const n of BAD_INTEGERS) expect(await accepts(call(object('1', n))), n).toBe(false);
  });

  it("a forced tool call (qwen3-xml): the same bounds on its parameters' values", async () => {
    const accepts = await callAcceptor('qwen3-xml');
    const call = (t: string, n: string) => `<tool_call>\n<function=set>\n<parameter=temperature>\n${t}\n</parameter>\n<parameter=n>\n${n}\n</parameter></function>\n</tool_call>`;
    for (const t of GOOD_NUMBERS) expect(await accepts(call(t, '1')), t).toBe(true);
    for (const t of BAD_NUMBERS) expect(await accepts(call(t, '1')), t).toBe(false);
    for (const n of GOOD_INTEGERS) expect(await accepts(call('1', n)), n).toBe(true);
    for (const n of BAD_INTEGERS) expect(await accepts(call('1', n)), n).toBe(false);
  });

  it("an integer's own bounds hold, within the safe range (a lone minimum, an exclusive or fractional bound)", async () => {
    const accepts = await schemaAcceptor({ type: 'object', properties: { a: { type: 'integer', minimum: -5 }, b: { type: 'integer', exclusiveMaximum: 0 }, c: { type: 'integer', minimum: 1.5, maximum: 1e30 } }, required: ['a', 'b', 'c'] });
    const o = (a: string, b = '-1', c = '2') => `{"a":${a},"b":${b},"c":${c}}`;
    for (const a of ['-5', '-3', '0', '7', '9007199254740991']) expect(await accepts(o(a)), a).toBe(true);
    for (const a of ['-', '-6', '-50', '9007199254740992']) expect(await accepts(o(a)), a).toBe(false);
    for (const b of ['-1', '-9007199254740991']) expect(await accepts(o('0', b)), b).toBe(true);
    for (const b of ['0', '1', '-9007199254740992']) expect(await accepts(o('0', b)), b).toBe(false);
    for (const c of ['2', '9007199254740991']) expect(await accepts(o('0', '-1', c)), c).toBe(true);
    for (const c of ['1', '0', '9007199254740992', '1' + '0'.repeat(30)]) expect(await accepts(o('0', '-1', c)), c).toBe(false);
  });

  it('an integer bound no safe integer meets is a feature the grammar cannot express (a strict schema is refused, another relaxed)', () => {
    const schema = { type: 'object', properties: { big: { type: 'integer', minimum: 1e20 }, low: { type: 'integer', exclusiveMaximum: -9007199254740991 }, wide: { type: 'integer', maximum: 1e30 } } };
    expect(unsupportedFeatures(schema)).toEqual([
      { path: '/properties/big', feature: 'minimum beyond the safe integers (±9007199254740991)' },
      { path: '/properties/low', feature: 'exclusiveMaximum beyond the safe integers (±9007199254740991)' },
    ]);
    expect(relaxSchema(schema).schema).toEqual({ type: 'object', properties: { big: { type: 'integer' }, low: { type: 'integer' }, wide: { type: 'integer', maximum: 1e30 } } });
  });

  it('numbers nested anywhere (type lists, anyOf, untyped values, arrays, extra properties) are bounded too', async () => {
    const schema = {
      type: 'object',
      properties: {
        list: { type: 'array', items: { type: ['number', 'null'] } },
        either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        mixed: { type: ['integer', 'string'] },
        any: {},
        map: { type: 'object', additionalProperties: { type: 'integer' } },
      },
      required: ['list', 'either', 'mixed', 'any', 'map'],
    };
    const accepts = await schemaAcceptor(schema);
    const o = (list: string, either: string, mixed: string, any: string, map: string) => `{"list":[${list}],"either":${either},"mixed":${mixed},"any":${any},"map":{"k":${map}}}`;
    expect(await accepts(o('1.5,null,-2e5', '3', '4', '[1, {"x":2.5}]', '5'))).toBe(true);
    expect(await accepts(o('1e999', '3', '4', '1', '5'))).toBe(false);
    expect(await accepts(o('1', '9007199254740992', '4', '1', '5'))).toBe(false);
    expect(await accepts(o('1', '3', '9007199254740992', '1', '5'))).toBe(false);
    expect(await accepts(o('1', '3', '4', '[1e999]', '5'))).toBe(false);
    expect(await accepts(o('1', '3', '4', '{"x":-1e400}', '5'))).toBe(false);
    expect(await accepts(o('1', '3', '4', '1', '99999999999999999'))).toBe(false);
  });

  it('what the budget rule completes a cut number with is a number the grammar takes', async () => {
    const accepts = await schemaAcceptor(SCHEMA);
    for (const t of GOOD_NUMBERS) {
      const full = object(t, '-9007199254740991');
      for (let cut = 0; cut <= full.length; cut++) {
        const json = new JsonCompletion(SCHEMA);
        json.push(full.slice(0, cut));
        const rest = json.completion();
        expect(rest, full.slice(0, cut)).toBeDefined();
        expect(await accepts(full.slice(0, cut) + rest!), full.slice(0, cut) + rest!).toBe(true);
      }
    }
  });
});

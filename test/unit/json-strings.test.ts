/**
 * The string rules of the JSON-schema grammars write valid JSON (src/chat/grammar/json-strings.ts):
 * through the real XGrammar (its own string-acceptance check, no model), every string the grammar
 * accepts parses as JSON and is valid against the schema. Candidates are drawn from an alphabet
 * with the characters JSON must escape (`"`, `\`, a tab, a newline) and the schemas' own characters.
 * Without the rewrite the first cases fail: XGrammar accepts a raw tab in a `maxLength` string and a
 * raw `"` for a pattern's `.`.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { jsonSafeStrings } from '../../src/chat/grammar/json-strings.js';
import { schemaGrammar, xgrammar } from '../../src/chat/grammar/xgrammar.js';

interface Testing {
  Grammar: { fromEBNF(ebnf: string, root?: string): Promise<unknown> };
  Testings: { isGrammarAcceptString(grammar: unknown, text: string): Promise<boolean> };
}
const x = () => xgrammar() as unknown as Testing;
/** Formats unchecked: XGrammar's email, say, allows a domain without a dot where ajv-formats does not; what is tested is the JSON. */
const ajv = new Ajv({ strict: false });

async function acceptor(schema: Record<string, unknown>): Promise<(text: string) => Promise<boolean>> {
  const grammar = await x().Grammar.fromEBNF(await schemaGrammar(schema), 'root');
  return (text) => x().Testings.isGrammarAcceptString(grammar, text);
}

/** Deterministic pseudo-random strings over `alphabet` (a fixed seed: the same candidates every run). */
function candidates(alphabet: string[], count: number, maxLength: number): string[] {
  let seed = 12345;
  const next = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed);
  return Array.from({ length: count }, () => Array.from({ length: 1 + (next() % maxLength) }, () => alphabet[next() % alphabet.length]).join(''));
}

const ALPHABET = ['a', 'b', 'x', '"', '\\', '\t', '\n', '@', '.', 'n', 'A', '1', '\\"', '\\\\', '\\t'];

const CASES: Array<{ name: string; schema: Record<string, unknown>; valid: string[]; invalid: string[] }> = [
  { name: 'maxLength', schema: { type: 'string', maxLength: 5 }, valid: ['"ab"', '""'], invalid: ['"a\tb"', '"a\nb"', '"a"b"'] },
  { name: 'minLength', schema: { type: 'string', minLength: 2 }, valid: ['"abc"'], invalid: ['"a\tb"', '"a\\b"'] },
  { name: "a pattern's dot and negated class", schema: { type: 'string', pattern: '^a.[^x]$' }, valid: ['"abb"'], invalid: ['"a"b"', '"a\tb"', '"ab\n"'] },
  { name: "a pattern's literal quote, backslash and tab", schema: { type: 'string', pattern: '^a"\\\\\\t$' }, valid: [JSON.stringify('a"\\\t')], invalid: ['"a"\\\t"'] },
  { name: 'email', schema: { type: 'string', format: 'email' }, valid: ['"a@b.io"'], invalid: ['"a\t@b.io"'] },
  { name: 'nested in an object', schema: { type: 'object', properties: { s: { type: 'string', maxLength: 4 }, p: { type: 'string', pattern: '^.+$' } }, required: ['s', 'p'] }, valid: ['{"s":"ab","p":"x"}'], invalid: ['{"s":"a\tb","p":"x"}', '{"s":"ab","p":"x"y"}'] },
];

describe('JSON-schema grammars write valid JSON strings', () => {
  for (const { name, schema, valid, invalid } of CASES) {
    it(`${name}: the grammar accepts only JSON the schema validates`, async () => {
      const accepts = await acceptor(schema);
      for (const text of valid) expect(await accepts(text), text).toBe(true);
      for (const text of invalid) expect(await accepts(text), text).toBe(false);
      const wrap = schema.type === 'object' ? (s: string) => `{"s":"${s.slice(0, 4)}","p":"${s}"}` : (s: string) => `"${s}"`;
      for (const text of [...valid, ...candidates(ALPHABET, 1500, 6).map(wrap)]) {
        if (!(await accepts(text))) continue;
        let value: unknown;
        expect(() => (value = JSON.parse(text)), text).not.toThrow();
        expect(ajv.validate(schema, value), text).toBe(true);
      }
    });
  }

  it('rules outside strings are left as written (whitespace lookaheads, unbounded strings, enums)', () => {
    const ebnf = [
      String.raw`basic_string_sub ::= ("\"" | [^\0-\x1f\"\\\r\n] basic_string_sub | "\\" basic_escape basic_string_sub) (= [ \n\t]* [,}\]:])`,
      String.raw`root_prop_3 ::= ("\"a\\\"b\"") | ("\"c\\\\d\"")`,
      String.raw`string ::= "\"" [^"\\\r\n]{0,40} "\""`,
    ].join('\n');
    const out = jsonSafeStrings(ebnf).split('\n');
    expect(out.slice(0, 2)).toEqual(ebnf.split('\n').slice(0, 2));
    expect(out[2]).toBe(String.raw`string ::= "\"" [^\u0000-\u001f\u0022\u005c]{0,40} "\""`);
  });
});

/**
 * Schemas the grammar compiler would abort on are found before it sees them (issue 37): each problem
 * by keyword, path and reason; a tool schema that is not strict loses the keyword instead; the
 * patterns the compiler cannot parse; the calls-or-JSON grammar XGrammar's structural tags cannot say.
 */
import { describe, expect, it } from 'vitest';
import { planConstraint } from '../../src/chat/grammar/constraint.js';
import { invalidRegex, unsupportedRegex } from '../../src/chat/grammar/regex-subset.js';
import { MAX_COUNT, schemaProblems } from '../../src/chat/grammar/schema-problems.js';
import { MAX_SCHEMA_DEPTH, relaxSchema, unsupportedFeatures, withinReach, withSafeIntegers } from '../../src/chat/grammar/schema-subset.js';
import { renamed, tagsGrammar } from '../../src/chat/grammar/tag-grammar.js';
import { CoreError } from '../../src/core/errors.js';
import type { ChatRequest, ToolSpec } from '../../src/core/types.js';

const request = (extra: Partial<ChatRequest>): ChatRequest => ({ model: 'm', messages: [{ role: 'user', content: 'hi' }], maxTokens: 100, sampling: {}, stopStrings: [], ...extra });

/** Each schema, the keyword blamed, where, and a phrase of the reason. */
const PROBLEMS: Array<[string, unknown, string, string, RegExp]> = [
  ['minimum above maximum', { type: 'integer', minimum: 10, maximum: 1 }, 'minimum', '', /no integer/],
  ['exclusive bounds that leave no integer', { type: 'integer', exclusiveMinimum: 5, maximum: 5 }, 'exclusiveMinimum', '', /no integer/],
  ['minLength above maxLength', { type: 'string', minLength: 5, maxLength: 1 }, 'minLength', '', /minLength \(5\) is above maxLength \(1\)/],
  ['minItems above maxItems', { type: 'array', minItems: 3, maxItems: 2 }, 'minItems', '', /above maxItems/],
  ['minItems beyond prefixItems with items: false', { type: 'array', prefixItems: [{ type: 'integer' }], items: false, minItems: 2 }, 'minItems', '', /prefixItems/],
  ['an empty enum', { enum: [] }, 'enum', '', /non-empty/],
  ['an enum with no value of the type', { type: 'integer', enum: ['a', 1.5] }, 'enum', '', /of type integer/],
  ['a const of another type', { type: 'string', const: 3 }, 'const', '', /of type string/],
  ['a pattern that is no regular expression', { type: 'string', pattern: '((' }, 'pattern', '', /not a valid regular expression/],
  ['a pattern of the wrong type', { type: 'string', pattern: 5 }, 'pattern', '', /must be a string/],
  ['an unknown type', { type: 'foo' }, 'type', '', /not a JSON Schema type/],
  ['a $ref to no definition', { $ref: '#/$defs/missing' }, '$ref', '', /names no definition/],
  ['a $ref to an Object.prototype name', { $ref: '#/$defs/__proto__', $defs: {} }, '$ref', '', /names no definition/],
  ['a huge minLength', { type: 'string', minLength: 9007199254740993 }, 'minLength', '', new RegExp(`from 0 to ${MAX_COUNT}`)],
  ['a negative minLength', { type: 'string', minLength: -2147483649 }, 'minLength', '', /from 0 to/],
  ['a fractional maxItems', { type: 'array', maxItems: 1.5 }, 'maxItems', '', /from 0 to/],
  ['a string minimum', { type: 'integer', minimum: '3' }, 'minimum', '', /must be a number/],
  ['required not an array', { type: 'object', required: 'a' }, 'required', '', /array of property names/],
  ['a required property additionalProperties forbids', { type: 'object', properties: {}, required: ['a'], additionalProperties: false }, 'required', '', /forbids/],
  ['properties not an object', { type: 'object', properties: 5 }, 'properties', '', /object of schemas/],
  ['a false property', { type: 'object', properties: { a: false } }, 'properties', '', /properties\.a must be a schema/],
  ['items of the wrong type', { type: 'array', items: 5 }, 'items', '', /must be a schema/],
  ['an empty anyOf', { anyOf: [] }, 'anyOf', '', /non-empty/],
  ['nested problems are found where they are', { type: 'object', properties: { a: { type: 'array', items: { type: 'string', minLength: 4, maxLength: 2 } } } }, 'minLength', '/properties/a/items', /above maxLength/],
];

describe('schema problems (what the grammar compiler would abort on)', () => {
  it.each(PROBLEMS)('%s', (_name, schema, feature, path, reason) => {
    const [first] = schemaProblems(schema);
    expect(first).toMatchObject({ feature, path });
    expect(first!.problem).toMatch(reason);
  });

  it('valid schemas have none, whatever their property names (Object.prototype names included)', () => {
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
    const schema = JSON.parse(
      JSON.stringify({
        type: 'object',
        properties: Object.fromEntries(names.map((n) => [n, { type: 'string', minLength: 0, maxLength: MAX_COUNT, pattern: '^[a-z]+$' }])),
        required: names,
        additionalProperties: false,
        $defs: { constructor: { type: 'integer', minimum: -5, maximum: 5 } },
      }),
    );
    schema.properties.n = { $ref: '#/$defs/constructor' };
    expect(schemaProblems(schema)).toEqual([]);
    expect(schemaProblems({ type: ['string', 'null'], enum: ['a', null] })).toEqual([]);
    expect(schemaProblems({ type: 'array', prefixItems: [{ type: 'integer' }], items: false, minItems: 1 })).toEqual([]);
  });

  it(`subschemas nested deeper than ${MAX_SCHEMA_DEPTH} levels are refused, not walked`, () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 10_000; i++) deep = { type: 'array', items: deep };
    const [first] = schemaProblems(deep);
    expect(first).toMatchObject({ feature: 'items' });
    expect(first!.problem).toMatch(/deeper than 64/);
    expect(first!.path.split('/').length - 1).toBe(MAX_SCHEMA_DEPTH);
  });
});

describe('what the compiler is given', () => {
  it('an array whose minItems needs items beyond its prefixItems gets any item where it names none (the converter read none as items: false and aborted)', () => {
    expect(withSafeIntegers({ type: 'array', minItems: 4097 })).toEqual({ type: 'array', minItems: 4097, items: {} });
    expect(withSafeIntegers({ type: 'array', prefixItems: [{ type: 'integer' }], minItems: 1 })).toEqual({ type: 'array', prefixItems: [{ type: 'integer' }], minItems: 1 });
    expect(withSafeIntegers({ type: 'array', minItems: 2, items: false })).toEqual({ type: 'array', minItems: 2, items: false });
  });

  it('a `__proto__` key where a keyword goes is no keyword: the copies do not take the client\'s object as their prototype', () => {
    const schema = JSON.parse('{"type":"object","__proto__":{"type":"integer","minimum":5,"maximum":1},"properties":{"__proto__":{"type":"string"}}}');
    for (const copy of [withSafeIntegers(schema) as Record<string, unknown>, relaxSchema(schema).schema]) {
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
      expect(JSON.stringify(copy)).toBe('{"type":"object","properties":{"__proto__":{"type":"string"}}}');
    }
  });
});

describe('patterns', () => {
  it.each([
    ['(?=a)a', /lookahead/],
    ['(?!a)b', /lookahead/],
    ['(?<=a)b', /lookbehind/],
    ['(a)\\1', /backreference/],
    ['(?<n>a)\\k<n>', /backreference/],
    ['\\ba', /word boundary/],
    ['\\p{L}+', /Unicode property/],
  ])('%s is a construct the grammar cannot express', (pattern, construct) => {
    expect(invalidRegex(pattern)).toBeUndefined();
    expect(unsupportedRegex(pattern)).toMatch(construct);
    expect(unsupportedFeatures({ type: 'string', pattern })[0]?.feature).toMatch(/^pattern: /);
  });

  it.each(['^[a-z]+$', '(?:ab)+', '(?<n>a)b', '[\\b]', '\\d{3}-\\w+\\s?', 'a+?', '[(?=]'])('%s is taken', (pattern) => {
    expect(invalidRegex(pattern)).toBeUndefined();
    expect(unsupportedRegex(pattern)).toBeUndefined();
  });

  it.each(['((', 'a{,5}', 'a**', '(?i)a', 'a{2,1}', '\\_'])('%s is no regular expression (with the u flag, as validators read it)', (pattern) => {
    expect(invalidRegex(pattern)).toBeDefined();
  });
});

describe('constraints refuse or relax problems', () => {
  const bad = { type: 'object', properties: { n: { type: 'integer', minimum: 10, maximum: 1 } } };
  const refused = (req: ChatRequest) => {
    try {
      planConstraint(req, 'hermes');
    } catch (error) {
      return error as CoreError;
    }
    throw new Error('not refused');
  };

  it('an output schema with a problem is refused, strict or not, with the keyword, path and reason', () => {
    for (const strict of [true, false]) {
      const error = refused(request({ output: { schema: bad, strict } }));
      expect(error.code).toBe('schema_unsupported');
      expect(error.details).toMatchObject({ reason: 'output', feature: 'minimum', schemaPath: '/properties/n' });
      expect(error.details.problem).toMatch(/no integer/);
    }
  });

  it('a strict tool with a problem is refused with its index; a tool that is not strict loses the keyword', () => {
    const tool = (strict: boolean): ToolSpec => ({ name: 'f', inputSchema: bad, ...(strict ? { strict } : {}) });
    const error = refused(request({ tools: [{ name: 'g', inputSchema: { type: 'object' } }, tool(true)], toolChoice: { mode: 'auto', parallel: true } }));
    expect(error.details).toMatchObject({ reason: 'tool', item: 1, feature: 'minimum' });
    const constraint = planConstraint(request({ tools: [tool(false)], toolChoice: { mode: 'any', parallel: true } }), 'hermes')!;
    expect(constraint.relaxed).toEqual([{ path: '/properties/n', feature: 'minimum', tool: 'f' }]);
    expect(JSON.stringify(constraint.source)).toContain('"maximum":1');
    expect(JSON.stringify(constraint.source)).not.toContain('"minimum":10');
  });

  it('an output schema beside a strict tool under auto: the JSON value or the calls', () => {
    const constraint = planConstraint(
      request({ output: { schema: { type: 'object' }, strict: true }, tools: [{ name: 'f', inputSchema: { type: 'object' }, strict: true }], toolChoice: { mode: 'auto', parallel: true } }),
      'hermes',
    )!;
    expect(constraint.source).toMatchObject({ kind: 'structural_tag', tag: { type: 'or', elements: [{ type: 'json_schema' }, { type: 'tags_with_separator' }] } });
  });
});

describe('tags with a separator as one grammar', () => {
  it('renames each rule and its references, not words inside literals or classes', () => {
    const ebnf = 'root ::= "root" item [root]\nitem ::= "x" root?';
    expect(renamed(ebnf, 't0_')).toBe('t0_root ::= "root" t0_item [root]\nt0_item ::= "x" t0_root?');
    expect(renamed('root ::= "a\\"root" root', 'p_')).toBe('p_root ::= "a\\"root" p_root');
  });

  it('one call, or calls with their separator, each tag between its begin and end', () => {
    const tags = [
      { begin: '<a>', content: { type: 'grammar', grammar: 'root ::= "1"' }, end: '</a>' },
      { begin: '<b>', content: { type: 'grammar', grammar: 'root ::= "2"' }, end: '</b>' },
    ];
    const many = tagsGrammar({ tags, separator: '\n', at_least_one: true, stop_after_first: false });
    expect(many.split('\n').slice(0, 2)).toEqual(['root ::= tag_call ("\\n" tag_call)*', 'tag_call ::= ("<a>" t0_root "</a>") | ("<b>" t1_root "</b>")']);
    expect(tagsGrammar({ tags, separator: '\n', at_least_one: true, stop_after_first: true }).split('\n')[0]).toBe('root ::= tag_call');
  });
});

describe('counts beyond what the output can hold', () => {
  it('a maxLength or maxItems of the reach or more goes; a minLength or minItems above it becomes reach + 1; the rest stays, at any depth', () => {
    const schema = {
      type: 'object',
      properties: {
        s: { type: 'string', maxLength: 256, minLength: 2 },
        t: { type: 'string', maxLength: 255, minLength: 257 },
        a: { type: 'array', maxItems: 1e6, minItems: 1e6, items: { anyOf: [{ type: 'string', minLength: 300 }, { type: 'integer' }] } },
      },
      $defs: { d: { type: 'string', maxLength: 9999 } },
    };
    expect(withinReach(schema, 256)).toEqual({
      type: 'object',
      properties: {
        s: { type: 'string', minLength: 2 },
        t: { type: 'string', maxLength: 255, minLength: 257 },
        a: { type: 'array', minItems: 257, items: { anyOf: [{ type: 'string', minLength: 257 }, { type: 'integer' }] } },
      },
      $defs: { d: { type: 'string' } },
    });
  });

  it('the plan applies it to the output schema and to every tool, strict or not, only when given a reach', () => {
    const bounded = { type: 'object', properties: { x: { type: 'string', maxLength: 4097 } }, required: ['x'] };
    const tools: ToolSpec[] = [{ name: 'f', inputSchema: bounded, strict: true }, { name: 'g', inputSchema: bounded }];
    const req = request({ maxTokens: 2, tools, toolChoice: { mode: 'auto', parallel: true }, output: { schema: bounded, strict: true } });
    expect(JSON.stringify(planConstraint(req, 'hermes')!.source).match(/maxLength/g)).toHaveLength(3);
    expect(JSON.stringify(planConstraint(req, 'hermes', false, 4097)!.source)).not.toContain('maxLength');
    expect(JSON.stringify(planConstraint(req, 'hermes', false, 4098)!.source).match(/maxLength/g)).toHaveLength(3);
  });
});

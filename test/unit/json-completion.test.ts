/**
 * The budget rule's JSON completion (src/chat/grammar/json-completion.ts): cut a valid instance,
 * in the grammar's compact form, after every character; the completion it proposes must make it
 * valid again (checked by ajv), and be '' exactly when the value is complete.
 */
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { JsonCompletion } from '../../src/chat/grammar/json-completion.js';
import { relaxSchema, unsupportedFeatures } from '../../src/chat/grammar/schema-subset.js';

const ajv = new Ajv({ strict: false });

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 2 },
    kind: { type: 'string', enum: ['cat', 'caterpillar', 'dog'] },
    age: { type: 'integer', minimum: 10, maximum: 99 },
    score: { type: 'number' },
    ok: { type: 'boolean' },
    none: { type: 'null' },
    tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
    pair: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string' }], minItems: 2 },
    inner: { $ref: '#/$defs/inner' },
    either: { anyOf: [{ type: 'integer' }, { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] }] },
    note: { type: 'string' },
  },
  required: ['name', 'kind', 'age', 'tags', 'inner', 'either'],
  additionalProperties: false,
  $defs: { inner: { type: 'object', properties: { deep: { type: 'array', items: { $ref: '#/$defs/leaf' } }, flag: { type: 'boolean' } }, required: ['flag'] }, leaf: { type: 'object', properties: { v: { type: 'integer' } }, required: ['v'] } },
};

const INSTANCES = [
  '{"name":"Rex \\"the\\" \\u00e9dog","kind":"caterpillar","age":42,"score":-1.5e3,"ok":true,"none":null,"tags":["a","b","c"],"pair":[7,"x"],"inner":{"deep":[{"v":1},{"v":-20}],"flag":false},"either":{"x":"y"},"note":"n"}',
  '{"name":"ab","kind":"dog","age":10,"tags":["",""],"inner":{"flag":true},"either":12}',
  '{"name":"Zoë 🐈","kind":"cat","age":99,"ok":false,"tags":["x","y"],"pair":[0,""],"inner":{"deep":[],"flag":true},"either":-3,"note":""}',
];

describe('JsonCompletion', () => {
  it.each(INSTANCES.map((i) => [i.slice(0, 40), i] as const))('every prefix of %s… completes to a valid instance', (_label, instance) => {
    expect(ajv.validate(SCHEMA, JSON.parse(instance)), JSON.stringify(ajv.errors)).toBe(true);
    for (let cut = 0; cut <= instance.length; cut++) {
      const prefix = instance.slice(0, cut);
      const tracker = new JsonCompletion(SCHEMA);
      // Fed in uneven pieces, as tokens come.
      for (let at = 0; at < prefix.length; at += 1 + (at % 3)) tracker.push(prefix.slice(at, at + 1 + (at % 3)));
      const rest = tracker.completion();
      expect(rest, `after ${JSON.stringify(prefix)}`).toBeDefined();
      const whole = prefix + rest;
      let parsed: unknown;
      expect(() => (parsed = JSON.parse(whole)), whole).not.toThrow();
      expect(ajv.validate(SCHEMA, parsed), `${whole} ${JSON.stringify(ajv.errors)}`).toBe(true);
      expect(rest === '', whole).toBe(cut === instance.length);
    }
  });

  it('returns the text after the value ends, and is complete from then on', () => {
    const tracker = new JsonCompletion({ type: 'integer' });
    expect(tracker.push('12')).toBe('');
    expect(tracker.complete).toBe(false);
    expect(tracker.push('}\n</tool_call>')).toBe('}\n</tool_call>');
    expect(tracker.complete).toBe(true);
    expect(tracker.completion()).toBe('');
  });

  it('a pattern-constrained string: its shortest match before it begins, no completion once begun (nothing is forced); a format: the rest its rule needs', () => {
    const tracker = new JsonCompletion({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } }, required: ['code'] });
    expect(tracker.completion()).toBe('{"code":"A"}');
    tracker.push('{"code":"AB');
    expect(tracker.completion()).toBeUndefined();
    expect(new JsonCompletion({ type: 'string', pattern: '(?=x)x' }).completion()).toBeUndefined();
    expect(new JsonCompletion({ type: 'string', format: 'date' }).completion()).toBe('"2000-01-01"');
    const email = new JsonCompletion({ type: 'object', properties: { email: { type: 'string', format: 'email' }, n: { type: 'integer' } }, required: ['email', 'n'] });
    email.push('{"email":"jo.');
    expect(email.completion()).toBe('a@a","n":0}');
    expect(new JsonCompletion({ type: 'string', format: 'uri' }).completion()).toBeUndefined();
  });

  it('text that is not the JSON it expects: no completion is offered', () => {
    const tracker = new JsonCompletion({ type: 'object' });
    tracker.push('hello');
    expect(tracker.completion()).toBeUndefined();
  });
});

describe('the schema subset the grammar enforces', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'integer', multipleOf: 2, minimum: 0 },
      b: { oneOf: [{ type: 'string', format: 'iri' }, { type: 'integer' }] },
      c: { type: 'number', maximum: 3 },
      d: { type: 'array', items: { type: 'string' }, uniqueItems: true },
      e: { type: 'string', format: 'email', pattern: '^a', description: 'kept' },
      f: { $ref: 'https://example.com/x' },
    },
    required: ['a'],
    not: { required: ['z'] },
  };

  it('names each feature it cannot enforce, with its path', () => {
    expect(unsupportedFeatures(schema)).toEqual([
      { path: '', feature: 'not' },
      { path: '/properties/a', feature: 'multipleOf' },
      { path: '/properties/b', feature: 'oneOf' },
      { path: '/properties/c', feature: 'maximum on a non-integer number' },
      { path: '/properties/d', feature: 'uniqueItems' },
      { path: '/properties/f', feature: '$ref: "https://example.com/x" (only #/$defs/… and #/definitions/… references)' },
    ]);
    expect(unsupportedFeatures({ type: 'object', properties: { x: { type: 'integer', minimum: 1 }, y: { type: 'string', format: 'date-time', maxLength: 30 } }, $defs: { z: { type: 'boolean' } } })).toEqual([]);
  });

  it('relaxing drops exactly those keywords (oneOf becomes anyOf): what validated still validates, and nothing unsupported is left', () => {
    const { f: _, ...local } = schema.properties; // ajv cannot fetch the remote $ref
    const { schema: relaxed, relaxed: dropped } = relaxSchema({ ...schema, properties: local });
    expect(dropped.map((f) => f.feature)).toContain('format: "iri"');
    expect(unsupportedFeatures(relaxed)).toEqual([]);
    for (const value of [{ a: 4, b: 'http://x', c: 1, d: ['p', 'q'], e: 'a@b.c' }, { a: 0, b: 3 }]) {
      expect(ajv.validate({ ...schema, properties: local }, value)).toBe(true);
      expect(ajv.validate(relaxed, value)).toBe(true);
    }
    expect((relaxed.properties as Record<string, Record<string, unknown>>).e).toEqual(schema.properties.e);
  });
});

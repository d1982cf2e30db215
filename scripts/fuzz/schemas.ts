/**
 * Hostile JSON schemas and Object.prototype names, for the bodies of the chat routes (issue 37): a
 * schema that no value satisfies, that is not JSON Schema, or whose bounds are absurd, put where each
 * dialect carries one (an output format, a strict or plain tool); and `constructor`, `__proto__`…
 * as the types, roles and tool names the converters look up. Used by cases.ts; the run of refused
 * schemas followed by valid ones is test/clients/fuzz-server.test.ts's.
 */
import { ODD_NUMBERS, type Random } from './random.js';

export const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf'] as const;
export type ChatDialect = 'messages' | 'chat' | 'responses';

const BAD_PATTERNS = ['((', '(?=a)a', '(?<=a)b', '(a)\\1', '\\bword', '\\p{L}+', 'a{,5}', 'a**', '(?i)a', 'a{2,1}', '[z-a]', '\\', ''];
const HUGE = [9007199254740993, -2147483649, 1e300, -1, 1.5, 2 ** 31, '5', null, true];

/** One hostile subschema, and its label. */
export function hostileSchema(rng: Random): [Record<string, unknown>, string] {
  const count = () => rng.pick<unknown>([...HUGE, ...ODD_NUMBERS]);
  const options: Array<[number, () => [Record<string, unknown>, string]]> = [
    [3, () => { const lo = rng.int(1, 100); return [{ type: 'integer', minimum: lo, maximum: lo - rng.int(1, 50) }, 'minimum above maximum']; }],
    [2, () => [{ type: 'integer', exclusiveMinimum: 5, exclusiveMaximum: 6 }, 'no integer between exclusive bounds']],
    [3, () => [{ type: 'string', minLength: rng.int(5, 50), maxLength: rng.int(0, 4) }, 'minLength above maxLength']],
    [2, () => [{ type: 'array', minItems: 4, maxItems: 2 }, 'minItems above maxItems']],
    [3, () => { const key = rng.pick(['minLength', 'maxLength', 'minItems', 'maxItems', 'minimum', 'maximum']); const v = count(); return [{ type: key.endsWith('Items') ? 'array' : key.endsWith('imum') ? 'integer' : 'string', [key]: v }, `${key} ${JSON.stringify(v)}`]; }],
    [3, () => { const p = rng.pick(BAD_PATTERNS); return [{ type: 'string', pattern: p }, `pattern ${JSON.stringify(p)}`]; }],
    [2, () => [{ enum: [] }, 'empty enum']],
    [1, () => [{ type: 'integer', enum: ['a', 'b'] }, 'enum of no allowed type']],
    [2, () => { const n = rng.pick(PROTOTYPE_NAMES); return [{ $ref: `#/$defs/${n}` }, `$ref to ${n}`]; }],
    [2, () => { const n = rng.pick([...PROTOTYPE_NAMES, 'foo', 'int']); return [{ type: n }, `type ${n}`]; }],
    [1, () => [{ type: 'object', properties: { a: { type: 'string' } }, required: ['b'], additionalProperties: false }, 'required property forbidden']],
    [1, () => [{ type: 'object', properties: { a: false }, required: ['a'] }, 'false property']],
    [1, () => { let s: Record<string, unknown> = { type: 'string' }; for (let i = 0; i < rng.int(65, 200); i++) s = { type: 'array', items: s }; return [s, 'nested 65+ levels']; }],
    [1, () => [{ anyOf: [] }, 'empty anyOf']],
    [2, () => { const n = rng.pick(PROTOTYPE_NAMES); return [{ type: 'object', properties: { [n]: { type: 'string', format: n } }, required: [n] }, `property and format ${n} (valid)`]; }],
  ];
  return rng.weighted(options)();
}

/** `body` (a valid request of `dialect`) with a hostile schema where that dialect carries one; the label. */
export function withHostileSchema(rng: Random, body: Record<string, unknown>, dialect: ChatDialect): string {
  const [inner, what] = hostileSchema(rng);
  const schema = { type: 'object', properties: { x: inner }, required: ['x'] };
  const strict = rng.chance(0.6);
  const door = rng.pick(['output', 'tool', 'forced tool']);
  if (door === 'output') {
    if (dialect === 'messages') body.output_config = { format: { type: 'json_schema', schema } };
    else if (dialect === 'chat') body.response_format = { type: 'json_schema', json_schema: { name: 'x', schema, strict } };
    else body.text = { format: { type: 'json_schema', name: 'x', schema, strict } };
  } else {
    const forced = door === 'forced tool';
    if (dialect === 'messages') Object.assign(body, { tools: [{ name: 'f', input_schema: schema, strict }], ...(forced ? { tool_choice: { type: 'any' } } : {}) });
    else if (dialect === 'chat') Object.assign(body, { tools: [{ type: 'function', function: { name: 'f', parameters: schema, strict } }], ...(forced ? { tool_choice: 'required' } : {}) });
    else Object.assign(body, { tools: [{ type: 'function', name: 'f', parameters: schema, strict }], ...(forced ? { tool_choice: 'required' } : {}) });
  }
  return `schema (${door}${strict ? ', strict' : ''}): ${what}`;
}

/** `body` with an Object.prototype name as a role, a block or item type, or a tool's name; the label. */
export function withPrototypeName(rng: Random, body: Record<string, unknown>, dialect: ChatDialect): string {
  const name = rng.pick(PROTOTYPE_NAMES);
  const where = rng.pick(['role', 'type', 'tool', 'tool_choice']);
  const tool = dialect === 'messages' ? { name, input_schema: { type: 'object' } } : dialect === 'chat' ? { type: 'function', function: { name, parameters: { type: 'object' } } } : { type: 'function', name, parameters: { type: 'object' } };
  if (where === 'role') body[dialect === 'responses' ? 'input' : 'messages'] = [{ role: name, content: 'hi' }];
  else if (where === 'type') {
    if (dialect === 'responses') body.input = [{ type: name, role: 'user', content: 'hi' }];
    else body.messages = [{ role: 'user', content: [{ type: name, text: 'hi' }] }];
  } else if (where === 'tool') body.tools = [tool];
  else {
    body.tools = [tool];
    body.tool_choice = dialect === 'messages' ? { type: rng.pick(['tool', name]), name } : dialect === 'chat' ? { type: rng.pick(['function', name]), function: { name: rng.pick([name, null]) } } : { type: rng.pick(['function', 'allowed_tools', name]), name: rng.pick([name, null]) };
  }
  return `${where}: ${name}`;
}

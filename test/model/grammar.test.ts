/**
 * The grammar layer (src/chat/grammar) on the bundled model's real tokenizer and vocabulary: what
 * the masks allow at the points that matter, token by token, without sampling (so nothing here
 * depends on the random weights).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { planConstraint } from '../../src/chat/grammar/constraint.js';
import { GrammarCompileError, instancesLoaded, longestTokenChars, matcherFor, type Matcher } from '../../src/chat/grammar/xgrammar.js';
import type { ChatRequest, ToolSpec } from '../../src/core/types.js';
import { CoreError } from '../../src/core/errors.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { testEngine } from '../helpers/engine.js';

let loaded: LoadedModel;
let vocab: number;
beforeAll(async () => {
  const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === CHAT_MODEL)!;
  loaded = await loadModel(info, testEngine({ ortAllowSpinning: false }));
  vocab = (loaded.model.config as unknown as { vocab_size: number }).vocab_size;
});

const WEATHER: ToolSpec = { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };
const NOTE: ToolSpec = { name: 'note', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
const request = (extra: Partial<ChatRequest>): ChatRequest => ({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }], maxTokens: 100, sampling: {}, stopStrings: [], ...extra });
const ids = (text: string) => loaded.tokenizer.encode(text, { add_special_tokens: false });
const allows = (mask: Uint32Array, id: number) => ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;

async function matcher(req: ChatRequest): Promise<Matcher> {
  const constraint = planConstraint(req, 'hermes');
  expect(constraint).toBeDefined();
  return matcherFor(loaded, vocab, constraint!.source);
}

/** Feeds `text` token by token, each checked against the mask first. */
async function feed(m: Matcher, text: string): Promise<void> {
  for (const id of ids(text)) {
    expect(allows(await m.mask(), id), `token ${JSON.stringify(loaded.tokenizer.decode([id]))} of ${JSON.stringify(text)}`).toBe(true);
    expect(m.accept(id)).toBe(true);
  }
}

describe('constraints on the bundled model', () => {
  it('auto with a strict tool: free text passes untouched; a call the model opens is constrained to the schema', async () => {
    const m = await matcher(request({ tools: [WEATHER, NOTE], toolChoice: { mode: 'auto', parallel: true } }));
    await feed(m, 'Sure, let me check that for you. {} [] "quotes" ');
    const eos = loaded.eosTokenIds[0]!;
    expect(allows(await m.mask(), eos)).toBe(true); // free text may end here
    await feed(m, '<tool_call>\n{"name": "get_weather", "arguments": {');
    const mask = await m.mask();
    expect(allows(mask, ids('"')[0]!)).toBe(true);
    expect(allows(mask, ids('}')[0]!)).toBe(false); // city is required
    expect(allows(mask, eos)).toBe(false);
    await feed(m, '"city":"Paris"}}\n</tool_call>');
    expect(allows(await m.mask(), eos)).toBe(true);
    m.dispose();
  });

  it('tool_choice tool: only the named tool, from the first token; nothing but the end after one call when parallel calls are off', async () => {
    const m = await matcher(request({ tools: [WEATHER, NOTE], toolChoice: { mode: 'tool', name: 'note', parallel: false } }));
    const first = await m.mask();
    expect(allows(first, ids('Sure')[0]!)).toBe(false);
    expect(allows(first, loaded.eosTokenIds[0]!)).toBe(false);
    await feed(m, '<tool_call>\n{"name": "');
    expect(allows(await m.mask(), ids('get')[0]!)).toBe(false);
    await feed(m, 'note", "arguments": {"text":"x"}}\n</tool_call>');
    const after = await m.mask();
    const allowed = [...Array(vocab).keys()].filter((id) => allows(after, id));
    expect(allowed.length).toBeGreaterThan(0);
    expect(allowed.filter((id) => !loaded.eosTokenIds.includes(id))).toEqual([]);
    m.dispose();
  });

  it('an output schema: compact JSON only, whitespace outside strings refused', async () => {
    const m = await matcher(request({ output: { schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, strict: true } }));
    await feed(m, '{"n":');
    const mask = await m.mask();
    expect(allows(mask, ids(' ')[0]!)).toBe(false);
    expect(allows(mask, ids('7')[0]!)).toBe(true);
    m.dispose();
  });

  it('an output schema beside a strict tool: the JSON value, or the calls in the tool syntax', async () => {
    const both = request({ output: { schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, strict: true }, tools: [WEATHER], toolChoice: { mode: 'auto', parallel: true } });
    const json = await matcher(both);
    const first = await json.mask();
    expect(allows(first, ids('{')[0]!)).toBe(true);
    expect(allows(first, ids('<tool_call>')[0]!)).toBe(true);
    expect(allows(first, ids('Sure')[0]!)).toBe(false);
    await feed(json, '{"n":7}');
    expect(allows(await json.mask(), loaded.eosTokenIds[0]!)).toBe(true);
    json.dispose();
    const calls = await matcher(both);
    await feed(calls, '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {');
    expect(allows(await calls.mask(), ids('}')[0]!)).toBe(false); // city is required in the second call too
    await feed(calls, '"city":"Rome"}}\n</tool_call>');
    expect(allows(await calls.mask(), loaded.eosTokenIds[0]!)).toBe(true);
    calls.dispose();
  });

  it('a schema the compiler refuses retires its instance: after many failures, every kind of constraint still compiles and constrains', async () => {
    // Straight to the compiler, past the schema checks of constraint.ts: what aborts it leaked part of
    // its instance's stack each time, and after a few dozen every compile failed (issue 37).
    const aborting = [{ type: 'integer', minimum: 10, maximum: 1 }, { type: 'string', minLength: 5, maxLength: 1 }, { enum: [] }, { type: 'string', pattern: '((' }];
    const before = instancesLoaded();
    for (let i = 0; i < 2 * aborting.length; i++) {
      await expect(matcherFor(loaded, vocab, { kind: 'json_schema', schema: aborting[i % aborting.length]! })).rejects.toBeInstanceOf(GrammarCompileError);
    }
    // Each failure but the first ran on an instance loaded after the one before it was retired.
    expect(instancesLoaded() - before).toBe(2 * aborting.length - 1);
    // Through the checks, hundreds more never reach it.
    for (let i = 0; i < 300; i++) {
      const schema = { type: 'object', properties: { [`p${i}`]: aborting[i % aborting.length] }, required: [`p${i}`] };
      expect(() => planConstraint(request({ output: { schema, strict: i % 2 === 0 } }), 'hermes')).toThrow(CoreError);
    }
    expect(instancesLoaded() - before).toBe(2 * aborting.length - 1);
    const anyObject = await matcher(request({ output: { schema: { type: 'object', additionalProperties: true }, strict: false } }));
    await feed(anyObject, '{"a":"b","c":1}');
    anyObject.dispose();
    const forced = await matcher(request({ tools: [WEATHER], toolChoice: { mode: 'any', parallel: false } }));
    expect(allows(await forced.mask(), ids('Sure')[0]!)).toBe(false);
    await feed(forced, '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Oslo"}}\n</tool_call>');
    forced.dispose();
  });

  it('no constraint when nothing asks for one; a strict tool with an unsupported feature is refused with where it is', () => {
    expect(planConstraint(request({ tools: [NOTE], toolChoice: { mode: 'auto', parallel: true } }), 'hermes')).toBeUndefined();
    const bad: ToolSpec = { ...WEATHER, inputSchema: { type: 'object', properties: { n: { type: 'number', minimum: 0.5 } } } };
    let error: unknown;
    try {
      planConstraint(request({ tools: [NOTE, bad], toolChoice: { mode: 'auto', parallel: true } }), 'hermes');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CoreError);
    expect((error as CoreError).details).toMatchObject({ reason: 'tool', item: 1, feature: 'minimum on a non-integer number', schemaPath: '/properties/n' });
  });

  it('a minLength no output of max_tokens can meet: the same masks as the schema as written, token by token (./schema-subset.ts withinReach)', async () => {
    const req = request({ maxTokens: 4, output: { schema: { type: 'object', properties: { x: { type: 'string', minLength: 5000 } }, required: ['x'] }, strict: true } });
    const reach = req.maxTokens * longestTokenChars(loaded, vocab);
    expect(reach).toBeLessThan(5000);
    const cheap = planConstraint(req, 'hermes', false, reach)!;
    expect(JSON.stringify(cheap.source)).toContain(`"minLength":${reach + 1}`);
    const [asWritten, clamped] = [await matcherFor(loaded, vocab, planConstraint(req, 'hermes')!.source), await matcherFor(loaded, vocab, cheap.source)];
    const quote = ids('"')[0]!;
    for (const id of ids('{"x":"' + ' '.repeat(200) + 'abc')) {
      const [a, b] = [await asWritten.mask(), await clamped.mask()];
      expect(b).toEqual(a);
      expect(asWritten.accept(id) && clamped.accept(id)).toBe(true);
    }
    expect(allows(await clamped.mask(), quote)).toBe(false);
    asWritten.dispose();
    clamped.dispose();
  });
});

/**
 * Grammar-constrained decoding against a listening server on the bundled chat model. Its random
 * weights are the honest stress case: left alone it writes no valid JSON and no tool call, so every
 * valid output below is the grammar's doing. Each case runs many sampled generations (temperatures
 * 0 to 1, varied prompts, so different paths through the grammar) and checks every one with ajv.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { aiSdkModel, langchainChat, sdkClient, sdkToolLoop, WEATHER_TOOL, type Target } from '../helpers/clients.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { promptTokens, startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'test-key';
let server: RealServer;
let target: Target;
let client: Anthropic;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL] });
  target = { baseURL: server.url, apiKey: KEY, model: CHAT_MODEL };
  client = sdkClient(target);
});
afterAll(() => server?.close());

const ajv = new Ajv({ strict: false });
/** Nesting, enums, bounds, lengths, optional fields, a pattern and a format: the converter's range. */
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 40 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    email: { type: 'string', format: 'email' },
    code: { type: 'string', pattern: '^[A-Z]{2}[0-9]{3}$' },
    tags: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
    address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string', minLength: 5, maxLength: 5 } }, required: ['city', 'zip'], additionalProperties: false },
    nickname: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
  required: ['name', 'age', 'tags', 'address'],
  additionalProperties: false,
};
const validPerson = ajv.compile(PERSON);
const validWeather = ajv.compile(WEATHER_TOOL.input_schema);
/** SDK 1.x types omit temperature and output_config's format on this path; the API takes them. */
const loose = (params: Record<string, unknown>) => params as unknown as Anthropic.MessageCreateParamsNonStreaming;
const TEMPERATURES = [0, 0.4, 0.7, 1];
const runs = (n: number) => Array.from({ length: n }, (_, i) => ({ i, temperature: TEMPERATURES[i % TEMPERATURES.length]! }));
const textOf = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
const calls = (m: Anthropic.Message) => m.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');

describe('structured outputs: output_config.format and output_format', () => {
  it.each(runs(8))('run %#: the text is JSON valid against the schema (JSON reply)', async ({ i, temperature }) => {
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 200, temperature, messages: [{ role: 'user', content: `Describe person number ${i}.` }], output_config: { format: { type: 'json_schema', schema: PERSON } } }));
    const text = textOf(message);
    expect(validPerson(JSON.parse(text)), `${text} ${JSON.stringify(validPerson.errors)}`).toBe(true);
    expect(message.stop_reason).toBe('end_turn');
  });

  it.each(runs(4))('run %#: streamed, the beta output_format: the text deltas join into valid JSON', async ({ i, temperature }) => {
    const stream = client.messages.stream(loose({ model: CHAT_MODEL, max_tokens: 200, temperature, messages: [{ role: 'user', content: `Person ${i}, streamed.` }], output_format: { type: 'json_schema', schema: PERSON } }) as never);
    let deltas = '';
    stream.on('text', (t) => (deltas += t));
    const message = await stream.finalMessage();
    expect(deltas).toBe(textOf(message));
    expect(validPerson(JSON.parse(deltas)), `${deltas} ${JSON.stringify(validPerson.errors)}`).toBe(true);
  });

  it.each([24, 28, 32, 40, 48])('max_tokens %i: an output cut by the budget is completed in time and still validates', async (maxTokens) => {
    // A long free string invites the random model to wander until the budget runs out.
    const schema = { type: 'object', properties: { story: { type: 'string' }, tags: PERSON.properties.tags, done: { type: 'boolean' } }, required: ['story', 'tags', 'done'], additionalProperties: false };
    for (const temperature of [0.7, 1]) {
      const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: maxTokens, temperature, messages: [{ role: 'user', content: 'Tell a long story.' }], output_config: { format: { type: 'json_schema', schema } } }));
      const text = textOf(message);
      expect(ajv.validate(schema, JSON.parse(text)), text).toBe(true);
      expect(message.usage.output_tokens).toBeLessThanOrEqual(maxTokens);
    }
  });

  it('max_tokens below the shortest valid output: stop_reason max_tokens, the text cut (documented)', async () => {
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema: PERSON } } }));
    expect(message.stop_reason).toBe('max_tokens');
    expect(() => JSON.parse(textOf(message))).toThrow();
  });

  it('count_tokens is unchanged by an output format', async () => {
    const base = { model: CHAT_MODEL, messages: [{ role: 'user' as const, content: 'Describe a person.' }] };
    const plain = await client.messages.countTokens(base);
    const constrained = await client.messages.countTokens({ ...base, output_config: { format: { type: 'json_schema', schema: PERSON } } } as never);
    expect(constrained.input_tokens).toBe(plain.input_tokens);
  });

  it('a schema feature the grammar cannot enforce is a 400 naming it and where it is', async () => {
    const schema = { type: 'object', properties: { n: { type: 'integer', multipleOf: 3 } }, required: ['n'] };
    const error = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema } } })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
    expect((error as { error: { error: { message: string } } }).error.error.message).toBe(
      "output_config.format.schema: `multipleOf` at '/properties/n' is not supported with constrained decoding (strict tools and structured outputs); remove it, or for a tool drop `strict`",
    );
  });

  it('a pattern that is no regular expression is a 400 naming it and why', async () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '(unclosed' } }, required: ['s'] };
    const error = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema } } })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400 });
    expect((error as { error: { error: { message: string } } }).error.error.message).toBe(
      "output_config.format.schema: at '/properties/s': pattern \"(unclosed\" is not a valid regular expression: /(unclosed/u: Unterminated group",
    );
    // The worker's grammar compiler still serves the next request (greedy: this test is not about the budget).
    const ok = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, temperature: 0, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema: PERSON } } }));
    expect(validPerson(JSON.parse(textOf(ok)))).toBe(true);
  });

  it('sampled, a format- and pattern-constrained output is still closed by the budget (an email, a code)', async () => {
    // The random-weight model writes a long email local part: before the guide knew how an email
    // (and a pattern's string) ends, this request ended cut at max_tokens on every run.
    const contact = { ...PERSON, required: [...PERSON.required, 'email', 'code'] };
    const validContact = ajv.compile(contact);
    for (let run = 0; run < 3; run++) {
      const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, temperature: 1, messages: [{ role: 'user', content: 'hi' }], output_config: { format: { type: 'json_schema', schema: contact } } }));
      const text = textOf(message);
      expect(message.stop_reason, text).toBe('end_turn');
      expect(validContact(JSON.parse(text)), text).toBe(true);
    }
  });

  it('with thinking on: a thinking block first, then the text as valid JSON', async () => {
    for (const temperature of [0, 1]) {
      const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 1100, temperature, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Think, then describe a person.' }], output_config: { format: { type: 'json_schema', schema: PERSON } } }));
      expect(message.content[0]!.type).toBe('thinking');
      const text = textOf(message);
      expect(validPerson(JSON.parse(text)), text).toBe(true);
    }
  }, 180_000);

  it('with thinking on and a small budget: the thought is closed in time for the answer to complete', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 1100, temperature: 1, thinking: { type: 'enabled', budget_tokens: 1090 }, messages: [{ role: 'user', content: 'Think long.' }], output_config: { format: { type: 'json_schema', schema } } }));
    const text = textOf(message);
    expect(ajv.validate(schema, JSON.parse(text)), text).toBe(true);
  });

  it('both output_config.format and output_format: a 400', async () => {
    const format = { type: 'json_schema', schema: PERSON };
    const error = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }], output_config: { format }, output_format: format })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400 });
  });
});

describe('forced and strict tool calls', () => {
  const TOOLS = [
    { ...WEATHER_TOOL, strict: true },
    { name: 'add', description: 'Add two integers.', input_schema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false } },
  ];
  const validAdd = ajv.compile(TOOLS[1]!.input_schema);
  const valid = (call: Anthropic.ToolUseBlock) => (call.name === 'add' ? validAdd(call.input) : validWeather(call.input));

  it.each(runs(8))('run %#: tool_choice tool: one call of that tool, its input valid', async ({ i, temperature }) => {
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 80, temperature, tools: TOOLS, tool_choice: { type: 'tool', name: 'get_weather' }, messages: [{ role: 'user', content: `Weather question ${i}` }] }));
    expect(message.stop_reason).toBe('tool_use');
    const found = calls(message);
    expect(found.length).toBeGreaterThanOrEqual(1);
    for (const call of found) {
      expect(call.name).toBe('get_weather');
      expect(call.id).toMatch(/^toolu_/);
      expect(validWeather(call.input), JSON.stringify(call.input)).toBe(true);
    }
  });

  it.each(runs(4))('run %#: tool_choice any, parallel calls off, streamed: exactly one call of one of the tools, input valid', async ({ i, temperature }) => {
    const stream = client.messages.stream(loose({ model: CHAT_MODEL, max_tokens: 80, temperature, tools: TOOLS, tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: [{ role: 'user', content: `Question ${i}` }] }) as never);
    const jsonDeltas: string[] = [];
    stream.on('inputJson', (delta) => jsonDeltas.push(delta));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    const found = calls(message);
    expect(found).toHaveLength(1);
    expect(valid(found[0]!), JSON.stringify(found[0])).toBe(true);
    expect(JSON.parse(jsonDeltas.join(''))).toEqual(found[0]!.input);
  });

  it('a non-strict tool whose schema the grammar cannot fully express is relaxed, not refused', async () => {
    const tool = { name: 'pick', description: 'Pick.', input_schema: { type: 'object', properties: { n: { type: 'integer', multipleOf: 2 }, s: { type: 'string' } }, required: ['s'], not: { required: ['x'] } } };
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, tools: [tool], tool_choice: { type: 'tool', name: 'pick' }, messages: [{ role: 'user', content: 'pick' }] }));
    expect(message.stop_reason).toBe('tool_use');
    expect(typeof (calls(message)[0]!.input as { s: unknown }).s).toBe('string');
  });

  it('a non-strict tool with a pattern the compiler cannot parse is served without its value checks', async () => {
    const tool = { name: 'word', description: 'A word.', input_schema: { type: 'object', properties: { w: { type: 'string', pattern: '^\\p{L}+$' } }, required: ['w'] } };
    const message = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, tools: [tool], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'a word' }] }));
    expect(message.stop_reason).toBe('tool_use');
    expect(typeof (calls(message)[0]!.input as { w: unknown }).w).toBe('string');
  });

  it('a strict tool whose schema the grammar cannot express is a 400 naming the tool and the feature', async () => {
    const tool = { name: 'pick', description: 'Pick.', strict: true, input_schema: { type: 'object', properties: { s: { type: 'string', format: 'iri' } }, required: ['s'] } };
    const error = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, tools: [WEATHER_TOOL, tool], messages: [{ role: 'user', content: 'pick' }] })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 400 });
    expect((error as { error: { error: { message: string } } }).error.error.message).toMatch(/^tools\.1\.input_schema: `format: "iri"` at '\/properties\/s' is not supported/);
  });

  it('the Anthropic SDK tool loop runs two rounds of forced calls, each input valid', async () => {
    const replies = await sdkToolLoop(target, { tools: [{ ...WEATHER_TOOL, strict: true }], tool_choice: { type: 'any' }, max_tokens: 64 }, 2);
    expect(replies).toHaveLength(2);
    for (const reply of replies) {
      expect(reply.stop_reason).toBe('tool_use');
      for (const call of calls(reply)) expect(validWeather(call.input), JSON.stringify(call.input)).toBe(true);
    }
    // The second round's prompt holds the first round's call and result (a warm prefix counts as cache reads).
    expect(promptTokens(replies[1]!.usage)).toBeGreaterThan(promptTokens(replies[0]!.usage));
  });
});

describe('client libraries', () => {
  // Within what the AI SDK keeps of a schema for Anthropic's structured outputs (it strips length and
  // range bounds, which its own zod check then enforces on the answer).
  const Recipe = z.object({ title: z.string(), servings: z.number().int(), vegan: z.boolean(), course: z.enum(['starter', 'main', 'dessert']), steps: z.array(z.string()), note: z.string().optional() });
  const { $schema: _, ...recipeSchema } = z.toJSONSchema(Recipe);

  it.each(['jsonTool', 'outputFormat'] as const)('AI SDK generateObject (structuredOutputMode %s) returns a schema-valid object', async (mode) => {
    const { generateObject } = await import('ai');
    for (const temperature of [0, 1]) {
      const { object } = await generateObject({
        model: aiSdkModel(target), schema: Recipe, prompt: 'A recipe.', temperature, maxOutputTokens: 120, maxRetries: 0,
        providerOptions: { anthropic: { structuredOutputMode: mode } },
      }).catch((error: { message: string; text?: string; finishReason?: string; cause?: unknown }) => {
        // The SDK's error names neither the text nor why it stopped; both say which side failed.
        throw new Error(`${error.message} (temperature ${temperature}, finish ${error.finishReason}): ${JSON.stringify(error.text)}; cause: ${String(error.cause)}`);
      });
      expect(ajv.validate(recipeSchema, object), JSON.stringify(object)).toBe(true);
    }
  });

  it('LangChain withStructuredOutput returns a schema-valid object', async () => {
    for (const temperature of [0, 1]) {
      const result = await langchainChat(target, { maxTokens: 120, temperature }).withStructuredOutput(Recipe, { name: 'recipe' }).invoke('A recipe.');
      expect(ajv.validate(recipeSchema, result), JSON.stringify(result)).toBe(true);
    }
  });
});

describe('one client\'s refused schemas change nothing for the others (issue 37)', () => {
  const post = async (path: string, body: object, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const user = [{ role: 'user', content: 'hi' }];
  /** Each would have aborted XGrammar's compile; enough of them broke it for every later request. */
  const IMPOSSIBLE: Array<[object, string]> = [
    [{ type: 'integer', minimum: 10, maximum: 1 }, 'minimum'],
    [{ type: 'string', minLength: 5, maxLength: 1 }, 'minLength'],
    [{ enum: [] }, 'enum'],
    [{ type: 'string', pattern: '((' }, 'pattern'],
    [{ type: 'string', minLength: 9007199254740993 }, 'minLength'],
    [{ type: 'string', minLength: -2147483649 }, 'minLength'],
    [{ type: 'array', maxItems: 1e300 }, 'maxItems'],
    [{ $ref: '#/$defs/constructor' }, '$ref'],
    [{ type: 'constructor' }, 'type'],
    [{ type: 'object', properties: { a: { type: 'integer' } }, required: ['b'], additionalProperties: false }, 'required'],
  ];
  const wrap = (inner: object) => ({ type: 'object', properties: { x: inner }, required: ['x'] });
  /** The same schema through each door: an output schema or a strict tool, on each dialect. */
  const DOORS: Array<(schema: object) => [string, object]> = [
    (schema) => ['/v1/chat/completions', { model: CHAT_MODEL, max_tokens: 4, messages: user, response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } }],
    (schema) => ['/v1/chat/completions', { model: CHAT_MODEL, max_tokens: 4, messages: user, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }],
    (schema) => ['/v1/chat/completions', { model: CHAT_MODEL, max_tokens: 4, messages: user, tools: [{ type: 'function', function: { name: 'f', parameters: schema, strict: true } }] }],
    (schema) => ['/v1/responses', { model: CHAT_MODEL, max_output_tokens: 4, input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema, strict: true } } }],
    (schema) => ['/v1/messages', { model: CHAT_MODEL, max_tokens: 4, messages: user, output_config: { format: { type: 'json_schema', schema } } }],
    (schema) => ['/v1/messages', { model: CHAT_MODEL, max_tokens: 4, messages: user, tools: [{ name: 'f', input_schema: schema, strict: true }] }],
  ];

  it('hundreds of refused schemas, each a 400 naming the keyword; then json_object, json_schema and a strict tool call are served and valid', { timeout: 180_000 }, async () => {
    const requests = Array.from({ length: 300 }, (_, i) => {
      const [inner, keyword] = IMPOSSIBLE[i % IMPOSSIBLE.length]!;
      return { keyword, request: DOORS[Math.floor(i / IMPOSSIBLE.length) % DOORS.length]!(wrap(inner)) };
    });
    for (let i = 0; i < requests.length; i += 6) {
      await Promise.all(
        requests.slice(i, i + 6).map(async ({ keyword, request: [path, body] }) => {
          const { status, body: answer } = await post(path, body);
          const message: string = answer.error?.message ?? answer.error?.error?.message;
          expect(status, `${path} ${JSON.stringify(body).slice(0, 200)} → ${JSON.stringify(answer)}`).toBe(400);
          expect(message).toContain(keyword);
          expect(message).toContain("at '/properties/x'");
          expect(message).not.toMatch(/Aborted|memory access|Check failed|: \d+$/);
        }),
      );
    }
    const object = await post('/v1/chat/completions', { model: CHAT_MODEL, max_tokens: 40, temperature: 0, messages: user, response_format: { type: 'json_object' } });
    expect(object.status).toBe(200);
    expect(typeof JSON.parse(object.body.choices[0].message.content)).toBe('object');
    const person = await post('/v1/responses', { model: CHAT_MODEL, max_output_tokens: 200, temperature: 0, input: 'A person.', text: { format: { type: 'json_schema', name: 'person', schema: PERSON, strict: true } } });
    expect(person.status).toBe(200);
    expect(validPerson(JSON.parse(person.body.output.find((o: { type: string }) => o.type === 'message').content[0].text))).toBe(true);
    const call = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 60, temperature: 0, messages: [{ role: 'user', content: 'weather?' }], tools: [{ ...WEATHER_TOOL, strict: true }], tool_choice: { type: 'any' } }));
    expect(call.stop_reason).toBe('tool_use');
    expect(validWeather(calls(call)[0]!.input)).toBe(true);
  });

  it('a strict tool beside an output schema is served on every dialect: the JSON value or calls, each valid', async () => {
    const strictTool = { name: 'get_weather', description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.input_schema, strict: true };
    const answers: Array<{ text?: string; inputs: unknown[] }> = [];
    for (const temperature of [0, 1]) {
      const chat = await post('/v1/chat/completions', { model: CHAT_MODEL, max_tokens: 200, temperature, messages: [{ role: 'user', content: 'A person, or the weather.' }], tools: [{ type: 'function', function: strictTool }], response_format: { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } } });
      expect(chat.status, JSON.stringify(chat.body)).toBe(200);
      const m = chat.body.choices[0].message;
      answers.push({ text: m.content ?? undefined, inputs: (m.tool_calls ?? []).map((c: { function: { arguments: string } }) => JSON.parse(c.function.arguments)) });
      const responses = await post('/v1/responses', { model: CHAT_MODEL, max_output_tokens: 200, temperature, input: 'A person, or the weather.', tools: [{ type: 'function', ...strictTool }], text: { format: { type: 'json_schema', name: 'person', schema: PERSON, strict: true } } });
      expect(responses.status, JSON.stringify(responses.body)).toBe(200);
      const items = responses.body.output as Array<{ type: string; content?: Array<{ text: string }>; arguments?: string }>;
      answers.push({ text: items.find((o) => o.type === 'message')?.content?.[0]?.text, inputs: items.filter((o) => o.type === 'function_call').map((o) => JSON.parse(o.arguments!)) });
      const messages = await client.messages.create(loose({ model: CHAT_MODEL, max_tokens: 200, temperature, messages: [{ role: 'user', content: 'A person, or the weather.' }], tools: [{ ...WEATHER_TOOL, strict: true }], output_config: { format: { type: 'json_schema', schema: PERSON } } }));
      answers.push({ text: calls(messages).length === 0 ? textOf(messages) : undefined, inputs: calls(messages).map((c) => c.input) });
    }
    for (const answer of answers) {
      if (answer.inputs.length > 0) for (const input of answer.inputs) expect(validWeather(input), JSON.stringify(input)).toBe(true);
      else expect(validPerson(JSON.parse(answer.text!)), answer.text).toBe(true);
    }
  });
});

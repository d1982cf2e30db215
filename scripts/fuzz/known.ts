/**
 * Hand-written cases: one minimal request per failure the fuzzer has found or is known to matter,
 * so each is checked on every run whatever the seed, and each has a name in the test report.
 */
import { API_KEY, CHAT_MODEL, EMBED_MODEL, envelopesFor, type Envelope, type FuzzCase } from './cases.js';
import { serializeRequest } from './raw-client.js';
import { Random } from './random.js';
import { PROTOTYPE_NAMES, withHostileSchema, type ChatDialect } from './schemas.js';
import { hostileImages, imageBody, IMAGE_ROUTES, type ImageDialect } from './images.js';

const ANTHROPIC: Array<[string, string]> = [['Host', 'x'], ['Content-Type', 'application/json'], ['anthropic-version', '2023-06-01'], ['x-api-key', API_KEY]];
const OPENAI: Array<[string, string]> = [['Host', 'x'], ['Content-Type', 'application/json'], ['Authorization', `Bearer ${API_KEY}`]];
const chat = (extra: object = {}) => JSON.stringify({ model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra });
const embed = (extra: object = {}) => JSON.stringify({ model: EMBED_MODEL, input: 'hello', ...extra });

function known(
  name: string,
  bytes: Buffer,
  options: { envelopes: Envelope[]; responses?: number; asksClose?: boolean; action?: FuzzCase['action'] },
): FuzzCase {
  return {
    id: `known:${name}`,
    endpoint: 'known',
    label: name,
    bytes,
    responses: Array.from({ length: options.responses ?? 1 }, () => ({ head: false, envelopes: options.envelopes })),
    asksClose: options.asksClose ?? false,
    action: options.action ?? 'read',
    fresh: true,
    timeoutMs: 30_000,
  };
}

const request = (method: string, target: string, headers: Array<[string, string]>, body?: string) =>
  serializeRequest({ method, target, headers, body: body === undefined ? undefined : Buffer.from(body) });
const raw = (text: string) => Buffer.from(text, 'latin1');
const post = (target: string, headers: Array<[string, string]>, body: string) => request('POST', target, headers, body);
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** Adds a field with raw JSON text as its value to a serialised object. */
const withField = (json: string, key: string, value: string) => `${json.slice(0, -1)},"${key}":${value}}`;

/** More than loopback socket buffers hold: the client is still writing when the answer comes. */
const BIG_BODY = 4_000_000;

const CHAT_ROUTES: Record<ChatDialect, [string, Array<[string, string]>, (extra: object) => string]> = {
  messages: ['/v1/messages', ANTHROPIC, chat],
  chat: ['/v1/chat/completions', OPENAI, (extra) => JSON.stringify({ model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra })],
  responses: ['/v1/responses', OPENAI, (extra) => JSON.stringify({ model: CHAT_MODEL, max_output_tokens: 2, input: 'hi', ...extra })],
};

/**
 * Issue 37: `count` hostile schemas through every door of every chat dialect (each answered < 500,
 * in the dialect's envelope), then a valid constrained request of each kind on each dialect, each of
 * which must be a 200. Refused schemas once left the grammar compiler broken for every later client.
 */
export function schemaRunCases(seed: number, count: number): FuzzCase[] {
  const rng = new Random(seed, 37);
  const dialects = Object.keys(CHAT_ROUTES) as ChatDialect[];
  const hostile = Array.from({ length: count }, (_, i) => {
    const dialect = dialects[i % dialects.length]!;
    const [target, headers, body] = CHAT_ROUTES[dialect];
    const fields: Record<string, unknown> = {};
    const label = withHostileSchema(rng, fields, dialect);
    return known(`${dialect} ${label}`, post(target, headers, body(fields)), { envelopes: [dialect === 'messages' ? 'anthropic' : 'openai'] });
  });
  const object = { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['a'], additionalProperties: false };
  const named = PROTOTYPE_NAMES[seed % PROTOTYPE_NAMES.length]!;
  const valid: Array<[ChatDialect, string, object]> = [
    ['chat', 'json_object', { response_format: { type: 'json_object' } }],
    ['chat', 'json_schema', { max_tokens: 16, response_format: { type: 'json_schema', json_schema: { name: 'o', schema: object, strict: true } } }],
    ['chat', 'strict tool beside an output schema', { max_tokens: 40, tools: [{ type: 'function', function: { name: named, parameters: object, strict: true } }], response_format: { type: 'json_schema', json_schema: { name: 'o', schema: object, strict: true } } }],
    ['responses', 'json_schema', { max_output_tokens: 16, text: { format: { type: 'json_schema', name: 'o', schema: object, strict: true } } }],
    ['responses', 'forced strict tool', { max_output_tokens: 40, tools: [{ type: 'function', name: named, parameters: object, strict: true }], tool_choice: 'required' }],
    ['messages', 'output_config', { max_tokens: 16, output_config: { format: { type: 'json_schema', schema: object } } }],
    ['messages', 'forced strict tool', { max_tokens: 40, tools: [{ name: named, input_schema: object, strict: true }], tool_choice: { type: 'tool', name: named } }],
  ];
  const served = valid.map(([dialect, what, extra]) => {
    const [target, headers, body] = CHAT_ROUTES[dialect];
    const c = known(`${dialect} ${what} after the hostile schemas`, post(target, headers, body(extra)), { envelopes: [dialect === 'messages' ? 'anthropic' : 'openai'] });
    return { ...c, responses: c.responses.map((r) => ({ ...r, status: 200 })) };
  });
  return [...hostile, ...served];
}

/**
 * Issue 42: image blocks and parts in every chat dialect, in a user turn and in a tool result, well
 * formed or wrong in each way an image can be; every one a 400 in the dialect's envelope (no model
 * takes images yet, and URLs are not fetched by the fuzz server).
 */
export function imageCases(): FuzzCase[] {
  const dialects = Object.keys(IMAGE_ROUTES) as ImageDialect[];
  return dialects.flatMap((dialect) =>
    hostileImages().flatMap(({ label, images }) =>
      [false, true].filter((inTool) => !inTool || dialect !== 'chat').map((inTool) => {
        const headers = dialect === 'messages' ? ANTHROPIC : OPENAI;
        const c = known(`${dialect} image: ${label}${inTool ? ' (in a tool result)' : ''}`, post(IMAGE_ROUTES[dialect], headers, JSON.stringify(imageBody(dialect, CHAT_MODEL, images, inTool))), { envelopes: [dialect === 'messages' ? 'anthropic' : 'openai'] });
        return { ...c, responses: c.responses.map((r) => ({ ...r, status: 400 })) };
      }),
    ),
  );
}

/** Each case: what it sends and which envelopes its error answer may use. */
export function knownCases(): FuzzCase[] {
  return [
    ...imageCases(),
    // Bodies
    known('encoding_format nested 10,000 levels', post('/v1/embeddings', OPENAI, withField(embed(), 'encoding_format', nested(10_000))), { envelopes: ['openai'] }),
    known('input nested 10,000 levels', post('/v1/embeddings', OPENAI, withField(JSON.stringify({ model: EMBED_MODEL }), 'input', nested(10_000))), { envelopes: ['openai'] }),
    known('metadata nested 10,000 levels', post('/v1/messages', ANTHROPIC, withField(chat(), 'metadata', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`)), { envelopes: ['anthropic'] }),
    known('body nested 200,000 levels', post('/v1/messages', ANTHROPIC, nested(200_000)), { envelopes: ['anthropic'] }),
    known('1 MB encoding_format string', post('/v1/embeddings', OPENAI, embed({ encoding_format: 'x'.repeat(1 << 20) })), { envelopes: ['openai'] }),
    known('1 MB string of lone surrogates', post('/v1/embeddings', OPENAI, embed({ input: '\ud800'.repeat(1 << 20) })), { envelopes: ['openai'] }),
    known('256 KB prompt with NULs', post('/v1/messages/count_tokens', ANTHROPIC, JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'a\u0000'.repeat(1 << 17) }] })), { envelopes: ['anthropic'] }),
    known('max_tokens of the wrong type (the message must not say "Field required")', post('/v1/messages', ANTHROPIC, chat({ max_tokens: 'x' })), { envelopes: ['anthropic'] }),
    known('user of the wrong type (the message must not say "Field required")', post('/v1/embeddings', OPENAI, embed({ user: 5 })), { envelopes: ['openai'] }),
    // Paths
    known('bad percent-encoding in the engines path', post('/v1/engines/%E0%A4%A/embeddings', OPENAI, embed()), { envelopes: ['openai', 'neutral'] }),
    known('200-char model id in the engines path', post(`/v1/engines/${'m'.repeat(200)}/embeddings`, OPENAI, embed({ model: 'm'.repeat(200) })), { envelopes: ['openai', 'neutral'] }),
    known('200-char model id, Anthropic client', request('GET', `/v1/models/${'m'.repeat(200)}`, ANTHROPIC.filter(([n]) => n !== 'Content-Type')), { envelopes: ['anthropic', 'neutral'] }),
    known('bad percent-encoding in a model id', request('GET', '/v1/models/%C3', [['Host', 'x']]), { envelopes: ['openai', 'neutral'] }),
    known('OPTIONS /v1/messages without Anthropic headers', request('OPTIONS', '/v1/messages', [['Host', 'x']]), { envelopes: envelopesFor('/v1/messages', []) }),
    known('GET /v1/messages/nope without Anthropic headers', request('GET', '/v1/messages/nope', [['Host', 'x']]), { envelopes: ['anthropic'] }),
    // Malformed HTTP
    known('garbage request line', raw('GARBAGE\r\n\r\n'), { envelopes: ['neutral'] }),
    known('bad header syntax', raw('GET /v1/models HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'), { envelopes: ['neutral'] }),
    known('headers over 16 KB', raw(`GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`), { envelopes: ['neutral'] }),
    known('missing Host', raw(`POST /v1/messages HTTP/1.1\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\nx-api-key: ${API_KEY}\r\nContent-Length: ${chat().length}\r\n\r\n${chat()}`), { envelopes: ['anthropic', 'neutral'] }),
    known('Expect: 42-continue', raw(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${API_KEY}\r\nExpect: 42-continue\r\nContent-Length: ${embed().length}\r\n\r\n${embed()}`), { envelopes: ['openai', 'neutral'] }),
    known('chunked size that is not hex', raw(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${API_KEY}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n${embed()}\r\n0\r\n\r\n`), { envelopes: ['neutral'] }),
    known('Content-Length and Transfer-Encoding together', raw(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`), { envelopes: ['neutral'] }),
    known('body longer than Content-Length (garbage after it)', Buffer.concat([request('POST', '/v1/embeddings', OPENAI, embed()), raw('garbage\r\nHost: x\r\n\r\n')]), { envelopes: ['openai', 'neutral'], responses: 2 }),
    known('body shorter than Content-Length, then FIN', raw(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`), { envelopes: ['openai', 'neutral'], action: 'fin' }),
    known('CONNECT', raw('CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: x\r\n\r\n'), { envelopes: ['openai', 'neutral'] }),
    // Answered while the client is still sending: the server drains instead of resetting (lingering close).
    known('bad header name, 4 MB of body behind it', Buffer.concat([raw(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nX-\u00fc: y\r\nContent-Length: ${BIG_BODY}\r\n\r\n`), Buffer.alloc(BIG_BODY, 'a')]), { envelopes: ['neutral'] }),
    known('upgrade request refused (no key) before its 4 MB body is read', request('POST', '/v1/embeddings', [['Host', 'x'], ['Content-Type', 'application/json'], ['Connection', 'Upgrade'], ['Upgrade', 'h2c']], `{"input":"${'a'.repeat(BIG_BODY)}"}`), { envelopes: ['openai'] }),
    // Connections
    known('Connection: close, not streamed', request('POST', '/v1/messages', [...ANTHROPIC, ['Connection', 'close']], chat()), { envelopes: ['anthropic'], asksClose: true }),
    known('Connection: close, streamed', request('POST', '/v1/messages', [...ANTHROPIC, ['Connection', 'close']], chat({ stream: true })), { envelopes: ['anthropic'], asksClose: true }),
    known('keep-alive: a second request after a stream', request('POST', '/v1/messages', ANTHROPIC, chat({ stream: true })), { envelopes: ['anthropic'] }),
    known('keep-alive: a second request after a 400', request('POST', '/v1/embeddings', OPENAI, '{"input":'), { envelopes: ['openai'] }),
    {
      ...known('malformed request after an Upgrade request on the same connection', request('POST', '/v1/embeddings', [...OPENAI, ['Connection', 'Upgrade'], ['Upgrade', 'websocket']], embed()), { envelopes: ['openai'] }),
      then: { bytes: raw('GARBAGE\r\n\r\n'), response: { head: false, envelopes: ['neutral'] } },
    },
    {
      ...known('malformed request after a 200 on the same connection', request('POST', '/v1/embeddings', OPENAI, embed()), { envelopes: ['openai'] }),
      then: { bytes: raw('GARBAGE\r\n\r\n'), response: { head: false, envelopes: ['neutral'] } },
    },
    known('client aborts mid-stream', request('POST', '/v1/messages', ANTHROPIC, chat({ stream: true, max_tokens: 64 })), { envelopes: ['anthropic'], action: 'abort-stream' }),
    known('client aborts before the answer', request('POST', '/v1/messages', ANTHROPIC, chat({ max_tokens: 64 })), { envelopes: ['anthropic'], action: 'abort-early' }),
    // Found by seed 509443479: transformers.js throws decoding no tokens (a 500 until detokenize answered '').
    known('detokenize of no tokens', post('/detokenize', OPENAI, JSON.stringify({ model: CHAT_MODEL, tokens: [] })), { envelopes: ['openai'] }),
    // Issue 37: lookups by a client's string in plain objects (500s: `schema.safeParse is not a function`).
    ...PROTOTYPE_NAMES.flatMap((type) =>
      ['/v1/responses', '/v1/responses/input_tokens'].map((target) =>
        known(`Responses input item of type ${type} (${target})`, post(target, OPENAI, JSON.stringify({ model: CHAT_MODEL, max_output_tokens: 2, input: [{ type, role: 'user', content: 'hi' }] })), { envelopes: ['openai'] }),
      ),
    ),
    known('chat tool_choice function with name null', post('/v1/chat/completions', OPENAI, JSON.stringify({ model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: null } } })), { envelopes: ['openai'] }),
    known('Responses tool_choice allowed_tools without its fields', post('/v1/responses', OPENAI, JSON.stringify({ model: CHAT_MODEL, max_output_tokens: 2, input: 'hi', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools' } })), { envelopes: ['openai'] }),
    known('json_schema with minLength 2^53 + 1', post('/v1/chat/completions', OPENAI, JSON.stringify({ model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { s: { type: 'string', minLength: 9007199254740993 } }, required: ['s'] } } } })), { envelopes: ['openai'] }),
  ];
}

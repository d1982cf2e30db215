/**
 * Seeded request generators, one per endpoint, plus a catalogue of malformed HTTP. Each case is
 * the exact bytes to send and what a correct server may answer: which error envelopes, whether the
 * client asked to close, and what the client does after writing (read, abort mid-stream, ...).
 */
import { serializeRequest } from './raw-client.js';
import { deepJson, hashString, nestingDepth, ODD_NUMBERS, ODD_STRINGS, oddString, Random, randomJson, randomString } from './random.js';

export const CHAT_MODEL = 'tiny-qwen3-random';
export const EMBED_MODEL = 'glove-sif-100d';
/** The fuzz server is started with this key, so authentication errors are exercised too. */
export const API_KEY = 'sk-fuzz';

/**
 * Error envelopes: each dialect's, and the neutral one for malformed HTTP whose route cannot be
 * known: {"type":"error","error":{"type":"invalid_request_error","message","param":null,"code"}}.
 */
export type Envelope = 'anthropic' | 'openai' | 'neutral';

export interface ExpectedResponse {
  head: boolean;
  /** Envelopes a 4xx answer may use. */
  envelopes: Envelope[];
}

export interface FuzzCase {
  id: string;
  /** A generated case's endpoint, or 'known' for the hand-written ones (known.ts). */
  endpoint: Endpoint | 'known';
  /** What was done to the request, for the summary. */
  label: string;
  bytes: Buffer;
  /** Responses the server owes, in order (several when requests are pipelined). */
  responses: ExpectedResponse[];
  /** The (last) request carries Connection: close, or is HTTP/1.0 without keep-alive. */
  asksClose: boolean;
  /**
   * After writing: read the answers; abort once the stream has begun; abort before any answer;
   * or half-close (FIN) the connection, after which the server may close without answering.
   */
  action: 'read' | 'abort-stream' | 'abort-early' | 'fin';
  /** Use a connection of its own (malformed HTTP leaves a connection unusable). */
  fresh: boolean;
  /**
   * Reading a full answer should take at most this long (prompts of a megabyte are tokenized first);
   * a later answer is counted slow, and only none by the harness's hang timeout is a violation.
   */
  timeoutMs: number;
  /** A second request for the same connection, sent once the first answers are in (fresh cases only). */
  then?: { bytes: Buffer; response: ExpectedResponse };
}

export const ENDPOINTS = ['messages', 'count_tokens', 'chat', 'embeddings', 'engines', 'models', 'model', 'ops', 'raw'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

const NORMAL_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Dialects

const ANTHROPIC_HEADERS = ['anthropic-version', 'vendor-version', 'x-api-key'];

function safeDecode(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/**
 * Which envelopes an error answer to this request may use. Routes owned by a dialect answer in
 * it (a /v1/messages path is Anthropic whatever the headers); shared and unknown routes answer by
 * the headers (any of anthropic-version, vendor-version, x-api-key makes an Anthropic client). An
 * embeddings request carrying Anthropic headers may get either.
 */
export function envelopesFor(target: string, headers: Array<[string, string]>): Envelope[] {
  const path = target.split('?')[0]!;
  const decoded = safeDecode(path);
  const present = headers.filter(([n]) => ANTHROPIC_HEADERS.includes(n.toLowerCase()));
  const anthropic = present.some(([, v]) => v.trim() !== '');
  const emptyOnly = present.length > 0 && !anthropic;
  if (decoded === undefined) return anthropic ? ['anthropic', 'neutral'] : ['openai', 'anthropic', 'neutral'];
  if (/^\/v1\/messages(\/|$)/.test(decoded)) return ['anthropic'];
  if (/^\/v1\/(embeddings|engines\/|chat\/completions)/.test(decoded)) return anthropic || emptyOnly ? ['openai', 'anthropic'] : ['openai'];
  if (anthropic) return ['anthropic'];
  return emptyOnly ? ['anthropic', 'openai'] : ['openai'];
}

// ---------------------------------------------------------------------------------------------
// Headers

type Headers = Array<[string, string]>;

const latin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
/** A header value the HTTP grammar allows: visible ASCII, spaces, obs-text bytes; no CR, LF or NUL. */
const headerSafe = (text: string) => latin1(text).replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '');

function baseHeaders(rng: Random, dialect: 'anthropic' | 'openai', hasBody: boolean): Headers {
  const headers: Headers = [['Host', rng.pick(['127.0.0.1', 'localhost:8080', 'example.com'])]];
  if (hasBody) headers.push(['Content-Type', 'application/json']);
  if (dialect === 'anthropic') {
    headers.push([rng.chance(0.85) ? 'anthropic-version' : 'vendor-version', '2023-06-01']);
    headers.push(rng.chance(0.7) ? ['x-api-key', API_KEY] : ['Authorization', `Bearer ${API_KEY}`]);
  } else {
    headers.push(['Authorization', `Bearer ${API_KEY}`]);
  }
  if (rng.chance(0.2)) headers.push(['User-Agent', rng.pick(['Anthropic/JS 1.12.0', 'OpenAI/JS 6.49.0', 'curl/8.5.0', 'python-httpx/0.27'])]);
  return headers;
}

const setHeader = (headers: Headers, name: string, value: string | undefined) => {
  const kept = headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
  if (value !== undefined) kept.push([name, value]);
  return kept;
};

/** One mutation of the header list; returns its label. */
function mutateHeaders(rng: Random, headers: Headers): [Headers, string] {
  const op = rng.int(0, 13);
  switch (op) {
    case 0: {
      const value = rng.pick([undefined, '', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/jsonx', 'APPLICATION/JSON', 'application/json, text/plain', 'application/json;;;', '*/*', 'application/vnd.api+json']);
      return [setHeader(headers, 'Content-Type', value), `content-type ${JSON.stringify(value ?? null)}`];
    }
    case 1: {
      const value = rng.pick([undefined, '', 'garbage', '2023-06-01, 2023-06-01', '1999-01-01', 'x'.repeat(300)]);
      return [setHeader(headers, rng.pick(['anthropic-version', 'vendor-version']), value), `version header ${JSON.stringify(value ?? null)}`];
    }
    case 2: {
      const [name, value] = rng.pick<[string, string | undefined]>([
        ['x-api-key', undefined], ['x-api-key', ''], ['x-api-key', 'wrong'], ['Authorization', 'Bearer wrong'], ['Authorization', 'Basic c2stZnV6ejo='],
        ['Authorization', 'Bearer '], ['Authorization', `bearer ${API_KEY}`], ['Authorization', `Bearer  ${API_KEY} `], ['Authorization', undefined], ['x-api-key', 'ü'.repeat(50)],
      ]);
      return [setHeader(headers, name, value === undefined ? undefined : latin1(value)), `auth ${name}=${JSON.stringify(value ?? null)}`];
    }
    case 3: {
      const value = rng.pick(['close', 'keep-alive', 'Close', 'close, keep-alive', 'keep-alive, close', 'TE', 'upgrade']);
      return [setHeader(headers, 'Connection', value), `connection ${value}`];
    }
    case 4: {
      // A duplicated header, same value or a different one.
      const [name, value] = rng.pick(headers);
      const again = rng.chance(0.5) ? value : headerSafe(rng.pick(ODD_STRINGS));
      return [[...headers, [name, again]], `duplicate ${name}`];
    }
    case 5: {
      const name = rng.pick(['X-Odd', 'x-ünïcode', 'X-Empty', 'x-' + randomString(rng, 6).replace(/[^a-z0-9-]/gi, 'a')]);
      return [[...headers, [latin1(name), headerSafe(oddString(rng, 2000))]], `odd header ${name}`];
    }
    case 6: {
      const size = rng.int(1000, 12_000);
      return [[...headers, ['X-Long', 'v'.repeat(size)]], `header of ${size} bytes`];
    }
    case 7: {
      const count = rng.int(50, 300);
      return [[...headers, ...Array.from({ length: count }, (_, i): [string, string] => [`x-h${i}`, String(i)])], `${count} extra headers`];
    }
    case 8:
      return [[...headers, ['Expect', '100-continue']], 'expect 100-continue'];
    case 9: {
      const value = rng.pick(['text/event-stream', '*/*', 'application/xml', 'garbage', '']);
      return [setHeader(headers, 'Accept', value), `accept ${value}`];
    }
    case 10:
      return [[...headers, ['Accept-Encoding', rng.pick(['gzip', 'br', 'deflate, gzip', '*', 'identity;q=0'])]], 'accept-encoding'];
    case 11:
      return [[...headers, ['anthropic-beta', headerSafe(rng.pick(['structured-outputs-2025-11-13', 'a,b,,c', oddString(rng, 500)]))]], 'anthropic-beta'];
    case 12:
      return [[...headers, ['X-Request-Id', headerSafe(oddString(rng, 500))], ['request-id', 'client-chosen']], 'client request ids'];
    default:
      return [[...headers, ['Connection', 'Upgrade'], ['Upgrade', rng.pick(['websocket', 'h2c'])]], 'upgrade request'];
  }
}

const asksClose = (headers: Headers, version = 'HTTP/1.1') => {
  const connection = headers.filter(([n]) => n.toLowerCase() === 'connection').map(([, v]) => v.toLowerCase()).join(',');
  const tokens = connection.split(',').map((t) => t.trim());
  return tokens.includes('close') || (version === 'HTTP/1.0' && !tokens.includes('keep-alive'));
};

// ---------------------------------------------------------------------------------------------
// Bodies

const WORDS = 'hello world rivers music bright quiet storm garden paper engine report friend window'.split(' ');
const sentence = (rng: Random) => Array.from({ length: rng.int(1, 8) }, () => rng.pick(WORDS)).join(' ');

function validMessagesBody(rng: Random, withMaxTokens: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { model: CHAT_MODEL, messages: [{ role: 'user', content: sentence(rng) }] };
  if (withMaxTokens) body.max_tokens = rng.int(1, 4);
  if (rng.chance(0.2)) body.system = rng.chance(0.5) ? sentence(rng) : [{ type: 'text', text: sentence(rng), cache_control: { type: 'ephemeral' } }];
  if (rng.chance(0.15)) {
    body.messages = [
      { role: 'user', content: [{ type: 'text', text: sentence(rng) }] },
      { role: 'assistant', content: sentence(rng) },
      { role: 'user', content: sentence(rng) },
    ];
  }
  if (withMaxTokens) {
    if (rng.chance(0.2)) body.temperature = rng.pick([0, 0.5, 1]);
    if (rng.chance(0.1)) body.top_p = 0.9;
    if (rng.chance(0.1)) body.top_k = 5;
    if (rng.chance(0.1)) body.stop_sequences = ['\n\n', 'END'];
    if (rng.chance(0.1)) body.metadata = { user_id: 'u1' };
  }
  if (rng.chance(0.05)) body.thinking = { type: 'disabled' };
  return body;
}

/** A chat completion as the `openai` SDK sends it, with the optional fields clients use. */
function validChatBody(rng: Random): Record<string, unknown> {
  const body: Record<string, unknown> = { model: CHAT_MODEL, messages: [{ role: 'user', content: sentence(rng) }] };
  body[rng.chance(0.5) ? 'max_completion_tokens' : 'max_tokens'] = rng.int(1, 4);
  if (rng.chance(0.2)) (body.messages as unknown[]).unshift({ role: rng.pick(['system', 'developer']), content: sentence(rng) });
  if (rng.chance(0.1)) body.messages = [{ role: 'user', content: [{ type: 'text', text: sentence(rng) }] }, { role: 'assistant', content: sentence(rng) }, { role: 'user', content: sentence(rng) }];
  if (rng.chance(0.2)) body.temperature = rng.pick([0, 0.7, 1.5]);
  if (rng.chance(0.1)) body.stop = rng.pick(['\n', ['END', '\n\n']]);
  if (rng.chance(0.1)) body.seed = rng.int(0, 1000);
  if (rng.chance(0.1)) body.response_format = { type: 'json_object' };
  if (rng.chance(0.05)) body.logprobs = true;
  return body;
}

function validEmbeddingsBody(rng: Random, model: string | undefined = EMBED_MODEL): Record<string, unknown> {
  const body: Record<string, unknown> = {
    input: rng.weighted<() => unknown>([
      [4, () => sentence(rng)],
      [3, () => Array.from({ length: rng.int(1, 8) }, () => sentence(rng))],
      [1, () => Array.from({ length: rng.int(1, 8) }, () => rng.int(0, 1000))],
      [1, () => [Array.from({ length: rng.int(1, 5) }, () => rng.int(0, 1000))]],
    ])(),
  };
  if (model !== undefined) body.model = model;
  if (rng.chance(0.3)) body.encoding_format = rng.pick(['float', 'base64']);
  if (rng.chance(0.1)) body.user = 'u1';
  return body;
}

/** What serializeBody must do beyond JSON.stringify: nest the DEEP marker `depth` levels, add prototype keys. */
const MARKERS = new WeakMap<object, { depth?: number; proto?: boolean }>();
const markersOf = (body: object) => {
  let m = MARKERS.get(body);
  if (!m) MARKERS.set(body, (m = {}));
  return m;
};

/** A marker replaced in the serialised body by deeply nested JSON text. */
const DEEP_VALUE = '\u0000__DEEP__\u0000';
/** The marker as JSON.stringify writes it (the NULs escaped). */
const DEEP = JSON.stringify(DEEP_VALUE);

/** Paths to values in a body, for mutation: ['messages', 0, 'content']. */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  if (prefix.length > 0) out.push(prefix);
  if (prefix.length >= 4) return out;
  if (Array.isArray(value)) value.slice(0, 3).forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

function setAt(root: Record<string, unknown>, path: Array<string | number>, value: unknown, remove = false): void {
  let node: any = root;
  for (const key of path.slice(0, -1)) node = node[key];
  const last = path.at(-1)!;
  if (remove) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
}

/** One mutation of a body object; returns its label. `fields` are the dialect's known optional fields. */
function mutateBody(rng: Random, body: Record<string, unknown>, fields: string[]): string {
  const all = paths(body);
  const target = all.length > 0 ? rng.pick(all) : [rng.pick(fields)];
  const where = target.join('.');
  const op = rng.weighted<number>([[4, 0], [2, 1], [2, 2], [3, 3], [1.5, 4], [1, 5], [2, 6], [1, 7]]);
  switch (op) {
    case 0: {
      setAt(body, target, randomJson(rng));
      return `${where}: wrong type`;
    }
    case 1: {
      setAt(body, target, undefined, true);
      return `${where}: removed`;
    }
    case 2: {
      const key = rng.chance(0.5) ? rng.pick(fields) : rng.pick(['__proto__', 'constructor', 'extra', '', randomString(rng, 5)]);
      body[key] = randomJson(rng);
      return `field ${JSON.stringify(key)} added`;
    }
    case 3: {
      const text = oddString(rng);
      setAt(body, target, text);
      return `${where}: odd string (${text.length} units)`;
    }
    case 4: {
      const depth = nestingDepth(rng);
      const field = rng.chance(0.5) ? rng.pick(['encoding_format', 'input', 'messages', 'system', 'metadata', 'tools', 'dimensions']) : where;
      if (rng.chance(0.5) || !field.includes('.')) body[field.split('.')[0]!] = DEEP_VALUE;
      else setAt(body, target, DEEP_VALUE);
      markersOf(body).depth = depth;
      return `${field.includes('.') ? where : field}: nested ${depth} levels`;
    }
    case 5: {
      const n = rng.pick([100, 1000, 2049, 5000]);
      const key = rng.pick(['messages', 'input', 'stop_sequences', 'tools']);
      body[key] = Array.from({ length: n }, () => (key === 'messages' ? { role: 'user', content: 'x' } : key === 'input' ? 'x' : key === 'tools' ? { name: 't', input_schema: { type: 'object' } } : 'x'));
      return `${key}: ${n} items`;
    }
    case 6: {
      const value = rng.pick(ODD_NUMBERS);
      setAt(body, target, value);
      return `${where}: number ${value}`;
    }
    default: {
      // Prototype pollution attempts, textually (JSON.stringify would drop __proto__ as an own key otherwise).
      markersOf(body).proto = true;
      return '__proto__ / constructor.prototype keys';
    }
  }
}

/** Serialises a body, applying the markers left by mutateBody. */
function serializeBody(body: Record<string, unknown>): string {
  const { depth, proto } = markersOf(body);
  let text = JSON.stringify(body);
  if (depth !== undefined) {
    const rng = new Random(depth, text.length);
    text = text.split(DEEP).join(deepJson(rng, depth));
  }
  if (proto) text = text.replace(/^\{/, '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},');
  return text;
}

/** A serialisation mutation: broken JSON, other encodings, other top-level types. */
function mutateSerialization(rng: Random, text: string): [Buffer, string] {
  const op = rng.int(0, 13);
  switch (op) {
    case 0: return [Buffer.from(text.slice(0, rng.int(0, text.length - 1))), 'truncated JSON'];
    case 1: {
      const at = rng.int(0, text.length);
      return [Buffer.from(text.slice(0, at) + rng.pick(['}', ']', ',', '"', ':', '\\', '\u0000', 'undefined', '{{']) + text.slice(at)), 'garbage inside JSON'];
    }
    case 2: return [Buffer.from(text + rng.pick(['x', '}', ' {}', '\n\n', '\u0000'])), 'trailing garbage after JSON'];
    case 3: return [Buffer.from(text.replace(/^\{/, '{"model":"a",')), 'duplicated key'];
    case 4: return [Buffer.from(JSON.stringify(rng.pick<unknown>([[], [text], 'text', 0, null, true, [{}]]))), 'JSON that is not an object'];
    case 5: return [Buffer.alloc(0), 'empty body'];
    case 6: return [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]), 'UTF-8 BOM'];
    case 7: {
      const bytes = Buffer.from(text);
      const at = rng.int(0, bytes.length);
      const bad = rng.pick([[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80]]);
      return [Buffer.concat([bytes.subarray(0, at), Buffer.from(bad), bytes.subarray(at)]), 'invalid UTF-8 bytes'];
    }
    case 8: return [Buffer.from(text.replace(/:(\d+)/, ':NaN').replace(/:true/, ':Infinity')), 'NaN / Infinity tokens'];
    case 9: return [Buffer.from(text.replace(/\}$/, ',}')), 'trailing comma'];
    case 10: return [Buffer.from(text.replace(/"/g, "'")), 'single quotes'];
    case 11: return [Buffer.from(`/* c */ ${text}`), 'comment before JSON'];
    case 12: return [Buffer.from(' '.repeat(rng.pick([10, 100_000])) + text), 'leading whitespace'];
    default: return [Buffer.from(text, 'utf16le'), 'UTF-16LE body'];
  }
}

/**
 * The most output the bundled chat model gives (its window, 32,768 tokens; GET /v1/models shows it
 * as max_tokens): a larger max_tokens is refused (400), a smaller one is served.
 */
export const CHAT_MAX_OUTPUT_TOKENS = 32_768;

/**
 * Keeps a generation short: a fuzz case that reaches the model must not decode thousands of tokens.
 * Every value the model would serve is lowered to `cap`; larger ones stay, to be refused. (This
 * bound was 4,096, the model's window when the fuzzer was written; once the window became 32,768,
 * the odd values 4097 and 32001 were served, generations of minutes that timed out the fuzzer's
 * 30 s read and filled the worker's batch, so that short requests behind them timed out too.)
 */
function boundMaxTokens(body: Record<string, unknown>, cap: number): void {
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const v = body[field];
    if (typeof v === 'number' && Number.isInteger(v) && v > cap && v <= CHAT_MAX_OUTPUT_TOKENS) body[field] = cap;
  }
}

// ---------------------------------------------------------------------------------------------
// Request assembly

interface Draft {
  method: string;
  target: string;
  headers: Headers;
  body?: Buffer;
  framing: 'length' | 'chunked' | 'none';
  labels: string[];
  action: FuzzCase['action'];
  timeoutMs: number;
}

/** Node's default limit on the request line plus headers; past it the parser refuses the request (431). */
const MAX_HEADER_BYTES = 16 * 1024;

function finish(id: string, endpoint: Endpoint, draft: Draft): FuzzCase {
  const bytes = serializeRequest({ method: draft.method, target: draft.target, headers: draft.headers, body: draft.body, framing: draft.framing });
  const headBytes = bytes.indexOf('\r\n\r\n');
  // Past the header limit the route is never reached: the neutral envelope. Near it, either.
  let envelopes = envelopesFor(draft.target, draft.headers);
  // A request target with bytes outside visible ASCII may be refused by the parser itself; a header
  // name that is not a token, or a value with control characters, is (the route is never known).
  if (/[^\x21-\x7e]/.test(draft.target)) envelopes = [...envelopes, 'neutral'];
  if (draft.headers.some(([n, v]) => !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(n) || /[\x00-\x08\x0a-\x1f\x7f]/.test(v))) envelopes = ['neutral'];
  if (headBytes > MAX_HEADER_BYTES + 1024) envelopes = ['neutral'];
  else if (headBytes > MAX_HEADER_BYTES - 1024) envelopes = [...envelopes, 'neutral'];
  return {
    id,
    endpoint,
    label: draft.labels.join('; ') || 'valid',
    bytes,
    responses: [{ head: draft.method === 'HEAD', envelopes: [...new Set(envelopes)] }],
    asksClose: asksClose(draft.headers),
    action: draft.action,
    fresh: false,
    timeoutMs: draft.timeoutMs,
  };
}

/** Mutations that apply to any endpoint: method, path, query, header and framing changes. */
function mutateRequest(rng: Random, draft: Draft): void {
  if (rng.chance(0.06)) {
    const method = rng.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'SEARCH', 'MKCOL', 'PURGE', 'POST']);
    draft.labels.push(`method ${method}`);
    draft.method = method;
  }
  if (rng.chance(0.06)) {
    const [path, query = ''] = draft.target.split('?');
    const mutated = rng.pick([
      `${path}/`, `/${path}`, `${path}//`, path!.toUpperCase(), path!.replace('/v1/', '/v1/./'), path!.replace('/v1/', '/v1/x/../'),
      path!.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`), `${path}?${query}&beta=true`, `${path}?%zz=1`, `${path}?a=${'q'.repeat(3000)}`,
      `${path}?limit=1&limit=2`, `${path};jsessionid=1`, `${path}%00`, `${path}%2F`, `${path}?\u00e9`.replace('\u00e9', '%C3%A9'),
    ]);
    draft.labels.push(`path ${mutated.length > 80 ? mutated.slice(0, 80) + '…' : mutated}`);
    draft.target = mutated;
  }
  const headerMutations = rng.weighted([[6, 0], [3, 1], [1, 2]]);
  for (let i = 0; i < headerMutations; i++) {
    const [headers, label] = mutateHeaders(rng, draft.headers);
    draft.headers = headers;
    draft.labels.push(label);
  }
  if (draft.body !== undefined && rng.chance(0.08)) {
    draft.framing = 'chunked';
    draft.labels.push('chunked body');
  }
  // Connection: close on a good share of requests, streamed or not.
  if (rng.chance(0.08) && !draft.headers.some(([n]) => n.toLowerCase() === 'connection')) {
    draft.headers.push(['Connection', 'close']);
    draft.labels.push('connection close');
  }
}

function postDraft(rng: Random, target: string, dialect: 'anthropic' | 'openai', body: Record<string, unknown>, fields: string[], cap?: number): Draft {
  const labels: string[] = [];
  const mutations = rng.weighted([[3, 0], [5, 1], [2, 2], [1, 3]]);
  for (let i = 0; i < mutations; i++) labels.push(mutateBody(rng, body, fields));
  if (cap !== undefined) boundMaxTokens(body, cap);
  let payload: Buffer = Buffer.from(serializeBody(body));
  if (rng.chance(0.12)) {
    const [bytes, label] = mutateSerialization(rng, payload.toString());
    payload = bytes;
    labels.push(label);
  }
  const draft: Draft = { method: 'POST', target, headers: baseHeaders(rng, dialect, true), body: payload, framing: 'length', labels, action: 'read', timeoutMs: NORMAL_TIMEOUT_MS };
  mutateRequest(rng, draft);
  return draft;
}

const MESSAGES_FIELDS = ['system', 'stream', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'metadata', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control', 'service_tier', 'container', 'mcp_servers'];
const EMBED_FIELDS = ['encoding_format', 'dimensions', 'user', 'model', 'input'];

function messagesCase(rng: Random, id: string): FuzzCase {
  const body = validMessagesBody(rng, true);
  const mode = rng.weighted<'json' | 'stream' | 'abort-stream' | 'abort-early'>([[6, 'json'], [3, 'stream'], [1, 'abort-stream'], [0.5, 'abort-early']]);
  if (mode !== 'json') body.stream = mode === 'abort-early' ? rng.chance(0.5) : true;
  if (mode.startsWith('abort')) {
    body.max_tokens = rng.int(16, 64);
    const draft: Draft = { method: 'POST', target: '/v1/messages', headers: baseHeaders(rng, 'anthropic', true), body: Buffer.from(JSON.stringify(body)), framing: 'length', labels: [`client aborts (${mode})`], action: mode as Draft['action'], timeoutMs: NORMAL_TIMEOUT_MS };
    if (rng.chance(0.3)) draft.headers.push(['Connection', 'close']), draft.labels.push('connection close');
    return finish(id, 'messages', draft);
  }
  const draft = postDraft(rng, rng.chance(0.1) ? '/v1/messages?beta=true' : '/v1/messages', 'anthropic', body, MESSAGES_FIELDS, 8);
  if (mode === 'stream') draft.labels.unshift('stream');
  return finish(id, 'messages', draft);
}

const CHAT_FIELDS = ['messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'seed', 'n', 'tools', 'tool_choice', 'response_format', 'stream', 'stream_options', 'logprobs', 'top_logprobs', 'reasoning_effort', 'frequency_penalty', 'logit_bias', 'user', 'metadata'];

function chatCase(rng: Random, id: string): FuzzCase {
  const body = validChatBody(rng);
  const stream = rng.chance(0.3);
  if (stream) body.stream = true;
  if (stream && rng.chance(0.5)) body.stream_options = { include_usage: true };
  const draft = postDraft(rng, '/v1/chat/completions', 'openai', body, CHAT_FIELDS, 8);
  // Without a limit a chat completion runs to the model's output limit (as the peers do): a body the
  // mutations left without one gets a small one back, so no case runs for minutes.
  let parsed: unknown;
  try {
    parsed = JSON.parse(draft.body!.toString());
  } catch {
    parsed = undefined;
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && !('max_tokens' in parsed) && !('max_completion_tokens' in parsed)) {
    draft.body = Buffer.from(JSON.stringify({ ...parsed, max_completion_tokens: 4 }));
  }
  if (stream) draft.labels.unshift('stream');
  return finish(id, 'chat', draft);
}

function countTokensCase(rng: Random, id: string): FuzzCase {
  return finish(id, 'count_tokens', postDraft(rng, '/v1/messages/count_tokens', 'anthropic', validMessagesBody(rng, false), MESSAGES_FIELDS));
}

function embeddingsCase(rng: Random, id: string): FuzzCase {
  return finish(id, 'embeddings', postDraft(rng, '/v1/embeddings', 'openai', validEmbeddingsBody(rng), EMBED_FIELDS));
}

/** Percent-encodes every byte of the UTF-8 form (lone surrogates become U+FFFD; encodeURIComponent would throw). */
const percentEncode = (text: string) => [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');

/** Model ids for path parameters: valid, unknown, over-long, badly percent-encoded, traversal. */
function pathModel(rng: Random, valid: string): [string, string] {
  return rng.weighted<() => [string, string]>([
    [6, () => [valid, 'valid']],
    [1, () => ['nope', 'unknown model']],
    [1, () => [rng.pick([CHAT_MODEL, EMBED_MODEL].filter((m) => m !== valid)), 'model of the other task']],
    [1, () => { const n = rng.pick([101, 200, 500, 2000]); return ['m'.repeat(n), `${n}-char model id`]; }],
    [1, () => { const v = rng.pick(['%E0%A4%A', '%', '%zz', '%C3', '%ED%A0%80', '%FF%FE', '%00', '%2e%2e', '%2F..%2F', '..', '%20', 'a%0Ab', '%25', '%u2603']); return [v, `model ${v}`]; }],
    [0.5, () => [percentEncode(oddString(rng, 300)), 'odd encoded id']],
  ])();
}

function enginesCase(rng: Random, id: string): FuzzCase {
  const [model, label] = pathModel(rng, EMBED_MODEL);
  const bodyModel = rng.weighted<string | undefined>([[5, EMBED_MODEL], [2, undefined], [1, CHAT_MODEL]]);
  const draft = postDraft(rng, `/v1/engines/${model}/embeddings`, 'openai', validEmbeddingsBody(rng, bodyModel), EMBED_FIELDS);
  draft.labels.unshift(label);
  return finish(id, 'engines', draft);
}

function getDraft(rng: Random, target: string, dialect: 'anthropic' | 'openai' | 'none'): Draft {
  const headers = dialect === 'none' ? [['Host', 'localhost'] as [string, string]] : baseHeaders(rng, dialect, false);
  const draft: Draft = { method: 'GET', target, headers, framing: 'none', labels: [], action: 'read', timeoutMs: NORMAL_TIMEOUT_MS };
  if (rng.chance(0.05)) {
    draft.body = Buffer.from(rng.pick(['{}', 'garbage', JSON.stringify(randomJson(rng))]));
    draft.framing = 'length';
    draft.labels.push('GET with a body');
  }
  mutateRequest(rng, draft);
  return draft;
}

function modelsCase(rng: Random, id: string): FuzzCase {
  const query = rng.weighted<string>([
    [5, ''],
    [1, `?limit=${rng.pick(['1', '0', '-1', 'abc', '1e9', '1.5', '', '1000', '1001', '%zz', '99999999999999999999'])}`],
    [1, `?after_id=${rng.pick([CHAT_MODEL, EMBED_MODEL, 'nope', '', '%E0%A4%A', 'x'.repeat(500)])}`],
    [1, `?before_id=${rng.pick([CHAT_MODEL, EMBED_MODEL, 'nope'])}&after_id=${rng.pick([CHAT_MODEL, 'nope'])}`],
    [1, `?${percentEncode(randomString(rng, 10)).replace(/%3D/g, '=').replace(/%26/g, '&')}`],
  ]);
  const draft = getDraft(rng, `/v1/models${query}`, rng.pick(['anthropic', 'openai', 'none'] as const));
  if (query) draft.labels.unshift(`query ${query.slice(0, 60)}`);
  return finish(id, 'models', draft);
}

function modelCase(rng: Random, id: string): FuzzCase {
  const [model, label] = pathModel(rng, rng.pick([CHAT_MODEL, EMBED_MODEL]));
  const draft = getDraft(rng, `/v1/models/${model}`, rng.pick(['anthropic', 'openai', 'none'] as const));
  draft.labels.unshift(label);
  return finish(id, 'model', draft);
}

function opsCase(rng: Random, id: string): FuzzCase {
  const target = rng.weighted<string>([
    [3, '/health'], [2, '/ready'], [1, '/metrics'], [1, '/'], [1, '/v1'], [1, '/v1/'], [1, '/favicon.ico'], [1, '/v1/complete'],
    [1, '/v1/chat/completions'], [1, `/${randomString(rng, 12).replace(/[^a-zA-Z0-9/_.-]/g, '')}`], [0.5, `/${'a'.repeat(rng.pick([1000, 8000]))}`],
  ]);
  const draft = getDraft(rng, target, rng.pick(['anthropic', 'openai', 'none'] as const));
  if (rng.chance(0.15)) {
    draft.method = rng.pick(['HEAD', 'POST', 'DELETE', 'OPTIONS']);
    draft.labels.push(`method ${draft.method}`);
  }
  return finish(id, 'ops', draft);
}

// ---------------------------------------------------------------------------------------------
// Malformed HTTP

interface RawTemplate {
  label: string;
  /** neutral: the route cannot be known (a parser error). either: the server may reach the route or not. */
  kind: 'neutral' | 'either';
  build(rng: Random): { bytes: Buffer; responses?: ExpectedResponse[]; action?: FuzzCase['action']; asksClose?: boolean };
}

const crlf = (...lines: string[]) => Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
const json = (body: object) => JSON.stringify(body);
const embedBody = () => json({ model: EMBED_MODEL, input: 'hello' });
const chatBody = (stream = false) => json({ model: CHAT_MODEL, max_tokens: 2, stream, messages: [{ role: 'user', content: 'hi' }] });
const validTargets = [
  { path: '/v1/embeddings', headers: ['Content-Type: application/json', `Authorization: Bearer ${API_KEY}`], body: embedBody, envelopes: ['openai'] as Envelope[] },
  { path: '/v1/messages', headers: ['Content-Type: application/json', 'anthropic-version: 2023-06-01', `x-api-key: ${API_KEY}`], body: () => chatBody(), envelopes: ['anthropic'] as Envelope[] },
  { path: '/v1/messages/count_tokens', headers: ['Content-Type: application/json', 'anthropic-version: 2023-06-01', `x-api-key: ${API_KEY}`], body: () => json({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] }), envelopes: ['anthropic'] as Envelope[] },
];

const RAW_TEMPLATES: RawTemplate[] = [
  {
    label: 'garbage request line',
    kind: 'neutral',
    build: (rng) => {
      const line = rng.pick([
        () => randomString(rng, rng.int(1, 200)).replace(/[\r\n]/g, ''),
        () => 'GARBAGE',
        () => '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', // a TLS ClientHello on the plain port
        () => 'SSH-2.0-OpenSSH_9.6',
        () => 'GET',
        () => '/ HTTP/1.1',
        () => 'GET  / HTTP/1.1',
        () => 'GET / HTTP/1.1 extra',
        () => '\x00\x00\x00\x00',
      ])();
      return { bytes: Buffer.concat([Buffer.from(latin1(line), 'latin1'), Buffer.from('\r\nHost: x\r\n\r\n')]) };
    },
  },
  {
    label: 'invalid method token',
    kind: 'neutral',
    build: (rng) => ({ bytes: crlf(`${rng.pick(['get', 'Post', 'G@T', 'FOO', 'GETT', 'POST\x00', 'BREW', '🙂'])} /v1/models HTTP/1.1`, 'Host: x') }),
  },
  {
    label: 'CONNECT request',
    kind: 'either',
    build: (rng) => ({ bytes: crlf(`CONNECT ${rng.pick(['127.0.0.1:1', 'example.com:443', '/v1/models'])} HTTP/1.1`, 'Host: x') }),
  },
  {
    label: 'odd HTTP version',
    kind: 'either',
    build: (rng) => ({ bytes: crlf(`GET /v1/models ${rng.pick(['HTTP/1', 'HTTP/1.1x', 'HTTP/0.9', 'HTTP/3.0', 'http/1.1', 'HTTP/1.10', 'HTTP/11', 'HTTP/'])}`, 'Host: x') }),
  },
  {
    label: 'request line without version',
    kind: 'either', // Node takes it for HTTP/0.9
    build: () => ({ bytes: crlf('GET /v1/models', 'Host: x') }),
  },
  {
    label: 'bad header syntax',
    kind: 'neutral',
    build: (rng) => ({
      bytes: crlf('GET /v1/models HTTP/1.1', 'Host: x', rng.pick(['NoColonHere', 'Bad Header: y', 'X(Y): 1', ': empty-name', 'X-Nul: a\x00b', 'X-Cr: a\rb', 'Host : x', 'X-Del: a\x7fb', '\x01: 1'])),
    }),
  },
  {
    label: 'obs-fold continuation line',
    kind: 'either',
    build: () => ({ bytes: crlf('GET /v1/models HTTP/1.1', 'Host: x', 'X-Folded: a', ' b') }),
  },
  {
    label: 'bare LF line endings',
    kind: 'either',
    build: () => ({ bytes: Buffer.from('GET /v1/models HTTP/1.1\nHost: x\n\n') }),
  },
  {
    label: 'headers over 16 KB',
    kind: 'neutral',
    build: (rng) => {
      const size = rng.int(17_000, 80_000);
      return rng.chance(0.5)
        ? { bytes: crlf('GET /v1/models HTTP/1.1', 'Host: x', `X-Big: ${'a'.repeat(size)}`) }
        : { bytes: crlf('GET /v1/models HTTP/1.1', 'Host: x', ...Array.from({ length: Math.ceil(size / 40) }, (_, i) => `X-Header-${i}: ${'b'.repeat(28)}`)) };
    },
  },
  {
    label: 'request target over 16 KB',
    kind: 'neutral',
    build: (rng) => ({ bytes: crlf(`GET /v1/models/${'m'.repeat(rng.int(17_000, 40_000))} HTTP/1.1`, 'Host: x') }),
  },
  {
    label: 'missing Host',
    kind: 'either',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, ...t.headers, `Content-Length: ${Buffer.byteLength(body)}`), Buffer.from(body)]), responses: [{ head: false, envelopes: [...t.envelopes, 'neutral'] }] };
    },
  },
  {
    label: 'Expect: 42-continue',
    kind: 'either',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      const expect = rng.pick(['42-continue', '100-continue, x', 'foo', '']);
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Expect: ${expect}`, `Content-Length: ${Buffer.byteLength(body)}`), Buffer.from(body)]), responses: [{ head: false, envelopes: [...t.envelopes, 'neutral'] }] };
    },
  },
  {
    label: 'bad Content-Length',
    kind: 'neutral',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      const lengths = rng.pick([['abc'], ['-1'], ['1 2'], ['0x10'], ['99999999999999999999999'], [String(body.length), String(body.length + 1)], ['1,2']]);
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, ...lengths.map((l) => `Content-Length: ${l}`)), Buffer.from(body)]) };
    },
  },
  {
    label: 'Content-Length and Transfer-Encoding together',
    kind: 'neutral',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Content-Length: ${body.length}`, 'Transfer-Encoding: chunked'), Buffer.from(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)]) };
    },
  },
  {
    label: 'chunked encoding error',
    kind: 'neutral',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      const broken = rng.pick([
        `zz\r\n${body}\r\n0\r\n\r\n`, // size is not hex
        `${body.length.toString(16)}\r\n${body}XX0\r\n\r\n`, // data not followed by CRLF
        `ffffffffffffffffffff\r\n${body}\r\n0\r\n\r\n`, // size overflow
        `-1\r\n${body}\r\n0\r\n\r\n`,
        `${(body.length + 5).toString(16)}\r\n${body}\r\n0\r\n\r\n\r\n\r\n`, // size larger than data
        `${body.length.toString(16)};${'x'.repeat(20_000)}\r\n${body}\r\n0\r\n\r\n`, // a huge chunk extension
        `${body.length.toString(16)} \x00\r\n${body}\r\n0\r\n\r\n`,
      ]);
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, rng.pick(['Transfer-Encoding: chunked', 'transfer-encoding: CHUNKED'])), Buffer.from(broken, 'latin1')]) };
    },
  },
  {
    label: 'odd Transfer-Encoding',
    kind: 'either',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      const te = rng.pick(['gzip, chunked', 'chunked, gzip', 'identity', 'chunked, chunked', 'gzip', 'x-unknown']);
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Transfer-Encoding: ${te}`), Buffer.from(`${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)]), responses: [{ head: false, envelopes: [...t.envelopes, 'neutral'] }] };
    },
  },
  {
    label: 'body longer than Content-Length',
    kind: 'either',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      // The extra bytes are a second, broken request: one answer for the first, a neutral 400 for the rest.
      const extra = rng.pick(['garbage', '}}}}', randomString(rng, 30).replace(/[\r\n]/g, ''), '\x00\x01\x02']);
      return {
        bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Content-Length: ${Buffer.byteLength(body)}`), Buffer.from(body), Buffer.from(`${latin1(extra)}\r\nHost: x\r\n\r\n`, 'latin1')]),
        responses: [{ head: false, envelopes: t.envelopes }, { head: false, envelopes: ['neutral'] }],
      };
    },
  },
  {
    label: 'body shorter than Content-Length, then FIN',
    kind: 'either',
    build: (rng) => {
      const t = rng.pick(validTargets);
      const body = t.body();
      const cut = rng.int(0, body.length - 1);
      return { bytes: Buffer.concat([crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Content-Length: ${Buffer.byteLength(body)}`), Buffer.from(body.slice(0, cut))]), action: 'fin', responses: [{ head: false, envelopes: [...t.envelopes, 'neutral'] }] };
    },
  },
  {
    label: 'pipelined requests',
    kind: 'either',
    build: (rng) => {
      const n = rng.int(2, 4);
      const parts: Buffer[] = [];
      const responses: ExpectedResponse[] = [];
      for (let i = 0; i < n; i++) {
        if (rng.chance(0.5)) {
          const t = rng.pick(validTargets);
          const body = t.body();
          parts.push(crlf(`POST ${t.path} HTTP/1.1`, 'Host: x', ...t.headers, `Content-Length: ${Buffer.byteLength(body)}`), Buffer.from(body));
          responses.push({ head: false, envelopes: t.envelopes });
        } else {
          const head = rng.chance(0.3);
          parts.push(crlf(`${head ? 'HEAD' : 'GET'} ${rng.pick(['/health', '/v1/models', '/nope'])} HTTP/1.1`, 'Host: x'));
          responses.push({ head, envelopes: ['openai'] });
        }
      }
      return { bytes: Buffer.concat(parts), responses };
    },
  },
  {
    label: 'HTTP/1.0',
    kind: 'either',
    build: (rng) => {
      const keepAlive = rng.chance(0.5);
      return { bytes: crlf(`GET ${rng.pick(['/health', '/v1/models', '/nope'])} HTTP/1.0`, ...(keepAlive ? ['Connection: keep-alive'] : [])), responses: [{ head: false, envelopes: ['openai'] }], asksClose: !keepAlive };
    },
  },
  {
    label: 'absolute-form or asterisk target',
    kind: 'either',
    build: (rng) => ({ bytes: crlf(`${rng.pick(['GET http://127.0.0.1/health', 'GET http://evil.example/v1/models', 'OPTIONS *', 'GET *', 'GET health', 'GET //v1/models'])} HTTP/1.1`, 'Host: x'), responses: [{ head: false, envelopes: ['openai', 'neutral'] }] }),
  },
  {
    label: 'odd bytes in the request target',
    kind: 'either',
    build: (rng) => ({ bytes: Buffer.concat([Buffer.from('GET /v1/models/'), Buffer.from(rng.pick([[0xc3, 0xa9], [0xff], [0x00], [0x7f], [0x09], [0x22, 0x3c, 0x3e]])), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]) }),
  },
  {
    label: 'many small headers',
    kind: 'either',
    build: (rng) => ({ bytes: crlf('GET /v1/models HTTP/1.1', 'Host: x', ...Array.from({ length: rng.pick([1000, 2100, 3000]) }, (_, i) => `a${i}: 1`)), responses: [{ head: false, envelopes: ['openai', 'neutral'] }] }),
  },
  {
    label: 'Connection: close, streamed and not',
    kind: 'either',
    build: (rng) => {
      const stream = rng.chance(0.5);
      const body = chatBody(stream);
      return { bytes: Buffer.concat([crlf('POST /v1/messages HTTP/1.1', 'Host: x', 'Content-Type: application/json', 'anthropic-version: 2023-06-01', `x-api-key: ${API_KEY}`, 'Connection: close', `Content-Length: ${body.length}`), Buffer.from(body)]), responses: [{ head: false, envelopes: ['anthropic'] }], asksClose: true };
    },
  },
];

function rawCase(rng: Random, id: string): FuzzCase {
  const template = rng.pick(RAW_TEMPLATES);
  const built = template.build(rng);
  const envelopes: Envelope[] = template.kind === 'neutral' ? ['neutral'] : ['openai', 'anthropic', 'neutral'];
  return {
    id,
    endpoint: 'raw',
    label: template.label,
    bytes: built.bytes,
    responses: built.responses ?? [{ head: false, envelopes }],
    asksClose: built.asksClose ?? false,
    action: built.action ?? 'read',
    fresh: true,
    timeoutMs: 10_000,
  };
}

const GENERATORS: Record<Endpoint, (rng: Random, id: string) => FuzzCase> = {
  messages: messagesCase,
  count_tokens: countTokensCase,
  chat: chatCase,
  embeddings: embeddingsCase,
  engines: enginesCase,
  models: modelsCase,
  model: modelCase,
  ops: opsCase,
  raw: rawCase,
};

/** Case `index` of `endpoint` under `seed`: the same arguments always give the same bytes. */
export function generateCase(seed: number, endpoint: Endpoint, index: number): FuzzCase {
  return GENERATORS[endpoint](new Random(seed, hashString(endpoint), index), `${endpoint}:${index}`);
}

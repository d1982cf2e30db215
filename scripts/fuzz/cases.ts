/**
 * Seeded request generators, one per endpoint; the malformed HTTP of the `raw` endpoint is
 * raw-cases.ts. Each case (fuzz-case.ts) is the exact bytes to send and what a correct server may
 * answer: which error envelopes, whether the client asked to close, and what the client does after
 * writing (read, abort mid-stream, ...). Headers and bodies and their mutations: headers.ts, bodies.ts.
 */
import { serializeRequest } from './raw-client.js';
import { hashString, oddString, Random, randomJson, randomString } from './random.js';
import { CHAT_MODEL, EMBED_MODEL, type Endpoint, type Envelope, type FuzzCase } from './fuzz-case.js';
import { asksClose, baseHeaders, mutateHeaders, type Headers } from './headers.js';
import { boundMaxTokens, mutateBody, mutateSerialization, serializeBody, validChatBody, validEmbeddingsBody, validMessagesBody, validResponsesBody } from './bodies.js';
import { rawCase } from './raw-cases.js';
import { withHostileSchema, withPrototypeName, type ChatDialect } from './schemas.js';
import { rerankRequest, retrievalEnvelopes, teiRequest, tokenizeRequest, type RetrievalRequest } from './retrieval-cases.js';

export { API_KEY, CHAT_MODEL, EMBED_MODEL, ENDPOINTS, type Endpoint, type Envelope, type ExpectedResponse, type FuzzCase } from './fuzz-case.js';

const NORMAL_TIMEOUT_MS = 30_000;
/** POST /models/load and /models/unload, in both spellings (src/http/shared/model-admin-plugin.ts). */
const ADMIN_PATHS = ['/models/load', '/models/unload', '/v1/models/load', '/v1/models/unload'] as const;

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
export function envelopesFor(target: string, headers: Array<[string, string]>, method = 'POST'): Envelope[] {
  const path = target.split('?')[0]!;
  const decoded = safeDecode(path);
  // The retrieval routes answer in their own envelopes whatever the headers (./retrieval-cases.ts).
  const retrieval = decoded === undefined ? undefined : retrievalEnvelopes(method, decoded);
  if (retrieval) return retrieval;
  // The load and unload routes answer in OpenAI's envelope whatever the headers.
  if (method === 'POST' && decoded !== undefined && (ADMIN_PATHS as readonly string[]).includes(decoded)) return ['openai'];
  const present = headers.filter(([n]) => ANTHROPIC_HEADERS.includes(n.toLowerCase()));
  const anthropic = present.some(([, v]) => v.trim() !== '');
  const emptyOnly = present.length > 0 && !anthropic;
  if (decoded === undefined) return anthropic ? ['anthropic', 'neutral'] : ['openai', 'anthropic', 'neutral'];
  if (/^\/v1\/messages(\/|$)/.test(decoded)) return ['anthropic'];
  if (/^\/v1\/(embeddings|engines\/|chat\/completions|responses)/.test(decoded)) return anthropic || emptyOnly ? ['openai', 'anthropic'] : ['openai'];
  if (anthropic) return ['anthropic'];
  return emptyOnly ? ['anthropic', 'openai'] : ['openai'];
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
  let envelopes = envelopesFor(draft.target, draft.headers, draft.method);
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

/** The chat dialects' own hostile values (./schemas.ts), on some of their bodies, before the generic mutations. */
function chatMutations(rng: Random, body: Record<string, unknown>, dialect: ChatDialect): string[] {
  const labels: string[] = [];
  if (rng.chance(0.2)) labels.push(withHostileSchema(rng, body, dialect));
  if (rng.chance(0.1)) labels.push(withPrototypeName(rng, body, dialect));
  return labels;
}

function postDraft(rng: Random, target: string, dialect: 'anthropic' | 'openai', body: Record<string, unknown>, fields: string[], cap?: number, chat?: ChatDialect): Draft {
  const labels: string[] = chat ? chatMutations(rng, body, chat) : [];
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
  const draft = postDraft(rng, rng.chance(0.1) ? '/v1/messages?beta=true' : '/v1/messages', 'anthropic', body, MESSAGES_FIELDS, 8, 'messages');
  if (mode === 'stream') draft.labels.unshift('stream');
  return finish(id, 'messages', draft);
}

/**
 * Without a limit a generation runs to the model's output limit (as the peers do): a body the
 * mutations left without one (absent, or null: the dialect's "no limit") gets a small one back, so no
 * case runs for minutes (seed 2064110306's chat:17, max_tokens null, ran 172 s). A mutation may nest a
 * field deeper than JSON.stringify can recurse (JSON.parse has no such limit; seed 1720414297's chat
 * case): that body is refused by the schema anyway, and goes as it is.
 */
function boundOutput(draft: Draft, limits: string[], field: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(draft.body!.toString());
  } catch {
    return;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return;
  if (limits.some((limit) => (parsed as Record<string, unknown>)[limit] != null)) return;
  try {
    draft.body = Buffer.from(JSON.stringify({ ...parsed, [field]: 4 }));
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
  }
}

const CHAT_FIELDS = ['messages', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'stop', 'seed', 'n', 'tools', 'tool_choice', 'response_format', 'stream', 'stream_options', 'logprobs', 'top_logprobs', 'reasoning_effort', 'frequency_penalty', 'logit_bias', 'ignore_eos', 'user', 'metadata'];

function chatCase(rng: Random, id: string): FuzzCase {
  const body = validChatBody(rng);
  const stream = rng.chance(0.3);
  if (stream) body.stream = true;
  if (stream && rng.chance(0.5)) body.stream_options = { include_usage: true };
  const draft = postDraft(rng, '/v1/chat/completions', 'openai', body, CHAT_FIELDS, 8, 'chat');
  boundOutput(draft, ['max_tokens', 'max_completion_tokens'], 'max_completion_tokens');
  if (stream) draft.labels.unshift('stream');
  return finish(id, 'chat', draft);
}

const RESPONSES_FIELDS = ['input', 'instructions', 'max_output_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'text', 'reasoning', 'stream', 'store', 'include', 'previous_response_id', 'truncation', 'metadata', 'prompt_cache_key', 'background', 'ignore_eos'];

/** POST /v1/responses (and its input_tokens count): the same bound on output as chat (an unlimited one gets 4 back). */
function responsesCase(rng: Random, id: string): FuzzCase {
  const body = validResponsesBody(rng);
  const stream = rng.chance(0.3);
  if (stream) body.stream = true;
  const count = !stream && rng.chance(0.15);
  if (count) delete body.max_output_tokens;
  const draft = postDraft(rng, count ? '/v1/responses/input_tokens' : '/v1/responses', 'openai', body, RESPONSES_FIELDS, 8, 'responses');
  if (!count) boundOutput(draft, ['max_output_tokens'], 'max_output_tokens');
  if (stream) draft.labels.unshift('stream');
  return finish(id, 'responses', draft);
}

function countTokensCase(rng: Random, id: string): FuzzCase {
  return finish(id, 'count_tokens', postDraft(rng, '/v1/messages/count_tokens', 'anthropic', validMessagesBody(rng, false), MESSAGES_FIELDS, undefined, 'messages'));
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

/**
 * A load or unload as the playground sends it. Loads name either model (both are loaded already, so
 * it answers at once, unless an unload came before); an unload names the embedding model now and
 * then (it loads again on its next request: a second or so, so not often), else a model that does
 * not exist or an odd string.
 */
function adminCase(rng: Random, id: string): FuzzCase {
  const unload = rng.chance(0.4);
  const target = rng.pick(unload ? ADMIN_PATHS.filter((p) => p.endsWith('unload')) : ADMIN_PATHS.filter((p) => p.endsWith('/load')));
  const real = unload ? [1, EMBED_MODEL] as [number, string] : [6, rng.pick([CHAT_MODEL, EMBED_MODEL])] as [number, string];
  const model = rng.weighted<string>([real, [1, 'nope'], [1, oddString(rng, 4096)]]);
  const draft = postDraft(rng, target, rng.chance(0.8) ? 'openai' : 'anthropic', { model }, ['model']);
  draft.labels.unshift(`${target} ${model.slice(0, 40)}`);
  return finish(id, 'admin', draft);
}

/** A retrieval route's case: its body as clients send it, then the usual mutations. */
const retrievalCase = (endpoint: Endpoint, request: (rng: Random) => RetrievalRequest) => (rng: Random, id: string): FuzzCase => {
  const { target, body, fields } = request(rng);
  return finish(id, endpoint, postDraft(rng, target, 'openai', body, fields));
};

const GENERATORS: Record<Endpoint, (rng: Random, id: string) => FuzzCase> = {
  messages: messagesCase,
  count_tokens: countTokensCase,
  chat: chatCase,
  responses: responsesCase,
  embeddings: embeddingsCase,
  engines: enginesCase,
  models: modelsCase,
  model: modelCase,
  ops: opsCase,
  raw: rawCase,
  rerank: retrievalCase('rerank', rerankRequest),
  tokenize: retrievalCase('tokenize', tokenizeRequest),
  tei: retrievalCase('tei', teiRequest),
  admin: adminCase,
};

/** Case `index` of `endpoint` under `seed`: the same arguments always give the same bytes. */
export function generateCase(seed: number, endpoint: Endpoint, index: number): FuzzCase {
  return GENERATORS[endpoint](new Random(seed, hashString(endpoint), index), `${endpoint}:${index}`);
}

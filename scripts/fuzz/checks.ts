/**
 * What the fuzzer requires of every answer. Each failed check is a violation with a class (the
 * check and a normalised description, so the summary groups alike failures) and the case behind it.
 */
import { announcesClose, header, type RawResponse } from './raw-client.js';
import type { Envelope, ExpectedResponse, FuzzCase } from './cases.js';

export interface Violation {
  /** e.g. "envelope: expected anthropic, got Fastify default {error,message,statusCode}". */
  check: string;
  detail: string;
}

/** Anthropic's error types by status (shared/API.md). */
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/**
 * An error answer longer than this echoes the request back (a megabyte of bad input, a megabyte of
 * error): the real APIs name the field and the problem, and cut any quoted value short.
 */
export const MAX_ERROR_BODY_BYTES = 16 * 1024;

/** Stack frames, source paths, module names: nothing of the server's insides may reach a body. */
const LEAK = /\n\s+at |\bat [\w.<>]+ \(|node_modules|\/work\/|\/home\/|\/usr\/|file:\/\/|\.[cm]?[jt]s:\d+/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const keys = (v: Record<string, unknown>) => Object.keys(v).sort().join(',');

function isAnthropic(body: unknown): body is { type: 'error'; error: { type: string; message: string }; request_id: string } {
  return isObject(body) && body.type === 'error' && isObject(body.error) && typeof body.error.type === 'string' &&
    typeof body.error.message === 'string' && typeof body.request_id === 'string';
}

function isOpenAi(body: unknown): boolean {
  if (!isObject(body) || keys(body) !== 'error' || !isObject(body.error)) return false;
  const e = body.error;
  return keys(e) === 'code,message,param,type' && typeof e.message === 'string' && typeof e.type === 'string' &&
    (e.param === null || typeof e.param === 'string') && (e.code === null || typeof e.code === 'string');
}

/** {"type":"error","error":{"type","message","param":null,"code"}}: both SDKs read it. */
function isNeutral(body: unknown): boolean {
  if (!isObject(body) || body.type !== 'error' || !isObject(body.error)) return false;
  const e = body.error;
  return keys(e) === 'code,message,param,type' && typeof e.type === 'string' && typeof e.message === 'string' && e.param === null &&
    (e.code === null || typeof e.code === 'string');
}

/** A short description of what an error body is, for grouping violations. */
export function describeBody(body: Buffer): string {
  if (body.length === 0) return 'empty body';
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return `not JSON (${JSON.stringify(body.subarray(0, 40).toString('latin1'))})`;
  }
  // The neutral envelope is also a valid Anthropic one (it adds param and code): check it first.
  if (isNeutral(parsed)) return 'neutral envelope';
  if (isAnthropic(parsed)) return 'Anthropic envelope';
  if (isOpenAi(parsed)) return 'OpenAI envelope';
  if (isTei(parsed)) return 'TEI envelope';
  if (isObject(parsed) && 'statusCode' in parsed && 'message' in parsed) return `Fastify default {${keys(parsed)}}`;
  if (isObject(parsed)) {
    const inner = isObject(parsed.error) ? ` error:{${keys(parsed.error)}}` : '';
    return `other JSON {${keys(parsed)}}${inner}`;
  }
  return `JSON ${typeof parsed}`;
}

/** Malformed HTTP whose route cannot be known: the answer must be neutral and announce the close. */
export const neutralOnly = (expected: ExpectedResponse) => expected.envelopes.length === 1 && expected.envelopes[0] === 'neutral';

const errorMessage = (parsed: unknown): string | undefined =>
  isObject(parsed) && isObject(parsed.error) && typeof parsed.error.message === 'string' ? parsed.error.message : undefined;

/** Whether the request's JSON body (Content-Length framed) has the field at this dotted path. */
function fieldPresent(request: Buffer, path: string): boolean {
  const at = request.indexOf('\r\n\r\n');
  if (at < 0) return false;
  let node: unknown;
  try {
    node = JSON.parse(request.subarray(at + 4).toString('utf8'));
  } catch {
    return false;
  }
  for (const key of path.split('.')) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return node !== undefined;
}

/** TEI's {"error": M, "error_type": T}. */
function isTei(body: unknown): boolean {
  return isObject(body) && keys(body) === 'error,error_type' && typeof body.error === 'string' && typeof body.error_type === 'string';
}

function matches(envelope: Envelope, parsed: unknown): boolean {
  if (envelope === 'tei') return isTei(parsed);
  return envelope === 'anthropic' ? isAnthropic(parsed) : envelope === 'openai' ? isOpenAi(parsed) : isNeutral(parsed);
}

/**
 * Checks one response: status, envelope, leaks, request ids, and that a client asking to close is
 * told so. (Whether the server closed without saying so is seen on the connection: harness.ts.)
 */
export function checkResponse(c: FuzzCase, expected: ExpectedResponse, res: RawResponse, last: boolean): Violation[] {
  const out: Violation[] = [];
  const text = res.body.toString('utf8');
  const status = res.status;
  const overloaded = (status === 529 || status === 429 || status === 503) && /overloaded|rate_limit|capacity/i.test(text);
  if (status >= 500 && !overloaded) out.push({ check: 'status >= 500', detail: `${status} ${describeBody(res.body)}` });
  if (expected.status !== undefined && status !== expected.status) out.push({ check: 'status', detail: `${status} where ${expected.status} is owed: ${describeBody(res.body)}` });
  if (LEAK.test(text)) out.push({ check: 'internals in body', detail: `${status}: ${LEAK.exec(text)![0].trim()}` });

  const contentType = header(res, 'content-type') ?? '';
  if (status >= 400 && !expected.head) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!expected.envelopes.some((e) => matches(e, parsed))) {
      out.push({ check: 'envelope', detail: `${status} expected ${expected.envelopes.join('|')}, got ${describeBody(res.body)}` });
    } else if (isAnthropic(parsed) && expected.envelopes.includes('anthropic')) {
      const rid = header(res, 'request-id');
      if (rid !== undefined && parsed.request_id !== rid) out.push({ check: 'request id', detail: 'request_id differs from the request-id header' });
      const type = ANTHROPIC_TYPES[status];
      if (type && parsed.error.type !== type) out.push({ check: 'error type', detail: `${status} with error.type ${parsed.error.type} (expected ${type})` });
    }
    const required = /^([\w.]+): Field required/.exec(errorMessage(parsed) ?? '');
    if (required && fieldPresent(c.bytes, required[1]!)) out.push({ check: 'error message', detail: `${status} says "<field>: Field required" for a field the body has (wrong type)` });
    if (res.body.length > MAX_ERROR_BODY_BYTES) out.push({ check: 'error body size', detail: `${status} error body over ${MAX_ERROR_BODY_BYTES / 1024} KB (it quotes the input)` });
    if (!/json/i.test(contentType) && res.body.length > 0) out.push({ check: 'content-type', detail: `${status} error body as ${contentType || 'no content-type'}` });
    if (neutralOnly(expected) && !announcesClose(res)) {
      out.push({ check: 'Connection: close', detail: `${status} refusal of malformed HTTP without Connection: close` });
    }
  }
  if (status < 400 && /json/i.test(contentType) && !expected.head) {
    try {
      JSON.parse(text);
    } catch {
      out.push({ check: '2xx body', detail: `${status} JSON body does not parse` });
    }
  }
  if (status === 200 && /event-stream/i.test(contentType)) {
    if (res.truncated) out.push({ check: 'stream', detail: 'stream cut off (connection closed mid-body)' });
    else out.push(...streamShape(text));
  }
  if (expected.head && res.body.length > 0) out.push({ check: 'HEAD', detail: 'HEAD response with a body' });

  // Connection semantics: a client that asked to close is told so; a server that closes said so.
  if (last && c.asksClose && !announcesClose(res) && !neutralOnly(expected)) {
    out.push({ check: 'Connection: close', detail: `request asked to close, ${status}${/event-stream/.test(contentType) ? ' stream' : ''} answered Connection: ${header(res, 'connection') ?? '(none)'}` });
  }
  if (!res.truncated && !header(res, 'request-id') && expected.envelopes.includes('anthropic') && !expected.envelopes.includes('neutral')) {
    out.push({ check: 'request id', detail: `${status} without a request-id header` });
  }
  return out;
}

/**
 * A complete stream in its dialect: Anthropic's named events from message_start (pings may come
 * first, while a model loads) to message_stop or error; the Responses dialect's from response.created
 * to response.completed, response.incomplete or response.failed; OpenAI chat's data lines of
 * chat.completion.chunk objects (or an error object) ending with `data: [DONE]`.
 */
function streamShape(text: string): Violation[] {
  const events = [...text.matchAll(/^event: ([\w.]+)/gm)].map((m) => m[1]!).filter((e) => e !== 'ping');
  if (events[0]?.startsWith('response.')) {
    // The Responses dialect: response.created first, then a terminal event (an error event may come just before response.failed).
    const terminal = ['response.completed', 'response.incomplete', 'response.failed'];
    return events[0] !== 'response.created' || !terminal.includes(events.at(-1)!) ? [{ check: 'stream', detail: `responses stream events ${events[0]} … ${events.at(-1)}` }] : [];
  }
  if (events.length > 0) {
    return events[0] !== 'message_start' || !['message_stop', 'error'].includes(events.at(-1)!) ? [{ check: 'stream', detail: `stream events ${events[0]} … ${events.at(-1)}` }] : [];
  }
  const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1]!);
  if (data.at(-1) !== '[DONE]') return [{ check: 'stream', detail: `chat stream does not end with data: [DONE] (last: ${(data.at(-1) ?? 'none').slice(0, 60)})` }];
  for (const line of data.slice(0, -1)) {
    let chunk: { object?: string; error?: unknown };
    try {
      chunk = JSON.parse(line) as typeof chunk;
    } catch {
      return [{ check: 'stream', detail: `chat stream line is not JSON: ${line.slice(0, 60)}` }];
    }
    if (chunk.object !== 'chat.completion.chunk' && chunk.error === undefined) return [{ check: 'stream', detail: `chat stream line is neither a chunk nor an error: ${line.slice(0, 60)}` }];
  }
  return [];
}

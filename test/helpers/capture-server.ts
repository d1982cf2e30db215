/**
 * A stand-in Anthropic endpoint on 127.0.0.1 that records every request a client sends (method, URL
 * with its query, headers with credentials redacted, JSON body) and answers with the smallest valid
 * replies so the client carries on: a text message (JSON, or SSE when `stream: true`), count_tokens,
 * the model list, `HEAD /`. Anything else is a 404 in the Anthropic error shape, recorded like the rest.
 *
 * Used by scripts/capture/capture-clients.ts to write test/fixtures/clients/*.json, and by tests that
 * need to see what a client put on the wire.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CapturedRequest {
  /** Order of arrival, from 0. */
  seq: number;
  /** Milliseconds since the server started. */
  atMs: number;
  method: string;
  /** Path with its query string, as sent. */
  url: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** Parsed JSON when the body is JSON, the raw text otherwise, undefined when empty. */
  body?: unknown;
  bodyChars: number;
  /** How the capture server answered. */
  response: { status: number; kind: 'json' | 'sse' | 'empty' };
}

/** What the capture server should answer to one POST /v1/messages; undefined = the default text reply. */
export interface CannedReply {
  /** Content blocks of the reply (text, tool_use, thinking). */
  content: Array<
    | { type: 'text'; text: string }
    | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
    | { type: 'thinking'; thinking: string; signature: string }
  >;
  stop_reason: 'end_turn' | 'max_tokens' | 'tool_use' | 'stop_sequence';
  /** Answer with this status and error instead (content is ignored). */
  error?: { status: number; type: string; message: string };
}

export interface CaptureServerOptions {
  /** Decide the reply to each POST /v1/messages (default: a short text, stop_reason end_turn). */
  reply?: (body: Record<string, unknown>, request: CapturedRequest) => CannedReply | undefined;
  /** Model ids listed by GET /v1/models (default: the model of the first request, else 'capture-model'). */
  models?: string[];
  /** Routes to answer with a 404 instead, as 'METHOD /path' (e.g. 'HEAD /'), to see how a client copes. */
  missing?: string[];
}

export interface CaptureServer {
  /** http://127.0.0.1:PORT (no trailing slash, no /v1). */
  url: string;
  requests: CapturedRequest[];
  close(): Promise<void>;
}

const SECRET_HEADERS = new Set(['x-api-key', 'authorization', 'cookie', 'proxy-authorization']);

export function redactHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    // Keep an Authorization scheme (Bearer, Basic): which one a client uses is part of what it sends.
    const scheme = key.endsWith('authorization') ? /^(\S+)\s/.exec(text)?.[1] : undefined;
    out[key] = SECRET_HEADERS.has(key) ? (scheme ? `${scheme} <redacted>` : '<redacted>') : text;
  }
  return out;
}

export const DEFAULT_REPLY_TEXT = 'Hi.';

let idCounter = 0;
const nextId = (prefix: string) => `${prefix}_capture${String(++idCounter).padStart(6, '0')}`;

/** A rough, deterministic stand-in for a token count: 1 per 4 characters of the JSON body. */
const roughTokens = (body: unknown) => Math.max(1, Math.ceil(JSON.stringify(body ?? '').length / 4));

function messageFor(body: Record<string, unknown>, reply: CannedReply) {
  return {
    id: nextId('msg'),
    type: 'message',
    role: 'assistant',
    model: typeof body.model === 'string' ? body.model : 'capture-model',
    content: reply.content,
    stop_reason: reply.stop_reason,
    stop_sequence: null,
    usage: { input_tokens: roughTokens(body.messages), output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

function sseEvents(body: Record<string, unknown>, reply: CannedReply): string {
  const message = messageFor(body, reply);
  const events: Array<[string, unknown]> = [];
  events.push(['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } }]);
  reply.content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } }]);
    } else if (block.type === 'thinking') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } }]);
    } else {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } }]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: reply.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens } }]);
  events.push(['message_stop', { type: 'message_stop' }]);
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');
}

export async function startCaptureServer(options: CaptureServerOptions = {}): Promise<CaptureServer> {
  const requests: CapturedRequest[] = [];
  const started = Date.now();

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (raw.length) {
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
      }
      const parsed = new URL(req.url ?? '/', 'http://127.0.0.1');
      const record: CapturedRequest = {
        seq: requests.length,
        atMs: Date.now() - started,
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        path: parsed.pathname,
        query: Object.fromEntries(parsed.searchParams),
        headers: redactHeaders(req.headers),
        ...(body === undefined ? {} : { body }),
        bodyChars: raw.length,
        response: { status: 200, kind: 'empty' },
      };
      requests.push(record);
      answer(record, body, res);
    });
  });

  const requestId = () => nextId('req');
  const sendJson = (res: http.ServerResponse, record: CapturedRequest, status: number, payload: unknown) => {
    record.response = { status, kind: 'json' };
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId() });
    res.end(JSON.stringify(payload));
  };
  const sendError = (res: http.ServerResponse, record: CapturedRequest, status: number, type: string, message: string) =>
    sendJson(res, record, status, { type: 'error', error: { type, message }, request_id: requestId() });

  const modelIds = () => {
    if (options.models?.length) return options.models;
    const first = requests.find((r) => r.body && typeof (r.body as { model?: unknown }).model === 'string');
    return [first ? String((first.body as { model: string }).model) : 'capture-model'];
  };
  const modelEntry = (id: string) => ({
    id, type: 'model', object: 'model', display_name: id, created_at: '2025-01-01T00:00:00Z', created: 1735689600, owned_by: 'local',
  });

  function answer(record: CapturedRequest, body: unknown, res: http.ServerResponse): void {
    const { method, path } = record;
    if (options.missing?.includes(`${method} ${path}`)) {
      sendError(res, record, 404, 'not_found_error', `capture server: ${method} ${path} is switched off`);
      return;
    }
    if ((method === 'HEAD' || method === 'GET') && path === '/') {
      record.response = { status: 200, kind: 'empty' };
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(method === 'HEAD' ? undefined : 'ok');
      return;
    }
    if (method === 'GET' && path === '/v1/models') {
      const data = modelIds().map(modelEntry);
      sendJson(res, record, 200, { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false });
      return;
    }
    if (method === 'GET' && path.startsWith('/v1/models/')) {
      sendJson(res, record, 200, modelEntry(decodeURIComponent(path.slice('/v1/models/'.length))));
      return;
    }
    if (method === 'POST' && path === '/v1/messages/count_tokens') {
      const b = (body ?? {}) as Record<string, unknown>;
      sendJson(res, record, 200, { input_tokens: roughTokens([b.system, b.tools, b.messages]) });
      return;
    }
    if (method === 'POST' && path === '/v1/messages') {
      if (typeof body !== 'object' || body === null) {
        sendError(res, record, 400, 'invalid_request_error', 'body is not JSON');
        return;
      }
      const b = body as Record<string, unknown>;
      const reply = options.reply?.(b, record) ?? { content: [{ type: 'text', text: DEFAULT_REPLY_TEXT }], stop_reason: 'end_turn' };
      if (reply.error) {
        sendError(res, record, reply.error.status, reply.error.type, reply.error.message);
        return;
      }
      if (b.stream === true) {
        record.response = { status: 200, kind: 'sse' };
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': requestId() });
        res.end(sseEvents(b, reply));
        return;
      }
      sendJson(res, record, 200, messageFor(b, reply));
      return;
    }
    sendError(res, record, 404, 'not_found_error', `capture server: no route for ${method} ${path}`);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

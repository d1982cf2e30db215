/**
 * What the server answers below the routes: malformed HTTP, a slow client, an `Expect` it cannot
 * meet, one connection too many. Where no dialect can be known each gets one documented neutral
 * envelope that both SDKs parse —
 *   {"type":"error","error":{"type":T,"message":M,"param":null,"code":C},"request_id":R}
 * (Anthropic reads error.type/message, OpenAI error.message/type/code). An unmet `Expect` comes
 * with its request's path, and on a path a dialect owns it is answered in that dialect's envelope
 * (PathDialect: each dialect says which paths and how; this module names none). Each answer comes
 * with `Connection: close`, since the socket is dropped after it: drained first when the client may
 * still be sending (closeLingering), destroyed at once when it is too slow.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

const newId = () => `req_${randomBytes(12).toString('hex')}`;

/** An error in the neutral envelope, with the request id its body and its Request-Id header share. */
interface NeutralError {
  requestId: string;
  body: string;
}

export function neutralError(type: string, message: string, code: string): NeutralError {
  const requestId = newId();
  return { requestId, body: neutralBody({ type, message, code }, requestId) };
}

function neutralBody({ type, message, code }: PreRoutingError, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message, param: null, code }, request_id: requestId });
}

/** A complete HTTP/1.1 response as raw bytes, for a socket with no request object; the body's request id is also its header. */
function rawResponse(status: number, reason: string, error: NeutralError, options: { extraHeaders?: string; head?: boolean } = {}): string {
  const { extraHeaders = '', head = false } = options;
  const { requestId, body } = error;
  return `HTTP/1.1 ${status} ${reason}\r\nRequest-Id: ${requestId}\r\n${extraHeaders}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`;
}

/** Node's parser errors and timeouts, by their code: status, reason, error type, message. */
function describeClientError(code: string | undefined): [number, string, string, string] {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'Request Timeout', 'timeout_error', 'The request was not received in time (headers or body too slow); the connection is closed.'];
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'Request Header Fields Too Large', 'invalid_request_error', 'The request headers are larger than the server accepts.'];
    case 'HPE_INVALID_METHOD':
      return [400, 'Bad Request', 'invalid_request_error', 'The request method is not valid HTTP.'];
    default:
      return [400, 'Bad Request', 'invalid_request_error', 'The request is not valid HTTP/1.1.'];
  }
}

/** Fastify's clientErrorHandler: answers malformed or too-slow requests in the neutral envelope, then drops the socket. */
export function clientErrorHandler(error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // After a parse error Node's parser stays in its error state and reports it again for every chunk
  // the client still sends: the socket was answered once and is draining (closeLingering).
  if (refused.has(socket)) return;
  // The client closed its side in the middle of a request: there is no whole request to answer.
  if (error.code === 'HPE_INVALID_EOF_STATE') return void socket.destroy();
  const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const [status, reason, type, message] = describeClientError(error.code);
  // The answer to a HEAD carries no body (its headers say what the body would be).
  const head = Buffer.isBuffer(error.rawPacket) && error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  const answer = () => {
    if (!socket.writable) return void socket.destroy();
    const response = rawResponse(status, reason, neutralError(type, message, error.code ?? 'bad_request'), { head });
    // A slow client is dropped as soon as its answer is out: Node reports the expired request again
    // at its next check, which finds the socket no longer writable and destroys it (above). A client
    // that sent bad bytes may still be sending (the rest of a body): it is drained first, or the
    // reset its next bytes would get could destroy the answer before it reads it.
    if (timedOut) return void socket.end(response);
    socket.write(response);
    closeLingering(socket);
  };
  if (!timedOut) refused.add(socket);
  // The answer to a request received whole (garbage pipelined behind a good request) goes out
  // first, whole; a request still arriving (a slow body) is the one this error answers.
  const current = (socket as Socket & { _httpMessage?: ServerResponse & { req?: IncomingMessage } })._httpMessage;
  if (current && current.req?.complete && !current.writableFinished) {
    current.once('finish', answer);
    current.once('close', () => socket.destroy());
    return;
  }
  if (current?.headersSent) return void socket.destroy();
  answer();
}

/** Sockets answered for malformed HTTP (see clientErrorHandler). */
const refused = new WeakSet<Socket>();

/** A closing socket keeps reading, and dropping, what its client still sends until this long passes without a byte... */
export const LINGER_IDLE_MS = 500;
/** ...or this long in all, whichever comes first. */
export const LINGER_MAX_MS = 5_000;
const lingering = new WeakSet<Socket>();

/**
 * Closes a socket whose client may still be sending ("lingering close", as nginx does): the answer
 * already written goes out with a FIN, then the socket reads and drops whatever still arrives until
 * the client closes, LINGER_IDLE_MS pass without a byte, or LINGER_MAX_MS in all. Destroying it
 * at once would leave the client's next bytes unread, and the kernel answers those with a reset
 * (RFC 9112 section 9.6): a client still writing its body then gets EPIPE or ECONNRESET, and may
 * never read the answer that was sent.
 */
export function closeLingering(socket: Socket): void {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  if (socket.writable) socket.end();
  const started = Date.now();
  // The http parser reads the socket's handle directly (no 'data' events): progress shows in bytesRead.
  let seen = socket.bytesRead;
  const check = setInterval(() => {
    const now = socket.bytesRead;
    if (now === seen || Date.now() - started >= LINGER_MAX_MS) socket.destroy();
    seen = now;
  }, LINGER_IDLE_MS);
  check.unref();
  socket.once('close', () => clearInterval(check));
}

/**
 * Node closes a connection after an answer that ends it (Connection: close) with destroySoon(),
 * which destroys the socket once the answer is flushed, even when the request's body has not all
 * arrived (an answer given before the body was read: a missing Host, an upgrade request refused,
 * an early 4xx): the client, still sending, then gets a reset instead of the answer. On every
 * connection, destroySoon closes lingering instead when the last request is not complete.
 */
export function lingerOnClose(server: Server): void {
  const lastRequest = new WeakMap<Socket, IncomingMessage>();
  server.prependListener('request', (request: IncomingMessage) => lastRequest.set(request.socket, request));
  server.on('connection', (socket: Socket) => {
    const destroySoon = socket.destroySoon;
    socket.destroySoon = function (this: Socket) {
      const request = lastRequest.get(this);
      if (request && !request.complete) closeLingering(this);
      else destroySoon.call(this);
    };
  });
}

/** An error as the answers given before routing describe it: its type, wording and code. */
export interface PreRoutingError {
  type: string;
  message: string;
  code: string;
}

/** A dialect's envelope for an answer given before routing, on the paths its routes live under. */
export interface PathDialect {
  /** Path prefixes, whole segments (`/v1/messages` owns `/v1/messages/count_tokens`, not `/v1/messagesx`). */
  prefixes: readonly string[];
  /** The error's body in the dialect's envelope. */
  envelope(error: PreRoutingError, requestId: string): object;
}

/** The dialect whose prefixes `url` (a request's target, query and all) lies under; undefined: none. */
function dialectOfPath(dialects: readonly PathDialect[], url: string): PathDialect | undefined {
  const path = url.split('?')[0]!;
  return dialects.find((d) => d.prefixes.some((prefix) => path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`)));
}

/**
 * Node answers an `Expect` other than 100-continue with an empty 417; this listener (for the
 * server's 'checkExpectation') says why, in the envelope of the dialect whose path was asked for,
 * the neutral one elsewhere.
 */
export function answerExpectation(dialects: readonly PathDialect[] = []): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    const error: PreRoutingError = {
      type: 'invalid_request_error',
      message: `Expect: ${String(request.headers.expect).slice(0, 64)} cannot be met; only 100-continue is supported.`,
      code: 'expectation_failed',
    };
    const dialect = dialectOfPath(dialects, request.url ?? '/');
    const requestId = newId();
    const body = dialect ? JSON.stringify(dialect.envelope(error, requestId)) : neutralBody(error, requestId);
    response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close', 'request-id': requestId });
    response.end(body);
  };
}

/** CONNECT is not served: answered 400 in the neutral envelope and closed (without a listener Node drops it unanswered). */
export function refuseTunnel(request: IncomingMessage, socket: Socket): void {
  socket.end(rawResponse(400, 'Bad Request', neutralError('invalid_request_error', `${request.method} is not supported by this server.`, 'unsupported_protocol')), () => socket.destroy());
}

/**
 * Caps open connections: one past `max` is answered 503 at once and closed, never queued. Node's
 * own `server.maxConnections` drops such sockets without a word.
 */
export function capConnections(server: Server, max: number): void {
  let open = 0;
  server.prependListener('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => open--);
    if (open <= max) return;
    const error = neutralError('overloaded_error', `The server holds ${max} connections already; retry shortly.`, 'too_many_connections');
    // Whatever the client sends on it is never served: the socket is destroyed once the answer is out.
    socket.end(rawResponse(503, 'Service Unavailable', error, { extraHeaders: 'Retry-After: 1\r\n' }), () => socket.destroy());
  });
}

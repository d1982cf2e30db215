/**
 * What the server answers below the routes, over a real socket (fake inference): malformed HTTP,
 * framework errors, slow clients, one connection too many, Connection: close. Every answer is an
 * envelope — the dialect's where the route tells it, the neutral one otherwise — and a socket the
 * server drops is announced with Connection: close.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { FakeInference } from '../helpers/fake-inference.js';

const HEADERS_TIMEOUT_MS = 300;
const BODY_TIMEOUT_MS = 600;
const MAX_CONNECTIONS = 4;
/** How long a test waits for the server to close a socket it must close. */
const CLOSE_WAIT_MS = 3_000;

let app: FastifyInstance;
let port: number;
beforeAll(async () => {
  const fake = new FakeInference();
  fake.tokenDelayMs = 5;
  app = await buildApp({
    config: { apiKeys: [], bodyLimit: 1 << 20, pingIntervalMs: 60_000, headersTimeoutMs: HEADERS_TIMEOUT_MS, bodyTimeoutMs: BODY_TIMEOUT_MS, maxConnections: MAX_CONNECTIONS },
    inference: fake,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as net.AddressInfo).port;
});
afterAll(() => app.close());

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the socket. */
  closed: boolean;
}

/** Sends raw bytes (in pieces, with pauses, when given several) and reads until the server closes or a full response is in. */
function raw(pieces: string[], pauseMs = 0): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    let closed = false;
    const timer = setTimeout(() => finish(), CLOSE_WAIT_MS);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const [head = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      if (!statusLine) return reject(new Error(`no response (closed: ${closed})`));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), closed });
    };
    socket.on('data', (chunk) => {
      data += chunk.toString();
      // A complete response (by Content-Length, or the last chunk) ends the wait; a close may still follow at once.
      const split = data.indexOf('\r\n\r\n');
      if (split === -1) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, split));
      const complete = length ? Buffer.byteLength(data.slice(split + 4)) >= Number(length[1]) : data.endsWith('\r\n0\r\n\r\n');
      if (complete) setTimeout(finish, 100);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      closed = true;
      finish();
    });
    void (async () => {
      for (const piece of pieces) {
        if (socket.destroyed) return;
        socket.write(piece);
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      }
    })();
  });
}

const NEUTRAL = { type: 'error', error: { type: expect.any(String), message: expect.any(String), param: null, code: expect.any(String) }, request_id: expect.stringMatching(/^req_/) };

describe('malformed HTTP gets the neutral envelope and Connection: close', () => {
  it.each([
    ['a garbage request line', 'HELLO THERE\r\n\r\n', 400],
    ['an invalid header line', 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400],
    ['headers over the limit', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('%s', async (_name, request, status) => {
    const reply = await raw([request]);
    expect(reply.status).toBe(status);
    expect(reply.headers.connection).toBe('close');
    expect(JSON.parse(reply.body)).toEqual(NEUTRAL);
    expect(reply.closed).toBe(true);
  });

  it('the answer to a malformed HEAD request carries headers only', async () => {
    const reply = await raw(['HEAD /health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n']);
    expect(reply.status).toBe(400);
    expect(Number(reply.headers['content-length'])).toBeGreaterThan(0);
    expect(reply.body).toBe('');
  });

});

describe('an Expect other than 100-continue: 417 with a body that says why, in the envelope of the dialect the path names', () => {
  const why = expect.stringMatching(/Expect: 42-continue cannot be met/);
  const ANTHROPIC = { type: 'error', error: { type: 'invalid_request_error', message: why }, request_id: expect.stringMatching(/^req_/) };
  const OPENAI = { error: { message: why, type: 'invalid_request_error', param: null, code: 'expectation_failed' } };
  const NEUTRAL_417 = { type: 'error', error: { type: 'invalid_request_error', message: why, param: null, code: 'expectation_failed' }, request_id: expect.stringMatching(/^req_/) };
  it.each([
    ['/v1/messages', ANTHROPIC],
    ['/v1/messages/count_tokens?beta=true', ANTHROPIC],
    ['/v1/chat/completions', OPENAI],
    ['/v1/embeddings', OPENAI],
    ['/v1/engines/some-model/embeddings', OPENAI],
    ['/v1/models', NEUTRAL_417],
    ['/v1/messagesx', NEUTRAL_417],
    ['/nowhere', NEUTRAL_417],
  ])('POST %s', async (path, envelope) => {
    const reply = await raw([`POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: 42-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`]);
    expect(reply.status).toBe(417);
    expect(reply.headers.connection).toBe('close');
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(reply.body) as { request_id?: string };
    expect(body).toStrictEqual(envelope);
    expect(reply.headers['request-id']).toMatch(/^req_/);
    if (body.request_id !== undefined) expect(body.request_id).toBe(reply.headers['request-id']);
  });
});

/**
 * Sends `head`, then `bodyBytes` of body as fast as the socket takes them, while reading. Resolves
 * with what came back and whether a write or read failed (a reset from the server).
 */
function sendWhileAnswered(head: string, bodyBytes: number): Promise<{ data: string; failure: string | undefined; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    let failure: string | undefined;
    socket.on('data', (chunk) => (data += chunk.toString()));
    socket.on('error', (error: NodeJS.ErrnoException) => (failure = error.code ?? error.message));
    const timer = setTimeout(() => socket.destroy(), CLOSE_WAIT_MS);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, failure, closed: true });
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    void (async () => {
      socket.write(head);
      for (let sent = 0; sent < bodyBytes && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk)) await new Promise((r) => { socket.once('drain', r); socket.once('close', r); });
      }
      // The client is done sending; it waits for the server to close.
    })();
  });
}

describe('a client still sending its body when the server answers and closes gets the answer, not a reset', () => {
  /** More than loopback socket buffers hold, so the client is still writing when the answer comes. */
  const BODY_BYTES = 32 * 1024 * 1024;

  it('malformed HTTP: the neutral 400, then a clean close once the client stops sending', async () => {
    const reply = await sendWhileAnswered(`POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nBad Header\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`, BODY_BYTES);
    expect(reply.failure).toBeUndefined();
    expect(reply.data).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply.data).toMatch(/\r\nConnection: close\r\n/i);
    expect(reply.closed).toBe(true);
  });

  it('an answer given before the body is read (missing Host): the 400, then a clean close', async () => {
    const reply = await sendWhileAnswered(`POST /v1/embeddings HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: ${BODY_BYTES}\r\n\r\n`, BODY_BYTES);
    expect(reply.failure).toBeUndefined();
    expect(reply.data).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply.data).toMatch(/\r\nconnection: close\r\n/i);
    expect(reply.closed).toBe(true);
  });
});

describe('framework errors get the dialect envelope', () => {
  it('bad percent-encoding in the path', async () => {
    const reply = await raw(['POST /v1/engines/%E0%A4%A/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}']);
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toEqual({ error: { message: expect.stringMatching(/percent-encoding/), type: 'invalid_request_error', param: null, code: 'invalid_request' } });
    expect(reply.headers['request-id']).toMatch(/^req_/);
  });

  it('an over-long path parameter', async () => {
    const reply = await raw([`POST /v1/engines/${'m'.repeat(200)}/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`]);
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/longer than/) });
  });

  it('a missing Host on HTTP/1.1: 400 in the envelope, and the connection closes', async () => {
    const reply = await raw(['GET /v1/models HTTP/1.1\r\nanthropic-version: 2023-06-01\r\n\r\n']);
    expect(reply.status).toBe(400);
    expect(reply.headers.connection).toBe('close');
    expect(JSON.parse(reply.body)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/Host/) } });
  });
});

describe('Connection: close is honoured', () => {
  const body = JSON.stringify({ model: 'fake-chat', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'one two three' }] });
  const request = (connection: string) =>
    `POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\nContent-Type: application/json\r\nanthropic-version: 2023-06-01\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  it('on a streamed reply: announced, and the socket closes after it', async () => {
    const reply = await raw([request('close')]);
    expect(reply.status).toBe(200);
    expect(reply.headers.connection).toBe('close');
    expect(reply.body).toContain('event: message_stop');
    expect(reply.closed).toBe(true);
  });

  it('a keep-alive stream stays open for the next request', async () => {
    const reply = await raw([request('keep-alive')]);
    expect(reply.headers.connection).toBe('keep-alive');
    expect(reply.closed).toBe(false);
  });
});

describe('slow clients and too many connections', () => {
  it('a client that sends headers too slowly is answered 408 and disconnected', async () => {
    const started = Date.now();
    const reply = await raw(['GET /health HTTP/1.1\r\n', 'Host: x\r\n', 'X-A: 1\r\n', 'X-B: 2\r\n', 'X-C: 3\r\n', 'X-D: 4\r\n', 'X-E: 5\r\n'], 200);
    expect(reply.status).toBe(408);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { type: 'timeout_error' } });
    expect(reply.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(CLOSE_WAIT_MS);
  });

  it('a client that dribbles its body is answered 408 in the envelope and disconnected', async () => {
    const head = 'POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n';
    const reply = await raw([head, '{', '"', 'i', 'n', 'p', 'u', 't', '"', ':', ' ', '"'], 150);
    expect(reply.status).toBe(408);
    expect(reply.headers.connection).toBe('close');
    expect(JSON.parse(reply.body)).toEqual(NEUTRAL);
    expect(reply.closed).toBe(true);
  });

  it('one connection past the cap is answered 503 at once, not queued', async () => {
    const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => {});
    })));
    try {
      const reply = await raw(['GET /health HTTP/1.1\r\nHost: x\r\n\r\n']);
      expect(reply.status).toBe(503);
      expect(reply.headers['retry-after']).toBe('1');
      expect(JSON.parse(reply.body)).toMatchObject({ error: { type: 'overloaded_error', code: 'too_many_connections' } });
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

/**
 * A raw HTTP/1.1 client over net.Socket for the fuzzer: it writes exactly the bytes it is given
 * (malformed request lines, duplicated headers, wrong Content-Length...) and parses whatever comes
 * back, response by response, noticing when the server closes the connection. node:http's client
 * would refuse to send most of what the fuzzer sends, and hides connection reuse.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names lowercased, in order, duplicates kept. */
  headers: Array<[string, string]>;
  body: Buffer;
  /** 1xx responses that came before this one (e.g. 100 Continue). */
  interim: number[];
  /** The body was cut short by the connection closing (no Content-Length or chunked end reached). */
  truncated: boolean;
}

export const header = (res: Pick<RawResponse, 'headers'>, name: string): string | undefined =>
  res.headers.find(([n]) => n === name)?.[1];

/** The response announced that the server will close: `Connection: close` (any token list containing it). */
export const announcesClose = (res: Pick<RawResponse, 'headers'>): boolean =>
  res.headers.some(([n, v]) => n === 'connection' && v.split(',').some((t) => t.trim().toLowerCase() === 'close'));

export type ReadOutcome =
  | { kind: 'response'; response: RawResponse }
  /** The server closed the connection; `partial` holds bytes of a response it had begun, if any. */
  | { kind: 'closed'; partial: Buffer }
  | { kind: 'timeout'; partial: Buffer };

/** Incremental parser of a stream of HTTP/1.x responses. */
class ResponseParser {
  private buffer: Buffer = Buffer.alloc(0);
  /** Methods of requests awaiting answers, in order: a HEAD response has no body. */
  readonly pendingHead: boolean[] = [];
  private interim: number[] = [];

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
  }

  get buffered(): Buffer {
    return this.buffer;
  }

  /** Takes one complete response off the buffer, or returns undefined if more bytes are needed. */
  take(closed: boolean): RawResponse | undefined {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
      const m = /^HTTP\/\d\.\d (\d{3})/.exec(head[0] ?? '');
      if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(head[0]?.slice(0, 80))}`);
      const status = Number(m[1]);
      const headers = head.slice(1).map((line): [string, string] => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
      });
      const rest = this.buffer.subarray(end + 4);
      if (status >= 100 && status < 200 && status !== 101) {
        this.interim.push(status);
        this.buffer = rest;
        continue;
      }
      const noBody = this.pendingHead[0] === true || status === 204 || status === 304;
      const te = headers.find(([n]) => n === 'transfer-encoding')?.[1];
      const cl = headers.find(([n]) => n === 'content-length')?.[1];
      let body: Buffer;
      let consumed: number;
      let truncated = false;
      if (noBody) {
        body = Buffer.alloc(0);
        consumed = 0;
      } else if (te && /chunked/i.test(te)) {
        const chunked = parseChunked(rest);
        if (!chunked) {
          if (!closed) return undefined;
          body = rest;
          consumed = rest.length;
          truncated = true;
        } else {
          ({ body, consumed } = chunked);
        }
      } else if (cl !== undefined) {
        const length = Number(cl);
        if (rest.length < length) {
          if (!closed) return undefined;
          body = rest;
          consumed = rest.length;
          truncated = true;
        } else {
          body = rest.subarray(0, length);
          consumed = length;
        }
      } else {
        // Delimited by the connection closing.
        if (!closed) return undefined;
        body = rest;
        consumed = rest.length;
      }
      this.buffer = rest.subarray(consumed);
      this.pendingHead.shift();
      const response = { status, headers, body: Buffer.from(body), interim: this.interim, truncated };
      this.interim = [];
      return response;
    }
  }
}

/** Decodes a chunked body; undefined until the last chunk and its trailers have arrived. */
function parseChunked(data: Buffer): { body: Buffer; consumed: number } | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0]!, 16);
    if (!Number.isFinite(size)) throw new Error('bad chunk size from server');
    at = lineEnd + 2;
    if (size === 0) {
      // Trailers end with an empty line.
      const trailersEnd = data.indexOf('\r\n', at);
      if (trailersEnd < 0) return undefined;
      if (trailersEnd === at) return { body: Buffer.concat(parts), consumed: at + 2 };
      const end = data.indexOf('\r\n\r\n', at);
      if (end < 0) return undefined;
      return { body: Buffer.concat(parts), consumed: end + 4 };
    }
    if (data.length < at + size + 2) return undefined;
    parts.push(data.subarray(at, at + size));
    at += size + 2;
  }
}

/**
 * One client connection. Write requests, then read their responses in order with `read`. Tracks
 * whether and when the server closed the socket.
 */
export class RawConnection {
  private readonly parser = new ResponseParser();
  private waiter: (() => void) | undefined;
  closed = false;
  closedAt = 0;
  /** Bytes received in total (to see whether a stream has begun). */
  received = 0;
  error: Error | undefined;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received += chunk.length;
      this.parser.push(chunk);
      this.wake();
    });
    socket.on('error', (error) => {
      this.error = error;
    });
    socket.on('close', () => {
      this.closed = true;
      this.closedAt = performance.now();
      this.wake();
    });
  }

  static open(port: number, host = '127.0.0.1', timeoutMs = 5_000): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect to ${host}:${port} timed out`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new RawConnection(socket));
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  /** Writes bytes; `head` says the request is a HEAD (its response carries no body). */
  write(bytes: Buffer | string, requests: Array<{ head: boolean }> = [{ head: false }]): Promise<void> {
    for (const r of requests) this.parser.pendingHead.push(r.head);
    if (this.closed || this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.write(bytes, () => resolve());
    });
  }

  /** Waits for the next response, the server closing, or the timeout. */
  async read(timeoutMs: number): Promise<ReadOutcome> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const response = this.parser.take(this.closed);
      if (response) return { kind: 'response', response };
      if (this.closed) return { kind: 'closed', partial: this.parser.buffered };
      if (performance.now() >= deadline) return { kind: 'timeout', partial: this.parser.buffered };
      await this.nextEvent(deadline - performance.now());
    }
  }

  /** Resolves true once the server has closed the connection, false after `timeoutMs`. */
  async waitClosed(timeoutMs: number): Promise<boolean> {
    await this.waitFor(() => this.closed, timeoutMs);
    return this.closed;
  }

  /** Waits until at least `bytes` more bytes arrive (or close/timeout): the start of a stream. */
  async waitBytes(bytes: number, timeoutMs: number): Promise<boolean> {
    const target = this.received + bytes;
    await this.waitFor(() => this.received >= target || this.closed, timeoutMs);
    return this.received >= target;
  }

  /** Waits, woken by each arrival or close, until `done()` holds or `timeoutMs` passes. */
  private async waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!done() && performance.now() < deadline) await this.nextEvent(deadline - performance.now());
  }

  /** The next arrival or close, or `timeoutMs`. */
  private nextEvent(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.waiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Bytes received and not part of any response read so far. */
  get leftover(): number {
    return this.parser.buffered.length;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Serialises a request: exact header list (duplicates and odd names allowed), optional body framing. */
export function serializeRequest(options: {
  method: string;
  target: string;
  version?: string;
  headers: Array<[string, string]>;
  body?: Buffer;
  /** 'length': add a correct Content-Length; 'chunked': send the body chunked; 'none': as is. */
  framing?: 'length' | 'chunked' | 'none';
}): Buffer {
  const { method, target, version = 'HTTP/1.1', headers, body, framing = 'length' } = options;
  const lines = [`${method} ${target} ${version}`, ...headers.map(([n, v]) => `${n}: ${v}`)];
  let payload = body ?? Buffer.alloc(0);
  if (body !== undefined && framing === 'length') lines.push(`Content-Length: ${body.length}`);
  if (body !== undefined && framing === 'chunked') {
    lines.push('Transfer-Encoding: chunked');
    const pieces: Buffer[] = [];
    const step = Math.max(1, Math.ceil(body.length / 3));
    for (let at = 0; at < body.length; at += step) {
      const piece = body.subarray(at, at + step);
      pieces.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    pieces.push(Buffer.from('0\r\n\r\n'));
    payload = Buffer.concat(pieces);
  }
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), payload]);
}

/**
 * The fuzzer's catalogue of malformed HTTP (the `raw` endpoint): broken request lines, methods,
 * versions and header syntax, oversized heads, bad framing (Content-Length, chunked encoding,
 * bodies longer or shorter than announced), pipelining, HTTP/1.0, odd targets. Each template builds
 * the exact bytes and says whether the route can be known (neutral envelope) or may be reached.
 */
import { API_KEY, CHAT_MODEL, EMBED_MODEL, type Envelope, type ExpectedResponse, type FuzzCase } from './fuzz-case.js';
import { latin1 } from './headers.js';
import { Random, randomString } from './random.js';

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

export function rawCase(rng: Random, id: string): FuzzCase {
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

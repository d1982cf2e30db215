/**
 * The fuzzer's request headers: a dialect's usual set, as its SDKs send it, and one mutation of a
 * header list at a time (content type, version and auth headers, duplicates, odd names and values,
 * sizes, Connection and Upgrade...), each with its label for the summary. Used by cases.ts.
 */
import { API_KEY } from './fuzz-case.js';
import { ODD_STRINGS, oddString, Random, randomString } from './random.js';

export type Headers = Array<[string, string]>;

/** UTF-8 text as the latin1 string of its bytes: what a header or request line carries on the wire. */
export const latin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
/** A header value the HTTP grammar allows: visible ASCII, spaces, obs-text bytes; no CR, LF or NUL. */
const headerSafe = (text: string) => latin1(text).replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '');

export function baseHeaders(rng: Random, dialect: 'anthropic' | 'openai', hasBody: boolean): Headers {
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
export function mutateHeaders(rng: Random, headers: Headers): [Headers, string] {
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

export const asksClose = (headers: Headers, version = 'HTTP/1.1') => {
  const connection = headers.filter(([n]) => n.toLowerCase() === 'connection').map(([, v]) => v.toLowerCase()).join(',');
  const tokens = connection.split(',').map((t) => t.trim());
  return tokens.includes('close') || (version === 'HTTP/1.0' && !tokens.includes('keep-alive'));
};

/**
 * The soak's load (soak.ts): a seeded mix of request kinds (chat JSON and streamed with max_tokens
 * 1-8, count_tokens, embeddings of one input and of batches, requests that fail, client aborts) and
 * one request of a kind sent over a keep-alive agent, with its outcome (status, or how it ended) and
 * its time.
 */
import http from 'node:http';
import { API_KEY, CHAT_MODEL, EMBED_MODEL } from '../fuzz/cases.js';

const REQUEST_TIMEOUT_MS = 60_000;

export type Kind = 'chat' | 'chat stream' | 'count_tokens' | 'embed one' | 'embed batch' | 'error' | 'abort';
export const MIX: Array<[number, Kind]> = [[20, 'chat'], [15, 'chat stream'], [15, 'count_tokens'], [20, 'embed one'], [10, 'embed batch'], [10, 'error'], [10, 'abort']];
const WORDS = 'the a of river city people music market bright quiet storm garden paper engine report friend window history'.split(' ');

let rngState = 12345;
const rand = () => ((rngState = (Math.imul(rngState, 1103515245) + 12345) >>> 0) / 2 ** 32);
const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
const text = (words: number) => Array.from({ length: words }, () => pick(WORDS)).join(' ');
export function kindOf(): Kind {
  let x = rand() * MIX.reduce((s, [w]) => s + w, 0);
  for (const [w, k] of MIX) if ((x -= w) < 0) return k;
  return 'chat';
}

interface Spec { path: string; body?: string; headers: Record<string, string>; abortAfterFirstByte?: boolean; abortAfterMs?: number }
const anthropic = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': API_KEY };
const openai = { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` };
const chatBody = (stream: boolean, maxTokens = 1 + Math.floor(rand() * 8)) =>
  JSON.stringify({ model: CHAT_MODEL, max_tokens: maxTokens, stream, messages: [{ role: 'user', content: text(5 + Math.floor(rand() * 40)) }] });

function spec(kind: Kind): Spec {
  switch (kind) {
    case 'chat': return { path: '/v1/messages', headers: anthropic, body: chatBody(false) };
    case 'chat stream': return { path: '/v1/messages', headers: anthropic, body: chatBody(true) };
    case 'count_tokens': return { path: '/v1/messages/count_tokens', headers: anthropic, body: JSON.stringify({ model: CHAT_MODEL, system: text(20), messages: [{ role: 'user', content: text(10 + Math.floor(rand() * 200)) }] }) };
    case 'embed one': return { path: '/v1/embeddings', headers: openai, body: JSON.stringify({ model: EMBED_MODEL, input: text(5 + Math.floor(rand() * 50)), encoding_format: pick(['float', 'base64']) }) };
    case 'embed batch': return { path: '/v1/embeddings', headers: openai, body: JSON.stringify({ model: EMBED_MODEL, input: Array.from({ length: 16 + Math.floor(rand() * 48) }, () => text(10)) }) };
    case 'error': return pick<Spec>([
      { path: '/v1/messages', headers: anthropic, body: '{"model":' },
      { path: '/v1/messages', headers: anthropic, body: chatBody(false).replace(CHAT_MODEL, 'no-such-model') },
      { path: '/v1/embeddings', headers: openai, body: JSON.stringify({ model: EMBED_MODEL, input: [] }) },
      { path: '/v1/nope', headers: openai, body: '{}' },
      { path: '/v1/embeddings', headers: { ...openai, authorization: 'Bearer wrong' }, body: '{}' },
    ]);
    case 'abort': return rand() < 0.6
      ? { path: '/v1/messages', headers: anthropic, body: chatBody(true, 32), abortAfterFirstByte: true }
      : { path: '/v1/messages', headers: anthropic, body: chatBody(false, 32), abortAfterMs: 5 + Math.floor(rand() * 30) };
  }
}

export interface Outcome { kind: Kind; status: string; ms: number }

export function send(base: URL, agent: http.Agent, kind: Kind): Promise<Outcome> {
  const s = spec(kind);
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: string) => {
      if (settled) return;
      settled = true;
      resolve({ kind, status, ms: performance.now() - started });
    };
    const req = http.request(new URL(s.path, base), { method: 'POST', agent, headers: { ...s.headers, 'content-length': Buffer.byteLength(s.body ?? '') }, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      res.once('data', () => {
        if (s.abortAfterFirstByte) {
          req.destroy();
          done('aborted');
        }
      });
      res.on('data', () => {});
      res.on('end', () => done(String(res.statusCode)));
      res.on('error', () => done(s.abortAfterFirstByte ? 'aborted' : 'response error'));
    });
    req.on('timeout', () => {
      req.destroy();
      done('timeout');
    });
    req.on('error', (error) => done(s.abortAfterMs !== undefined || s.abortAfterFirstByte ? 'aborted' : `error ${(error as NodeJS.ErrnoException).code ?? error.message}`));
    if (s.abortAfterMs !== undefined) setTimeout(() => {
      req.destroy();
      done('aborted');
    }, s.abortAfterMs);
    req.end(s.body);
  });
}

/**
 * The one place the retrieval routes tell the wire shapes apart. Most paths belong to one shape; on
 * the paths several servers share, the body decides: on /rerank `texts` is TEI's (else Cohere's
 * `documents`, which Jina, vLLM and llama-server also send); on /tokenize `inputs` is TEI's,
 * `content` llama-server's, `prompt` or `messages` vLLM's (/detokenize: ./detokenize.ts). The shape
 * picks the route's handler and its errors' envelope.
 */
import type { FastifyRequest } from 'fastify';

export type WireShape = 'tei' | 'cohere' | 'vllm' | 'llama';

/** The route a request matched (a percent-encoded path matches its decoded route), else its path. */
const pathOf = (request: FastifyRequest) => request.routeOptions.url ?? request.url.split('?')[0]!;
const isObject = (body: unknown): body is Record<string, unknown> => typeof body === 'object' && body !== null && !Array.isArray(body);

/** Paths that are one shape's alone. */
const BY_PATH: Record<string, WireShape> = {
  '/embed': 'tei',
  '/decode': 'tei',
  '/info': 'tei',
  '/v1/rerank': 'cohere',
  '/v2/rerank': 'cohere',
  '/score': 'vllm',
  '/v1/score': 'vllm',
};

/** A request's shape; undefined: a /tokenize body that is none of them (or not yet parsed). */
export function shapeOf(request: FastifyRequest): WireShape | undefined {
  const path = pathOf(request);
  if (path === '/' && request.method === 'POST') return 'tei';
  const own = BY_PATH[path];
  if (own) return own;
  const body = request.body;
  const has = (key: string) => isObject(body) && key in body;
  if (path === '/rerank') return has('texts') ? 'tei' : 'cohere';
  if (path !== '/tokenize') return undefined;
  return has('inputs') ? 'tei' : has('content') ? 'llama' : has('messages') || has('prompt') ? 'vllm' : undefined;
}

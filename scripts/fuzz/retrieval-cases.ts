/**
 * The retrieval routes' fuzz bodies and envelopes: rerank in the Cohere / Jina shape (/v1/rerank,
 * /v2/rerank, /rerank) and vLLM's score (/score, /v1/score), vLLM's and llama-server's /tokenize and /detokenize, and TEI's own (/embed,
 * /rerank with texts, /tokenize with inputs, /decode, POST /). cases.ts assembles and mutates them.
 */
import { CHAT_MODEL, EMBED_MODEL, type Envelope } from './fuzz-case.js';
import type { Random } from './random.js';

const WORDS = 'hello world rivers music bright quiet storm garden paper engine report friend window'.split(' ');
const sentence = (rng: Random) => Array.from({ length: rng.int(1, 8) }, () => rng.pick(WORDS)).join(' ');
const sentences = (rng: Random, max: number) => Array.from({ length: rng.int(1, max) }, () => sentence(rng));

export interface RetrievalRequest {
  target: string;
  body: Record<string, unknown>;
  /** Fields a mutation may add or remove. */
  fields: string[];
}

const RERANK_FIELDS = ['model', 'query', 'documents', 'top_n', 'return_documents', 'max_tokens_per_doc'];
const TEI_RERANK_FIELDS = ['query', 'texts', 'raw_scores', 'return_text', 'truncate', 'truncation_direction'];

/** A Cohere v2 / Jina rerank as clients send it, or vLLM's score body. */
export function rerankRequest(rng: Random): RetrievalRequest {
  if (rng.chance(0.25)) {
    const pairwise = rng.chance(0.5);
    const right = sentences(rng, 6);
    const body = { model: EMBED_MODEL, text_1: pairwise ? right.map(() => sentence(rng)) : sentence(rng), text_2: right };
    return { target: rng.pick(['/score', '/v1/score']), body, fields: ['model', 'text_1', 'text_2', 'truncate_prompt_tokens'] };
  }
  const body: Record<string, unknown> = { model: rng.weighted([[8, EMBED_MODEL], [1, CHAT_MODEL]]), query: sentence(rng), documents: sentences(rng, 8) };
  if (rng.chance(0.3)) body.documents = (body.documents as string[]).map((text) => ({ text }));
  if (rng.chance(0.3)) body.top_n = rng.int(1, 5);
  if (rng.chance(0.3)) body.return_documents = rng.chance(0.5);
  if (rng.chance(0.2)) body.max_tokens_per_doc = rng.int(1, 16);
  return { target: rng.pick(['/v1/rerank', '/v2/rerank', '/rerank']), body, fields: RERANK_FIELDS };
}

/** vLLM's and llama-server's tokenize and detokenize bodies. */
export function tokenizeRequest(rng: Random): RetrievalRequest {
  return rng.weighted<() => RetrievalRequest>([
    [3, () => ({ target: '/tokenize', body: { model: rng.pick([CHAT_MODEL, EMBED_MODEL]), prompt: sentence(rng), ...(rng.chance(0.3) ? { return_token_strs: true } : {}) }, fields: ['model', 'prompt', 'add_special_tokens', 'return_token_strs'] })],
    [3, () => ({ target: '/tokenize', body: { model: CHAT_MODEL, messages: [{ role: 'user', content: sentence(rng) }], add_generation_prompt: true }, fields: ['model', 'messages', 'tools', 'add_generation_prompt', 'return_token_strs'] })],
    [2, () => ({ target: '/tokenize', body: { model: CHAT_MODEL, content: sentence(rng), with_pieces: rng.chance(0.5) }, fields: ['model', 'content', 'add_special', 'with_pieces'] })],
    [2, () => ({ target: '/detokenize', body: { model: rng.pick([CHAT_MODEL, EMBED_MODEL]), tokens: Array.from({ length: rng.int(1, 8) }, () => rng.int(0, 5000)) }, fields: ['model', 'tokens'] })],
  ])();
}

/** TEI's own bodies (they name no model: the server serves its only embedding model). */
export function teiRequest(rng: Random): RetrievalRequest {
  return rng.weighted<() => RetrievalRequest>([
    [4, () => ({ target: rng.pick(['/embed', '/']), body: { inputs: rng.chance(0.5) ? sentence(rng) : sentences(rng, 6), ...(rng.chance(0.2) ? { normalize: false } : {}), ...(rng.chance(0.2) ? { truncate: true } : {}) }, fields: ['inputs', 'normalize', 'truncate', 'truncation_direction', 'dimensions', 'prompt_name'] })],
    [3, () => ({ target: '/rerank', body: { query: sentence(rng), texts: sentences(rng, 8), ...(rng.chance(0.3) ? { return_text: true } : {}), ...(rng.chance(0.3) ? { raw_scores: true } : {}) }, fields: TEI_RERANK_FIELDS })],
    [2, () => ({ target: '/tokenize', body: { inputs: rng.chance(0.5) ? sentence(rng) : sentences(rng, 4) }, fields: ['inputs', 'add_special_tokens', 'prompt_name'] })],
    [1, () => ({ target: '/decode', body: { ids: Array.from({ length: rng.int(1, 8) }, () => rng.int(0, 400_000)) }, fields: ['ids', 'skip_special_tokens'] })],
  ])();
}

/**
 * The envelopes a retrieval route answers errors in (undefined: not a retrieval route). The body
 * decides on /rerank and /tokenize (it may have been mutated into either shape, or be unreadable).
 */
export function retrievalEnvelopes(method: string, path: string): Envelope[] | undefined {
  if (method === 'POST' && ['/embed', '/decode', '/'].includes(path)) return ['tei'];
  if (method === 'GET' && path === '/info') return ['tei'];
  if (method !== 'POST') return undefined;
  if (path === '/rerank' || path === '/tokenize') return ['openai', 'tei'];
  if (['/v1/rerank', '/v2/rerank', '/detokenize', '/score', '/v1/score'].includes(path)) return ['openai'];
  return undefined;
}

/**
 * What a fuzz case is: the exact bytes to send and what a correct server may answer (which error
 * envelopes, whether the client asked to close, what the client does after writing); and the names
 * the cases use (the fuzz server's models and API key, the endpoints). The generators are cases.ts
 * (per endpoint), raw-cases.ts (malformed HTTP) and known.ts (hand-written).
 */

/** The chat model the cases name: the bundled one, or FUZZ_CHAT_MODEL (the suite's llama.cpp run: the GGUF test model). */
export const CHAT_MODEL = process.env.FUZZ_CHAT_MODEL ?? 'tiny-qwen3-random';
export const EMBED_MODEL = 'glove-sif-100d';
/** The fuzz server is started with this key, so authentication errors are exercised too. */
export const API_KEY = 'sk-fuzz';

/**
 * Error envelopes: each dialect's, and the neutral one for malformed HTTP whose route cannot be
 * known: {"type":"error","error":{"type":"invalid_request_error","message","param":null,"code"}}; TEI's
 * routes' {"error", "error_type"}.
 */
export type Envelope = 'anthropic' | 'openai' | 'neutral' | 'tei';

export interface ExpectedResponse {
  head: boolean;
  /** Envelopes a 4xx answer may use. */
  envelopes: Envelope[];
  /** The status the answer must have, where only one is right (a valid request after hostile ones). */
  status?: number;
}

export interface FuzzCase {
  id: string;
  /** A generated case's endpoint, or 'known' for the hand-written ones (known.ts). */
  endpoint: Endpoint | 'known';
  /** What was done to the request, for the summary. */
  label: string;
  bytes: Buffer;
  /** Responses the server owes, in order (several when requests are pipelined). */
  responses: ExpectedResponse[];
  /** The (last) request carries Connection: close, or is HTTP/1.0 without keep-alive. */
  asksClose: boolean;
  /**
   * After writing: read the answers; abort once the stream has begun; abort before any answer;
   * or half-close (FIN) the connection, after which the server may close without answering.
   */
  action: 'read' | 'abort-stream' | 'abort-early' | 'fin';
  /** Use a connection of its own (malformed HTTP leaves a connection unusable). */
  fresh: boolean;
  /**
   * Reading a full answer should take at most this long (prompts of a megabyte are tokenized first);
   * a later answer is counted slow, and only none by the harness's hang timeout is a violation.
   */
  timeoutMs: number;
  /** A second request for the same connection, sent once the first answers are in (fresh cases only). */
  then?: { bytes: Buffer; response: ExpectedResponse };
}

/** `admin`: POST /models/load and /models/unload (and under /v1/), last, since an unload makes the next request load its model again. */
export const ENDPOINTS = ['messages', 'count_tokens', 'chat', 'responses', 'embeddings', 'engines', 'models', 'model', 'ops', 'raw', 'rerank', 'tokenize', 'tei', 'admin'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

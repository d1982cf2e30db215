/**
 * The core vocabulary: internal request and result types. The HTTP dialects convert wire JSON into
 * these and render these back; the inference core and the workers never see a wire shape.
 */
import type { CoreErrorData } from './errors.js';
import type { ModelDescription } from './model.js';

/** A call of a tool, made by the model (an answer's part, or an assistant turn of the history). */
export interface ToolCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/**
 * One turn of a conversation, as chat templates take them: user text; the assistant's text with the
 * tools it called and what it thought; a tool's result for one call. A user turn and a tool result
 * may hold images (`images`, absent on a text-only turn: text paths read `content` as before).
 */
export type ChatMessage =
  | { role: 'user'; content: string; images?: ChatImage[] }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[]; reasoning?: string }
  | { role: 'tool'; content: string; callId: string; name: string; isError?: boolean; images?: ChatImage[] };

/** The image formats a request may carry (GIF: its first frame). */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/**
 * An image in a turn, checked at the edge: its bytes (a URL source is fetched there, so the core
 * never holds a reference it would have to resolve), its format as the bytes say, its size read from
 * the header (never decoded here), and a hash of the bytes, the key a prefix cache and worker
 * affinity use for it. `offset` places it in its message: a UTF-16 index into `content`, the text
 * before it; images at one offset keep their order. The bytes are a Uint8Array, which structured
 * clone carries across the worker and process protocols as it is.
 */
export interface ChatImage {
  mediaType: ImageMediaType;
  bytes: Uint8Array;
  width: number;
  height: number;
  /** SHA-256 of `bytes`, hex. */
  hash: string;
  offset: number;
  /**
   * The client asked for a low-resolution view (OpenAI's `detail: low`): the model's processor sees
   * the image within a small pixel budget where it has one (src/models/vision.ts
   * LOW_RESOLUTION_PIXELS), fewer tokens; absent: the model's own settings.
   */
  lowResolution?: boolean;
}

/** A tool the model may call: its name, what it is for, and the JSON Schema of its input. */
export interface ToolSpec {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  /** The caller wants inputs that always validate against the schema. */
  strict?: boolean;
}

/**
 * Whether the model may, must, or must not call a tool: `auto` (its choice), `any` (one of the
 * tools), `tool` (the one named), `none`. `parallel`: more than one call in one answer.
 */
export interface ToolChoice {
  mode: 'auto' | 'any' | 'tool' | 'none';
  name?: string;
  parallel: boolean;
}

/** How hard the model should think, where its template takes a level (gpt-oss: `Reasoning: high`). */
export const THINKING_LEVELS = ['low', 'medium', 'high'] as const;
export type ThinkingLevel = (typeof THINKING_LEVELS)[number];

/**
 * The model's thinking: on (with an optional budget of thinking tokens, and an optional level) or
 * off. The level reaches templates that take one (`reasoning_effort`); a template with only a switch
 * reads `enabled`.
 */
export interface ThinkingOptions {
  enabled: boolean;
  budgetTokens?: number;
  level?: ThinkingLevel;
}

export interface SamplingOptions {
  /** 0 means greedy decoding. Undefined: the model's generation_config default. */
  temperature?: number;
  topP?: number;
  topK?: number;
  /** Seeds the sampler's random numbers: the same request on the same model samples the same tokens. */
  seed?: number;
  /** Subtracted once from the logit of every token already generated (-2..2; 0 or undefined: none). */
  presencePenalty?: number;
  /** Subtracted from a generated token's logit once per time it was generated (-2..2). */
  frequencyPenalty?: number;
  /**
   * Hugging Face's repetition penalty over the prompt's and the generated tokens: a positive logit is
   * divided by it, a negative one multiplied (1: none). Undefined: the model's generation_config.
   */
  repetitionPenalty?: number;
}

export interface ChatPrompt {
  model: string;
  system?: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  toolChoice?: ToolChoice;
  thinking?: ThinkingOptions;
  /**
   * The client's own name for this conversation (OpenAI's `prompt_cache_key`): requests that share
   * it go to the worker holding its prefix, instead of being keyed by their system prompt and tools.
   */
  cacheKey?: string;
}

export interface ChatRequest extends ChatPrompt {
  /** Most tokens to generate. */
  maxTokens: number;
  sampling: SamplingOptions;
  /** Texts that end the generation when it produces them (not shown). */
  stopStrings: string[];
  /** Log probabilities of each generated token, with this many most likely alternatives (0..20). */
  logprobs?: number;
  /**
   * The model's end-of-sequence tokens do not end the answer (a benchmark's fixed output length):
   * it runs to `maxTokens`, a stop string, a parallel-calls stop or the grammar's end. Free text may
   * not choose an end token; where a grammar governs (a schema, a forced tool call), its end still ends it.
   */
  ignoreEos?: boolean;
  /**
   * The answer's text must be a valid instance of this JSON Schema (constrained decoding). `strict`:
   * a feature the grammar cannot enforce refuses the request; otherwise that feature is relaxed.
   */
  output?: { schema: Record<string, unknown>; strict: boolean };
}

/**
 * Why a generation ended, in the core's own words; each dialect's renderer names it on the wire.
 * - eos: the model produced an end-of-sequence token.
 * - length: the output limit of the request was reached.
 * - stop_string: one of the request's stop strings was produced.
 * - tool_call: the model called a tool.
 * - context_full: the context window filled before either of the above.
 */
export const FINISH_REASONS = ['eos', 'length', 'stop_string', 'tool_call', 'context_full'] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

/** A part of an answer, in the order the model produced them. */
export type AnswerPart = { kind: 'text'; text: string } | { kind: 'thinking'; text: string } | { kind: 'tool_call'; call: ToolCall };

export interface ChatResult {
  /** Every part of the answer, in order. */
  parts: AnswerPart[];
  /** The text parts joined. */
  text: string;
  finish: FinishReason;
  /** The stop string that matched, when finish is stop_string. */
  stopString: string | null;
  inputTokens: number;
  /**
   * Of `inputTokens`, those whose KV came from the worker's prefix cache instead of a prefill (0 when
   * absent); the same figure as the `start` event's.
   */
  cachedInputTokens?: number;
  outputTokens: number;
  /** Of `outputTokens`, those of the model's thinking (its tags included). */
  reasoningTokens?: number;
  /** When the request asked for them: each generated token's log probability (the end token excepted). */
  logprobs?: TokenLogprob[];
}

/**
 * A generated token's log probability under the model's raw distribution (before temperature,
 * top-k / top-p and any grammar), and the most likely alternatives. `text` is the token decoded on
 * its own (a token inside a multi-byte character decodes to U+FFFD).
 */
export interface TokenLogprob {
  token: number;
  text: string;
  logprob: number;
  top: Array<{ token: number; text: string; logprob: number }>;
}

/**
 * Events a streaming chat call delivers before its result: the prompt accepted, then each part of the
 * answer opened, grown (text or thinking text; for a tool call, fragments of its input's JSON whose
 * concatenation is that JSON), and closed, in order; parts never overlap.
 */
export type ChatEvent =
  | { type: 'start'; inputTokens: number; cachedInputTokens?: number }
  | { type: 'part_start'; index: number; part: { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool_call'; id: string; name: string } }
  | { type: 'part_delta'; index: number; text: string; outputTokens: number }
  | { type: 'part_stop'; index: number }
  /** Sent before the token's text, when the request asked for log probabilities. */
  | { type: 'token_logprobs'; entry: TokenLogprob };

export type EmbedInput = string | number[];

/**
 * What to do with an input longer than the context: refuse it (false), or cut it; `true` cuts its
 * end, `'left'` its start, keeping the end of the text (TEI's `truncation_direction: left`). The
 * special tokens the tokenizer adds around a text are kept either way.
 */
export type Truncate = boolean | 'left';

export interface EmbedRequest {
  model: string;
  inputs: EmbedInput[];
  dimensions?: number;
  /** Cut inputs longer than the context instead of refusing them (undefined: the server's setting). */
  truncate?: Truncate;
  /** Cut every input to at most this many tokens (a rerank's max_tokens_per_doc). */
  maxTokens?: number;
  /** L2-normalise the vectors (undefined: as the model's manifest says). */
  normalize?: boolean;
}

export interface EmbedResult {
  /** One unit vector per input, in input order. */
  vectors: Float32Array[];
  promptTokens: number;
}

export interface CallOptions {
  /** Aborted when the client goes away; generation stops at the next decoding step. */
  signal?: AbortSignal;
  /** How long the model stays loaded after this request (negative: until asked; 0: unloaded right after), as Ollama's keep_alive. */
  keepAliveMs?: number;
}

export interface ChatCallOptions extends CallOptions {
  onEvent?: (event: ChatEvent) => void;
}

export interface ModelStatus {
  id: string;
  task: ModelDescription['task'];
  /** Every worker has the model loaded. */
  ready: boolean;
  /** Requests waiting for a worker. */
  queued: number;
  workers: number;
  workerRestarts: number;
  /** loaded: its workers hold it; loading; unloaded: its next request loads it. */
  state?: 'loaded' | 'loading' | 'unloaded';
  /** Bytes of its graph and weights on disk. */
  fileBytes?: number;
  /** Loaded: where it runs (`cpu`; a GGUF model on a GPU: the backend and its layers there). */
  device?: string;
  /** Loaded GGUF chat models: the bytes of KV cache its sequences take (all workers), and the sequences of one worker (`1 x 32768 + 7 x 4096` tokens). */
  kvBytes?: number;
  sequences?: string;
  /** Requests holding it now. */
  inflight?: number;
  pinned?: boolean;
  /** Unix ms: when it was loaded, when a request last released it, when it will unload if idle. */
  loadedAt?: number;
  lastUsed?: number;
  expiresAt?: number;
  /** Its last load failed: why, and when a request will try again (Unix ms); until then requests get this failure. */
  loadError?: { message: string; retryAt: number };
}

/** What the HTTP layer needs from the inference core; tests substitute a fake. */
export interface InferenceService {
  status(): { models: ModelStatus[] };
  listModels(): ModelDescription[];
  /** Looks a model up by id or alias. */
  findModel(name: string): ModelDescription | undefined;
  chat(request: ChatRequest, options?: ChatCallOptions): Promise<ChatResult>;
  countTokens(prompt: ChatPrompt, options?: CallOptions): Promise<number>;
  embed(request: EmbedRequest, options?: CallOptions): Promise<EmbedResult>;
  close(): Promise<void>;
  /** Any model's tokens for a text, or for a chat prompt as the chat endpoints render it (chat models). */
  tokenize(request: TokenizeRequest, options?: CallOptions): Promise<TokenizeResult>;
  /** Any model's text for token ids. */
  detokenize(request: DetokenizeRequest, options?: CallOptions): Promise<string>;
  /** A cross-encoder's relevance logit for each (query, document) pair. */
  rerank(request: RerankRequest, options?: CallOptions): Promise<RerankResult>;
  /** Documents scored against a query: by a cross-encoder, else by cosine over an embedding model's vectors. */
  score(request: ScoreRequest, options?: CallOptions): Promise<ScoreResult>;
  /** The model a request that names none is served by, for `use`; the caller words "none" and "several". */
  defaultModel(use: ModelUse): DefaultModel;
}

/** One request's inputs within a gathered embedding batch. */
export interface EmbedBatchItem {
  inputs: EmbedInput[];
  dimensions?: number;
  /** This request's own choice; the batch's (the server's setting) when undefined. */
  truncate?: Truncate;
  maxTokens?: number;
  normalize?: boolean;
}

/** Each request of a batch succeeds or fails on its own. */
export type EmbedItemResult = { ok: true; vectors: Float32Array[]; promptTokens: number } | { ok: false; error: CoreErrorData };

/**
 * What to tokenize: text (with the special tokens the tokenizer adds around a text, or without), or a
 * chat prompt rendered through the model's chat template exactly as a chat request's prompt is (its
 * count is the chat endpoints' prompt usage).
 */
export type TokenizeInput = { kind: 'text'; text: string; addSpecial: boolean } | { kind: 'chat'; prompt: ChatPrompt };

export interface TokenizeRequest {
  model: string;
  input: TokenizeInput;
  /** Also each token's text and where it lies in the input (text inputs). */
  pieces?: boolean;
}

/** One token of a tokenized text: its text on its own, whether it is special, its span in the input (UTF-16 offsets; empty for added special tokens). */
export interface TokenPiece {
  id: number;
  /** The token's text, decoded on its own. */
  text: string;
  /** The token as the vocabulary spells it (`Ġhello`, `##ing`). */
  token: string;
  special: boolean;
  start: number;
  stop: number;
}

export interface TokenizeResult {
  tokens: number[];
  pieces?: TokenPiece[];
}

export interface DetokenizeRequest {
  model: string;
  tokens: number[];
  /** Leave special tokens out of the text. */
  skipSpecial?: boolean;
}

/** (query, document) pairs for a cross-encoder (a model whose task is rerank). */
export interface RerankRequest {
  model: string;
  query: string;
  documents: string[];
  /** Cut each document to at most this many tokens (the query is never cut). */
  maxTokens?: number;
  /**
   * A pair longer than the model's context: cut the document to fit (true: its end; 'left': its
   * start), or refuse it (false; undefined: the server's embedding truncation setting).
   */
  truncate?: Truncate;
}

/**
 * Documents scored against queries, whatever the model: a cross-encoder scores each pair, an
 * embedding model by the cosine of the two vectors.
 */
export interface ScoreRequest {
  model: string;
  /** One query (every document against it), or one per document (pairwise). */
  queries: string[];
  documents: string[];
  /** Cut each document to at most this many tokens (the query is never cut). */
  maxTokens?: number;
  /** As RerankRequest's and EmbedRequest's (undefined: the server's setting). */
  truncate?: Truncate;
}

/** One document's score: `raw` is the cross-encoder's logit or the cosine, `score` it mapped to [0, 1] keeping the order. */
export interface Scored {
  index: number;
  score: number;
  raw: number;
}

export interface ScoreResult {
  /** What scored: a cross-encoder (score: the logit's sigmoid) or an embedding model (score: (1 + cos) / 2). */
  by: 'cross-encoder' | 'cosine';
  /** One per document, in document order. */
  scores: Scored[];
  promptTokens: number;
}

/** What a request that names no model needs its model for: ranking (a cross-encoder or an embedding model), embeddings, or anything with a tokenizer. */
export type ModelUse = 'ranking' | 'embedding' | 'any';

/** The model for a request that names none: the one that can serve, or none, or several (the caller asks the client to choose). */
export type DefaultModel = { kind: 'one'; id: string } | { kind: 'none' } | { kind: 'several'; ids: string[] };

export interface RerankResult {
  /** Each pair's raw relevance logit, in document order. */
  logits: number[];
  /** Tokens of every pair as the model saw them (query, document and special tokens). */
  promptTokens: number;
}

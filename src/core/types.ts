/**
 * The core vocabulary: internal request and result types. The HTTP dialects convert wire JSON into
 * these and render these back; the inference core and the workers never see a wire shape.
 */
import type { ModelInfo } from '../models/registry.js';

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface SamplingOptions {
  /** 0 means greedy decoding. Undefined: the model's generation_config default. */
  temperature?: number;
  topP?: number;
  topK?: number;
}

export interface ChatPrompt {
  model: string;
  system?: string;
  messages: ChatMessage[];
}

export interface ChatRequest extends ChatPrompt {
  /** Most tokens to generate. */
  maxTokens: number;
  sampling: SamplingOptions;
  /** Texts that end the generation when it produces them (not shown). */
  stopStrings: string[];
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

export interface ChatResult {
  text: string;
  finish: FinishReason;
  /** The stop string that matched, when finish is stop_string. */
  stopString: string | null;
  inputTokens: number;
  outputTokens: number;
}

/** Events a streaming chat call delivers before its result. */
export type ChatEvent =
  | { type: 'start'; inputTokens: number }
  | { type: 'delta'; text: string; outputTokens: number };

export type EmbedInput = string | number[];

export interface EmbedRequest {
  model: string;
  inputs: EmbedInput[];
  dimensions?: number;
}

export interface EmbedResult {
  /** One unit vector per input, in input order. */
  vectors: Float32Array[];
  promptTokens: number;
}

export interface CallOptions {
  /** Aborted when the client goes away; generation stops at the next decoding step. */
  signal?: AbortSignal;
}

export interface ChatCallOptions extends CallOptions {
  onEvent?: (event: ChatEvent) => void;
}

export interface ModelStatus {
  id: string;
  task: ModelInfo['task'];
  /** Every worker has the model loaded. */
  ready: boolean;
  /** Requests waiting for a worker. */
  queued: number;
  workers: number;
  workerRestarts: number;
}

/** What the HTTP layer needs from the inference core; tests substitute a fake. */
export interface InferenceService {
  status(): { models: ModelStatus[] };
  listModels(): ModelInfo[];
  /** Looks a model up by id or alias. */
  findModel(name: string): ModelInfo | undefined;
  chat(request: ChatRequest, options?: ChatCallOptions): Promise<ChatResult>;
  countTokens(prompt: ChatPrompt, options?: CallOptions): Promise<number>;
  embed(request: EmbedRequest, options?: CallOptions): Promise<EmbedResult>;
  close(): Promise<void>;
}

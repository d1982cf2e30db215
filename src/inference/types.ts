/**
 * Internal request and result types. The HTTP dialects convert wire JSON into these and render these
 * back; the inference core and the workers never see a wire shape.
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
  maxTokens: number;
  sampling: SamplingOptions;
  stopSequences: string[];
  /** Test-only fault injection, honoured only when the server was started with faultInjection. */
  debugFault?: 'crash' | 'hang' | 'throw';
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence';

export interface ChatResult {
  text: string;
  stopReason: StopReason;
  stopSequence: string | null;
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

/**
 * What the service holds for a loaded model: one pool of workers, in this process (model-pool.ts)
 * or in a child process of its own (process-pool.ts), chosen by openPool.
 */
import type { ChatPrompt, ChatRequest, ChatResult, ChatEvent, EmbedBatchItem, EmbedItemResult, RerankRequest } from '../core/types.js';
import type { EngineSettings } from '../core/engine-settings.js';
import type { GenerationEvent, InferenceHooks } from '../core/hooks.js';
import type { Logger } from '../core/log.js';
import type { ModelInfo } from '../models/registry.js';
import type { LoadReport, ReplyOf, TaskOf, WorkerInit } from '../worker/protocol.js';

export interface ModelPoolOptions {
  /** How workers load and run the model (src/core/engine-settings.ts), passed to them whole. */
  engine: EngineSettings;
  /** Tasks that may wait for a worker; beyond it requests are refused as overloaded. */
  maxQueue: number;
  /** Deadline of one generation or embedding task (0: none); past it the request gets 504. */
  requestTimeoutMs: number;
}

/** What a pool is built with besides its options: where it logs, who watches it. */
export interface PoolContext {
  logger: Logger;
  hooks: InferenceHooks;
  /** BroadcastChannel the workers log on (src/pool/worker-logs.ts). */
  logChannel: string;
}

export interface GenerateOptions {
  signal?: AbortSignal;
  onEvent?: (event: ChatEvent) => void;
  /** Called once when the generation ends: with the worker's reply, or undefined when it failed without one. */
  onEnded?: (event: GenerationEvent | undefined) => void;
}

export interface InferencePool {
  readonly model: ModelInfo;
  readonly role: WorkerInit['role'];
  /** Every worker has the model loaded (false from a worker loss until its replacement has loaded). */
  readonly ready: boolean;
  /** Workers replaced after a crash or a hang. */
  readonly workerRestarts: number;
  /** Workers in this pool. */
  readonly size: number;
  /** Requests waiting for a worker. */
  readonly queueSize: number;
  /** Resolves when every worker has loaded the model, with what the first noted and where it runs. */
  start(): Promise<LoadReport>;
  generate(request: ChatRequest, options: GenerateOptions): Promise<ChatResult>;
  countTokens(prompt: ChatPrompt): Promise<number>;
  tokenize(task: Omit<TaskOf<'tokenize'>, 'type'>): Promise<ReplyOf<'tokenize'>>;
  detokenize(tokens: number[], skipSpecial: boolean): Promise<string>;
  rerankBatch(items: Array<Omit<RerankRequest, 'model'>>, options: { maxBatchTokens: number; truncate: boolean }): Promise<ReplyOf<'rerank'>['results']>;
  embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]>;
  close(): Promise<void>;
}

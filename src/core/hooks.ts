/**
 * The one seam through which the outside watches and (in tests) disturbs the inference core: a
 * hooks object handed to the service at construction. Metrics and test counters are observers;
 * fault injection is a function tests set. Observers run on the event-loop thread and must not throw.
 */
import type { ChatRequest, ChatResult } from './types.js';

/** Measured in the worker, for metrics. */
export interface GenerationTiming {
  /** From the task's start in the worker to the first generated token. */
  firstTokenMs: number | null;
  totalMs: number;
  /** Most generations this one shared a decoding step with (itself included). */
  peakBatch: number;
}

/** A worker's prefix cache (src/engines/onnx/decode/prefix-cache.ts), counted since the worker loaded. */
export interface PromptCacheStats {
  /** Lookups that found a prefix of at least one token. */
  hits: number;
  misses: number;
  /** Prompt tokens served from the cache, summed over hits. */
  tokensReused: number;
  /** Bytes of KV held now. */
  bytes: number;
  entries: number;
  /** Entries dropped to fit the budget. */
  evictions: number;
}

export interface GenerationEvent {
  model: string;
  result: ChatResult;
  timing: GenerationTiming;
  /** The client went away (or the deadline passed) and the generation stopped early. */
  cancelled: boolean;
  threadId: number;
  /** The worker's prefix cache after this generation, when it has one. */
  promptCache?: PromptCacheStats;
  /** The worker's V8 heap in use after it. */
  heapUsedBytes: number;
}

export interface EmbedBatchEvent {
  model: string;
  /** HTTP requests gathered into the batch. */
  requests: number;
  /** Tokens embedded, summed over the requests that succeeded. */
  tokens: number;
  threadId: number;
  /** The worker's V8 heap in use after the batch. */
  heapUsedBytes: number;
}

export type WorkerLoss = 'crashed' | 'hung';

export interface InferenceObserver {
  /** A generation was admitted (it may still wait for a worker). */
  generationStarted?(model: string): void;
  /** It ended: with the worker's reply, or undefined when it failed without one (refused, worker lost). */
  generationEnded?(model: string, event: GenerationEvent | undefined): void;
  embedBatch?(event: EmbedBatchEvent): void;
  /** A worker died or was terminated; counted once per worker. */
  workerLost?(model: string, reason: WorkerLoss): void;
}

/**
 * What a test can make a worker do in a generation: crash the worker, hang in it, throw, abort the
 * whole process as a crash in native code does (only where the model runs in a process of its own:
 * src/pool/process-pool.ts), or hold the worker thread inside this request's prefill for a while
 * (as a very long prompt would).
 */
export type Fault = 'crash' | 'hang' | 'throw' | 'abort' | { slowPrefillMs: number };

export interface InferenceHooks {
  observers?: InferenceObserver[];
  /** Tests only: a fault for the worker to commit while serving this request. */
  fault?: (request: ChatRequest) => Fault | undefined;
  /**
   * Tests only: the text the model is made to write for this request, then end of sequence. The
   * model runs as usual; the sampler's logits mask allows only the script's next token, as a
   * grammar would, so a client's whole turn is deterministic whatever the weights.
   */
  script?: (request: ChatRequest) => string | undefined;
}

/**
 * What the test hooks ask of one generation (InferenceHooks.fault and .script), carried to the worker
 * as one field of its task and applied by one wrapper at the worker's entry (src/worker/test-hooks.ts).
 */
export interface GenerationTestHooks {
  fault?: Fault;
  script?: string;
}

/** The test hooks for this request, or undefined (always, outside tests). */
export function testHooksFor(hooks: InferenceHooks, request: ChatRequest): GenerationTestHooks | undefined {
  const fault = hooks.fault?.(request);
  const script = hooks.script?.(request);
  return fault === undefined && script === undefined ? undefined : { ...(fault !== undefined ? { fault } : {}), ...(script !== undefined ? { script } : {}) };
}

/** Calls `event` on every observer that has it. */
export function notify<K extends keyof InferenceObserver>(hooks: InferenceHooks, event: K, ...args: Parameters<NonNullable<InferenceObserver[K]>>): void {
  for (const observer of hooks.observers ?? []) (observer[event] as ((...a: typeof args) => void) | undefined)?.(...args);
}

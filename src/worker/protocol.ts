/**
 * The one protocol between the event-loop thread and a model worker; the pool and the worker both
 * import it (it imports only the core vocabulary). Tasks go through piscina's `run`; streamed chat
 * events travel on a MessagePort given with the task; log records on a BroadcastChannel named in
 * WorkerInit. Errors cross as plain CoreErrorData and are rebuilt as CoreError on the main thread.
 */
import type { MessagePort } from 'node:worker_threads';
import type { EngineSettings } from '../core/engine-settings.js';
import type { CoreErrorData } from '../core/errors.js';
import type { GenerationTestHooks, GenerationTiming, PromptCacheStats } from '../core/hooks.js';
import type { ChatEvent, ChatPrompt, ChatRequest, ChatResult, EmbedBatchItem, EmbedItemResult, RerankRequest, RerankResult, TokenizeInput, TokenizeResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';

/** piscina workerData: which model this worker serves and how it runs it. */
export interface WorkerInit {
  model: ModelInfo;
  /**
   * `model`: loads tokenizer and weights, serves every task. `tokenizer`: loads only the tokenizer
   * and serves `count`, so token counting never queues behind long generations.
   */
  role: 'model' | 'tokenizer';
  /** The engine's settings, as configured (src/core/engine-settings.ts). */
  engine: EngineSettings;
  /** BroadcastChannel the worker posts its log records on (see WorkerLogRecord). */
  logChannel: string;
  /** BroadcastChannel on which its pool, before it closes, asks it to free its model (see ReleaseMessage). */
  releaseChannel: string;
}

/**
 * On WorkerInit.releaseChannel: the pool asks every worker to free what its model holds outside the
 * V8 heap (llama.cpp's model and contexts) before the threads are torn down; each answers once it has.
 */
export type ReleaseMessage = { type: 'release' } | { type: 'released'; threadId: number };

/**
 * Int32Array over a SharedArrayBuffer, one per watched task. CANCEL: set to 1 by the main thread,
 * read by the worker at every decoding step. THREAD: the worker writes its threadId when it starts
 * the task, so the main thread can terminate exactly that worker if it hangs. STARTED: the worker
 * sets it to 1 once the task's own model work has begun (its prefill, or a test fault): a task lost
 * with its worker before that may be run again. BUSY: 1 while a forward pass the task takes part in
 * runs; a task past its deadline is stuck only if it is busy, not while it waits behind another's.
 */
export const TaskControl = { CANCEL: 0, THREAD: 1, STARTED: 2, BUSY: 3, BYTES: 16 } as const;

/** The task's own work has begun (a worker lost after this must not run it again). */
const markStarted = (control: Int32Array) => Atomics.store(control, TaskControl.STARTED, 1);

/** A forward pass the task takes part in starts (true) or ends (false); the first also marks it started. */
export function markBusy(control: Int32Array, on: boolean): void {
  markStarted(control);
  Atomics.store(control, TaskControl.BUSY, on ? 1 : 0);
}

/** What a worker says of the model it loaded. */
export interface LoadReport {
  notes: string[];
  /** Where the model runs (`cpu`, `cuda (28 layers)`...). */
  device: string;
  /** A GGUF chat model: the KV its sequences take (bytes) and their layout (`1 x 32768 + 7 x 4096`). */
  kv?: { bytes: number; layout: string };
}

/** Every task type with what it carries and what its reply carries. */
export interface TaskMap {
  load: { task: {}; reply: LoadReport };
  generate: {
    task: {
      request: ChatRequest;
      /** Task control block in shared memory (see TaskControl). */
      control: SharedArrayBuffer;
      /** Present when the caller wants ChatEvents as they happen; closed by the worker when the task ends. */
      port?: MessagePort;
      /** Tests only: a fault to commit, a text to make the model write (src/worker/test-hooks.ts). */
      test?: GenerationTestHooks;
    };
    reply: { result: ChatResult; cancelled: boolean; threadId: number; timing: GenerationTiming; promptCache?: PromptCacheStats; heapUsedBytes: number };
  };
  count: { task: { prompt: ChatPrompt }; reply: { inputTokens: number } };
  /** The tokenize routes: a text's or a chat prompt's tokens (tokenizer-only workers serve it). */
  tokenize: { task: { input: TokenizeInput; pieces: boolean }; reply: TokenizeResult };
  detokenize: { task: { tokens: number[]; skipSpecial: boolean }; reply: { text: string } };
  /**
   * A cross-encoder's (query, document) pairs of several rerank requests (one entry per request
   * gathered), in shared forward passes of at most maxBatchTokens padded tokens; each result stands alone.
   */
  rerank: {
    task: { items: Array<Omit<RerankRequest, 'model'>>; maxBatchTokens: number; truncate: boolean; control: SharedArrayBuffer };
    reply: { results: Array<{ ok: true; value: RerankResult } | { ok: false; error: CoreErrorData }>; threadId: number; heapUsedBytes: number };
  };
  embed: {
    task: {
      /** One entry per HTTP request gathered into this batch. */
      items: EmbedBatchItem[];
      maxBatchTokens: number;
      truncate: boolean;
      control: SharedArrayBuffer;
    };
    reply: { results: EmbedItemResult[]; threadId: number; heapUsedBytes: number };
  };
}

export type TaskType = keyof TaskMap;
export type TaskOf<K extends TaskType> = { type: K } & TaskMap[K]['task'];
export type ReplyOf<K extends TaskType> = TaskMap[K]['reply'];
export type WorkerTask = { [K in TaskType]: TaskOf<K> }[TaskType];
/** What a worker answers to any task: its reply, or the error that ended it. */
export type WorkerOutcome<K extends TaskType = TaskType> = { ok: true; reply: ReplyOf<K> } | { ok: false; error: CoreErrorData };

/** Events a streaming generation sends on its port; `end` is always the last message of a task that returns normally. */
export type PortMessage = ChatEvent | { type: 'end' };

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** One log line from a worker; the main thread writes it to the server's logger with the model id. */
export interface WorkerLogRecord {
  level: LogLevel;
  model: string;
  threadId: number;
  msg: string;
  /** An error's name, message and stack, when the line is about one. */
  err?: { name: string; message: string; stack?: string };
}

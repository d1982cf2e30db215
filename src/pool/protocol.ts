/**
 * Messages between the event-loop thread and a model worker. Tasks go through piscina's `run`;
 * streamed chat events travel on a MessagePort given with the task. Every task carries an id; errors
 * cross as plain {code, kind, message} and are rebuilt as ServiceError on the main thread.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ServiceErrorOptions } from '../errors.js';
import type { ChatEvent, ChatPrompt, ChatRequest, ChatResult, EmbedInput } from '../inference/types.js';
import type { ModelInfo } from '../models/registry.js';

/** piscina workerData: which model this worker serves and how it runs it. */
export interface WorkerInit {
  model: ModelInfo;
  /**
   * `model`: loads tokenizer and weights, serves every task. `tokenizer`: loads only the tokenizer
   * and serves `count`, so token counting never queues behind long generations.
   */
  role: 'model' | 'tokenizer';
  /** onnxruntime intra-op threads per session (0 = onnxruntime's default, one per core). */
  intraOpThreads: number;
  /** Let idle onnxruntime threads busy-wait for the next op (faster alone, steals CPU from others). */
  allowSpinning: boolean;
  /** Rewrite a chat model's graph to compute logits for the last position only (src/models/onnx/last-logits.ts). */
  lastPositionLogits: boolean;
  /** Honour ChatRequest.debugFault (tests only). */
  faultInjection: boolean;
}

export type WorkerTask =
  | { type: 'load'; taskId: number }
  | {
      type: 'generate';
      taskId: number;
      request: ChatRequest;
      /** Task control block in shared memory (see TaskControl). */
      control: SharedArrayBuffer;
      /** Present when the caller wants ChatEvents as they happen; closed by the worker when the task ends. */
      port?: MessagePort;
    }
  | { type: 'count'; taskId: number; prompt: ChatPrompt }
  | {
      type: 'embed';
      taskId: number;
      /** One entry per HTTP request gathered into this batch. */
      items: EmbedBatchItem[];
      maxBatchTokens: number;
      truncate: boolean;
      control: SharedArrayBuffer;
    };

/**
 * Int32Array over a SharedArrayBuffer, one per watched task. CANCEL: set to 1 by the main thread,
 * read by the worker at every decoding step. THREAD: the worker writes its threadId when it starts
 * the task, so the main thread can terminate exactly that worker if it hangs.
 */
export const TaskControl = { CANCEL: 0, THREAD: 1, BYTES: 8 } as const;

export interface EmbedBatchItem {
  inputs: EmbedInput[];
  dimensions?: number;
}

/** Each request of a batch succeeds or fails on its own. */
export type EmbedItemResult =
  | { ok: true; vectors: Float32Array[]; promptTokens: number }
  | { ok: false; error: ServiceErrorOptions };

export type WorkerReply =
  | { type: 'loaded'; taskId: number; hiddenSize: number | null; notes: string[] }
  | { type: 'generated'; taskId: number; result: ChatResult; cancelled: boolean; threadId: number; timing: GenerationTiming }
  | { type: 'counted'; taskId: number; inputTokens: number }
  | { type: 'embedded'; taskId: number; results: EmbedItemResult[]; threadId: number }
  | { type: 'error'; taskId: number; error: ServiceErrorOptions };

/** Measured in the worker, for metrics. */
export interface GenerationTiming {
  /** From the task's start in the worker to the first generated token. */
  firstTokenMs: number | null;
  totalMs: number;
  /** Most generations this one shared a decoding step with (itself included). */
  peakBatch: number;
}

/** Streamed on the task's port; `end` is always the last message of a task that returns normally. */
export type PortMessage = ChatEvent | { type: 'end' };

/**
 * One piscina pool per model: `poolSize` long-lived worker threads, each holding its own copy of the
 * model. Admission is bounded by the queue length: a full queue answers "overloaded" at once.
 *
 * Cancellation never goes through piscina's AbortSignal (aborting a running task kills the thread and
 * the loaded model with it): a shared flag is flipped instead, and the worker stops at its next step.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { ServiceError } from '../errors.js';
import type { ChatEvent, ChatPrompt, ChatRequest, ChatResult } from '../inference/types.js';
import type { ModelInfo } from '../models/registry.js';
import { TaskControl, type EmbedBatchItem, type EmbedItemResult, type GenerationTiming, type PortMessage, type WorkerInit, type WorkerReply, type WorkerTask } from './protocol.js';

export interface ModelPoolOptions {
  intraOpThreads: number;
  allowSpinning: boolean;
  /** Chat models compute logits for the last position only (default on). */
  lastPositionLogits?: boolean;
  /** Tasks that may wait for a worker; beyond it requests are refused as overloaded. */
  maxQueue: number;
  /** Deadline of one generation or embedding task (0: none); past it the request gets 504. */
  requestTimeoutMs: number;
  /** Let a test send `debugFault` in a request (crash, hang, throw in the worker). Never in production. */
  faultInjection?: boolean;
  /** Generations one chat worker decodes together in one batch (continuous batching). */
  generationBatchSize?: number;
}

/**
 * After a deadline the worker is asked to stop (cancel flag, checked every decoding step). A worker
 * that still has not answered this long afterwards is stuck inside one operation and is replaced.
 */
export const HANG_GRACE_MS = 2_000;

interface Watchdog {
  /** Asks the task to stop (the cancel flag). */
  cancel?: () => void;
  /** The task's control block (the worker's thread id is read from it). */
  control: Int32Array;
}

/** Observers of what happens in a pool (metrics). */
export interface PoolObserver {
  generation?(model: string, timing: GenerationTiming, result: ChatResult): void;
  workerLost?(model: string, reason: 'crashed' | 'hung'): void;
}

export interface GenerationStats {
  completed: number;
  cancelled: number;
  /** Output tokens of the most recent cancelled generation: how far it got before it stopped. */
  lastCancelledOutputTokens: number | null;
  /** Generations running in a worker now. */
  active: number;
  /** Most generations decoded together in one step so far. */
  peakBatch: number;
}

/** A task as callers write it: the pool assigns the id. */
type TaskBody = WorkerTask extends infer T ? (T extends WorkerTask ? Omit<T, 'taskId'> : never) : never;

/** The worker entry beside this module: .ts under tsx/vitest, .js once compiled. */
function workerScript(): { filename: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  const ext = path.extname(here);
  const filename = path.join(path.dirname(here), '..', 'worker', `entry${ext}`);
  if (ext !== '.ts') return { filename, execArgv: [] };
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { filename, execArgv: ['--import', tsx] };
}

export class ModelPool {
  private readonly piscina: Piscina;
  private readonly threads: number;
  /** Tasks one worker runs at once: a chat worker batches its generations; other work is one at a time. */
  private readonly perWorker: number;
  private nextTaskId = 1;
  readonly generationStats: GenerationStats = { completed: 0, cancelled: 0, lastCancelledOutputTokens: null, active: 0, peakBatch: 0 };
  /** Generate and embed tasks completed, by worker thread id. */
  readonly tasksByThread = new Map<number, number>();
  /** Workers replaced after a crash or a hang. */
  workerRestarts = 0;
  /** Every worker has the model loaded (false from a worker loss until its replacement has loaded). */
  ready = false;
  private reloading: Promise<void> | undefined;
  observer: PoolObserver = {};

  constructor(
    readonly model: ModelInfo,
    private readonly options: ModelPoolOptions,
    readonly role: WorkerInit['role'] = 'model',
  ) {
    const { filename, execArgv } = workerScript();
    const workerData: WorkerInit = {
      model,
      role,
      intraOpThreads: options.intraOpThreads,
      allowSpinning: options.allowSpinning,
      lastPositionLogits: options.lastPositionLogits ?? true,
      faultInjection: options.faultInjection ?? false,
    };
    // One tokenizer thread per model is plenty: counting is cheap next to a forward pass.
    this.threads = role === 'tokenizer' ? 1 : model.poolSize;
    this.perWorker = role === 'model' && model.task === 'chat' ? Math.max(1, options.generationBatchSize ?? 1) : 1;
    this.piscina = new Piscina({
      filename: pathToFileURL(filename).href,
      workerData,
      execArgv,
      minThreads: this.threads,
      maxThreads: this.threads,
      // Idle workers must not exit: that would unload the model.
      idleTimeout: Number.MAX_SAFE_INTEGER,
      concurrentTasksPerWorker: this.perWorker,
      // Idle workers wait with Atomics.waitAsync, not Atomics.wait ('sync', the default), which blocks
      // the worker's event loop: V8's GC tasks and onnxruntime-node's releases would then wait for
      // the next request and run at its start (measured: TTFT 37-71 ms sync, 38-46 ms async on the
      // Qwen2.5-0.5B shape at 32 prompt tokens).
      atomics: 'async',
      // Admission is ours (see admit): internal tasks such as reloads must never be refused.
    });
  }

  /** Resolves when every worker has loaded the model, with what the first worker noted about the load. */
  async start(): Promise<string[]> {
    const replies = await Promise.all(Array.from({ length: this.threads }, () => this.run({ type: 'load' })));
    this.ready = true;
    const [first] = replies;
    return first?.type === 'loaded' ? first.notes : [];
  }

  async generate(request: ChatRequest, options: { signal?: AbortSignal; onEvent?: (event: ChatEvent) => void }): Promise<ChatResult> {
    const control = new SharedArrayBuffer(TaskControl.BYTES);
    const flag = new Int32Array(control);
    const stop = () => Atomics.store(flag, TaskControl.CANCEL, 1);
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    this.generationStats.active++;
    const watchdog = { cancel: stop, control: flag };
    try {
      if (!options.onEvent) {
        const reply = await this.run({ type: 'generate', request, control }, undefined, watchdog);
        return (reply as Extract<WorkerReply, { type: 'generated' }>).result;
      }
      const onEvent = options.onEvent;
      const { port1, port2 } = new MessageChannel();
      // Port messages and piscina's reply travel on different channels: wait for the worker's
      // explicit end marker so no event is delivered after the result.
      let ended!: () => void;
      const drained = new Promise<void>((resolve) => (ended = resolve));
      port1.on('message', (message: PortMessage) => (message.type === 'end' ? ended() : onEvent(message)));
      try {
        const reply = await this.run({ type: 'generate', request, control, port: port2 }, [port2], watchdog);
        await drained;
        return (reply as Extract<WorkerReply, { type: 'generated' }>).result;
      } finally {
        port1.close();
      }
    } finally {
      this.generationStats.active--;
      options.signal?.removeEventListener('abort', stop);
    }
  }

  async countTokens(prompt: ChatPrompt): Promise<number> {
    const reply = await this.run({ type: 'count', prompt });
    return (reply as Extract<WorkerReply, { type: 'counted' }>).inputTokens;
  }

  /** Embeds several requests in one worker task; each result stands alone. */
  async embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]> {
    const control = new SharedArrayBuffer(TaskControl.BYTES);
    const reply = (await this.run({ type: 'embed', items, ...options, control }, undefined, { control: new Int32Array(control) })) as Extract<
      WorkerReply,
      { type: 'embedded' }
    >;
    return reply.results;
  }

  /** Workers in this pool. */
  get size(): number {
    return this.threads;
  }

  async close(): Promise<void> {
    await this.piscina.close({ force: true });
  }

  /**
   * Runs one task. With a watchdog and a deadline: at the deadline the task is asked to stop
   * (`cancel`) and the request fails with 504; a worker that does not answer HANG_GRACE_MS later is
   * terminated (found by the thread id it wrote into the task's control block) and replaced. A
   * worker that dies fails only its own tasks; piscina starts a replacement, which loads the model
   * again. No AbortSignal goes to piscina: it would make the task exclusive to its worker, and a
   * chat worker batches many generations.
   */
  /** Requests in this pool now, running or waiting. */
  private admitted = 0;

  get queueSize(): number {
    return Math.max(0, this.admitted - this.threads * this.perWorker);
  }

  /**
   * Bounded admission: at most threads x tasks-per-worker running and `maxQueue` waiting; beyond that a request is
   * refused at once as overloaded (fail fast rather than grow the queue).
   */
  private admit(): () => void {
    if (this.admitted >= this.threads * this.perWorker + this.options.maxQueue) {
      throw new ServiceError({ code: 'overloaded', kind: 'overloaded', message: `The model \`${this.model.id}\` is busy; retry shortly.` });
    }
    this.admitted++;
    let released = false;
    return () => {
      if (!released) this.admitted--;
      released = true;
    };
  }

  private async run(body: TaskBody, transferList?: MessagePort[], watchdog?: Watchdog): Promise<WorkerReply> {
    const release = body.type === 'load' ? () => {} : this.admit();
    try {
      return await this.runAdmitted(body, transferList, watchdog);
    } finally {
      release();
    }
  }

  private async runAdmitted(body: TaskBody, transferList?: MessagePort[], watchdog?: Watchdog): Promise<WorkerReply> {
    const task = { ...body, taskId: this.nextTaskId++ } as WorkerTask;
    let killed = false;
    let timedOut = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const deadline = watchdog && this.options.requestTimeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          watchdog.cancel?.();
          graceTimer = setTimeout(() => {
            const stuck = Atomics.load(watchdog.control, TaskControl.THREAD);
            const worker = this.piscina.threads.find((w) => w.threadId === stuck);
            if (worker) {
              killed = true;
              void worker.terminate();
            }
          }, HANG_GRACE_MS);
        }, this.options.requestTimeoutMs)
      : undefined;
    let reply: WorkerReply;
    try {
      reply = (await this.piscina.run(task, { transferList: transferList as never })) as WorkerReply;
    } catch (error) {
      if (killed) {
        this.workerLost('hung');
        throw this.timeoutError(true);
      }
      console.error(`[pool ${this.model.id}] worker failure`, error);
      this.workerLost('crashed');
      throw new ServiceError({ code: 'worker_failed', kind: 'internal', message: 'The model worker failed while handling the request; it is being restarted.' });
    } finally {
      clearTimeout(deadline);
      clearTimeout(graceTimer);
    }
    if (reply.type === 'error') throw new ServiceError(reply.error);
    if ('threadId' in reply) this.tasksByThread.set(reply.threadId, (this.tasksByThread.get(reply.threadId) ?? 0) + 1);
    if (reply.type === 'generated') {
      this.generationStats.completed++;
      this.generationStats.peakBatch = Math.max(this.generationStats.peakBatch, reply.timing.peakBatch);
      if (reply.cancelled) {
        this.generationStats.cancelled++;
        this.generationStats.lastCancelledOutputTokens = reply.result.outputTokens;
      }
      if (!timedOut) this.observer.generation?.(this.model.id, reply.timing, reply.result);
    }
    if (timedOut) throw this.timeoutError(false);
    return reply;
  }

  private timeoutError(restarted: boolean): ServiceError {
    return new ServiceError({
      code: 'request_timeout',
      kind: 'timeout',
      message: `The request did not finish within ${this.options.requestTimeoutMs} ms${restarted ? '; its worker was stuck and has been restarted' : ''}.`,
    });
  }

  /** A worker died or was killed: mark the model not ready until the replacement has loaded. */
  private workerLost(reason: 'crashed' | 'hung'): void {
    this.workerRestarts++;
    this.ready = false;
    this.observer.workerLost?.(this.model.id, reason);
    this.reloading ??= this.start()
      .then(() => {})
      .catch((error) => console.error(`[pool ${this.model.id}] reload failed`, error))
      .finally(() => (this.reloading = undefined));
  }
}

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
import { CoreError, overloaded } from '../core/errors.js';
import { notify, type GenerationEvent, type InferenceHooks, type WorkerLoss } from '../core/hooks.js';
import type { Logger } from '../core/log.js';
import type { ChatEvent, ChatPrompt, ChatRequest, ChatResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import { TaskControl, type EmbedBatchItem, type EmbedItemResult, type PortMessage, type ReplyOf, type TaskOf, type TaskType, type WorkerInit, type WorkerOutcome } from '../worker/protocol.js';

export interface ModelPoolOptions {
  intraOpThreads: number;
  allowSpinning: boolean;
  /** Chat models compute logits for the last position only (default on). */
  lastPositionLogits?: boolean;
  /** Tasks that may wait for a worker; beyond it requests are refused as overloaded. */
  maxQueue: number;
  /** Deadline of one generation or embedding task (0: none); past it the request gets 504. */
  requestTimeoutMs: number;
  /** Generations one chat worker decodes together in one batch (continuous batching). */
  generationBatchSize?: number;
}

/** What a pool is built with besides its options: where it logs, who watches it. */
export interface PoolContext {
  logger: Logger;
  hooks: InferenceHooks;
  /** BroadcastChannel the workers log on (src/pool/worker-logs.ts). */
  logChannel: string;
}

/**
 * After a deadline the worker is asked to stop (cancel flag, checked every decoding step). A worker
 * that still has not answered this long afterwards is stuck inside one operation and is replaced.
 */
export const HANG_GRACE_MS = 2_000;

interface Watchdog<K extends TaskType> {
  /** Asks the task to stop (the cancel flag). */
  cancel?: () => void;
  /** The task's control block (the worker's thread id is read from it). */
  control: Int32Array;
  /** The worker's reply, even when the deadline has passed and the caller gets a timeout. */
  onReply?: (reply: ReplyOf<K>) => void;
}

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
  /** Workers replaced after a crash or a hang. */
  workerRestarts = 0;
  /** Every worker has the model loaded (false from a worker loss until its replacement has loaded). */
  ready = false;
  private reloading: Promise<void> | undefined;

  constructor(
    readonly model: ModelInfo,
    private readonly options: ModelPoolOptions,
    private readonly context: PoolContext,
    readonly role: WorkerInit['role'] = 'model',
  ) {
    const { filename, execArgv } = workerScript();
    const workerData: WorkerInit = {
      model,
      role,
      intraOpThreads: options.intraOpThreads,
      allowSpinning: options.allowSpinning,
      lastPositionLogits: options.lastPositionLogits ?? true,
      logChannel: context.logChannel,
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
    return replies[0]?.notes ?? [];
  }

  async generate(request: ChatRequest, options: { signal?: AbortSignal; onEvent?: (event: ChatEvent) => void }): Promise<ChatResult> {
    const control = new SharedArrayBuffer(TaskControl.BYTES);
    const flag = new Int32Array(control);
    const stop = () => Atomics.store(flag, TaskControl.CANCEL, 1);
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    let finished: GenerationEvent | undefined;
    const watchdog: Watchdog<'generate'> = { cancel: stop, control: flag, onReply: (reply) => (finished = { model: this.model.id, ...reply }) };
    const fault = this.context.hooks.fault?.(request);
    notify(this.context.hooks, 'generationStarted', this.model.id);
    try {
      if (!options.onEvent) return (await this.run({ type: 'generate', request, control, fault }, undefined, watchdog)).result;
      const onEvent = options.onEvent;
      const { port1, port2 } = new MessageChannel();
      // Port messages and piscina's reply travel on different channels: wait for the worker's
      // explicit end marker so no event is delivered after the result.
      let ended!: () => void;
      const drained = new Promise<void>((resolve) => (ended = resolve));
      port1.on('message', (message: PortMessage) => (message.type === 'end' ? ended() : onEvent(message)));
      try {
        const reply = await this.run({ type: 'generate', request, control, port: port2, fault }, [port2], watchdog);
        await drained;
        return reply.result;
      } finally {
        port1.close();
      }
    } finally {
      options.signal?.removeEventListener('abort', stop);
      notify(this.context.hooks, 'generationEnded', this.model.id, finished);
    }
  }

  async countTokens(prompt: ChatPrompt): Promise<number> {
    return (await this.run({ type: 'count', prompt })).inputTokens;
  }

  /** Embeds several requests in one worker task; each result stands alone. */
  async embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]> {
    const control = new SharedArrayBuffer(TaskControl.BYTES);
    const reply = await this.run({ type: 'embed', items, ...options, control }, undefined, { control: new Int32Array(control) });
    const tokens = reply.results.reduce((sum, r) => sum + (r.ok ? r.promptTokens : 0), 0);
    notify(this.context.hooks, 'embedBatch', { model: this.model.id, requests: items.length, tokens, threadId: reply.threadId });
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
      throw overloaded(this.model.id);
    }
    this.admitted++;
    let released = false;
    return () => {
      if (!released) this.admitted--;
      released = true;
    };
  }

  private async run<K extends TaskType>(task: TaskOf<K>, transferList?: MessagePort[], watchdog?: Watchdog<K>): Promise<ReplyOf<K>> {
    const release = task.type === 'load' ? () => {} : this.admit();
    try {
      return await this.runAdmitted(task, transferList, watchdog);
    } finally {
      release();
    }
  }

  private async runAdmitted<K extends TaskType>(task: TaskOf<K>, transferList?: MessagePort[], watchdog?: Watchdog<K>): Promise<ReplyOf<K>> {
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
    let outcome: WorkerOutcome<K>;
    try {
      // The protocol's task map types the worker's answer to a task of type K (src/worker/entry.ts).
      outcome = (await this.piscina.run(task, { transferList: transferList as never })) as WorkerOutcome<K>;
    } catch (error) {
      if (killed) {
        this.workerLost('hung');
        throw this.timeoutError(true);
      }
      this.context.logger.error({ model: this.model.id, err: error }, 'worker failure');
      this.workerLost('crashed');
      throw new CoreError('worker_failed', 'The model worker failed while handling the request; it is being restarted.', { model: this.model.id });
    } finally {
      clearTimeout(deadline);
      clearTimeout(graceTimer);
    }
    if (!outcome.ok) throw CoreError.from(outcome.error);
    watchdog?.onReply?.(outcome.reply);
    if (timedOut) throw this.timeoutError(false);
    return outcome.reply;
  }

  private timeoutError(restarted: boolean): CoreError {
    const limit = this.options.requestTimeoutMs;
    return new CoreError('timeout', `The request did not finish within ${limit} ms${restarted ? '; its worker was stuck and has been restarted' : ''}.`, { limit, restarted });
  }

  /** A worker died or was killed: mark the model not ready until the replacement has loaded. */
  private workerLost(reason: WorkerLoss): void {
    this.workerRestarts++;
    this.ready = false;
    notify(this.context.hooks, 'workerLost', this.model.id, reason);
    this.reloading ??= this.start()
      .then(() => {})
      .catch((error) => this.context.logger.error({ model: this.model.id, err: error }, 'reload failed'))
      .finally(() => (this.reloading = undefined));
  }
}

/**
 * One piscina pool per model: `poolSize` long-lived worker threads, each holding its own copy of the
 * model. Admission is bounded by the queue length: a full queue answers "overloaded" at once.
 *
 * (One file of ~330 lines: admission, deadlines, worker loss and re-runs all act on the same task
 * and control block, and read best together.)
 *
 * Cancellation never goes through piscina's AbortSignal (aborting a running task kills the thread and
 * the loaded model with it): a shared flag is flipped instead, and the worker stops at its next step.
 */
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { BroadcastChannel, MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { CoreError, overloaded } from '../core/errors.js';
import { notify, type WorkerLoss } from '../core/hooks.js';
import type { ChatPrompt, ChatRequest, ChatResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import { AFFINITY, affinityBalancer, affinityKey, type AffinityOptions } from './affinity.js';
import type { EmbedBatchItem, EmbedItemResult, RerankRequest } from '../core/types.js';
import { TaskControl, type LoadReport, type PortMessage, type ReleaseMessage, type ReplyOf, type TaskOf, type TaskType, type WorkerInit, type WorkerOutcome } from '../worker/protocol.js';
import { runGeneration, WorkerLost, type Attempt } from './generation.js';
import type { GenerateOptions, InferencePool, ModelPoolOptions, PoolContext } from './pool.js';
import { scriptBeside } from './script.js';

/**
 * After a deadline the worker is asked to stop (cancel flag, checked every decoding step). A worker
 * that still has not answered this long afterwards is stuck inside one operation and is replaced.
 */
export const HANG_GRACE_MS = 2_000;
/** How long closing a pool waits for its running tasks to stop at their next step (see close). */
const CLOSE_GRACE_MS = 3_000;
/** How long closing a pool then waits for its workers to free their model (see releaseModels). */
const RELEASE_WAIT_MS = 2_000;

const newControl = () => new Int32Array(new SharedArrayBuffer(TaskControl.BYTES));

interface Watchdog<K extends TaskType> {
  /** Asks the task to stop (the cancel flag). */
  cancel?: () => void;
  /** The task's control block (the worker's thread id is read from it). */
  control: Int32Array;
  /** The worker's reply, even when the deadline has passed and the caller gets a timeout. */
  onReply?: (reply: ReplyOf<K>) => void;
}

/**
 * The young generation of a worker's V8 heap. V8 grows it to its default maximum (16 MiB semi-spaces)
 * while a worker parses a tokenizer.json, and keeps it committed afterwards, even through a full GC:
 * about 30 MiB of RSS per worker that the worker's steady work (tokenizing prompts, sampling) does not
 * need. Measured (server RSS after a load, compiled server): chat model 259 -> 228 MiB, GloVe
 * embedder 233 -> 204 MiB; tokenizing and generation speed unchanged within the noise of a shared
 * 2-core machine (4 MiB saved no more).
 */
const WORKER_YOUNG_GENERATION_MB = 8;

export class ModelPool implements InferencePool {
  private readonly piscina: Piscina;
  private readonly threads: number;
  /** Tasks one worker runs at once: a chat worker batches its generations; other work is one at a time. */
  private readonly perWorker: number;
  /** Workers replaced after a crash or a hang. */
  workerRestarts = 0;
  /** Thread ids of workers already counted as lost. */
  private readonly lostThreads = new Set<number>();
  /** Every worker has the model loaded (false from a worker loss until its replacement has loaded). */
  ready = false;
  private reloading: Promise<void> | undefined;
  /** Where this pool's workers are asked to free their model before it closes (see releaseModels). */
  private readonly releaseChannel = `worker-release-${randomBytes(6).toString('hex')}`;

  constructor(
    readonly model: ModelInfo,
    private readonly options: ModelPoolOptions,
    private readonly context: PoolContext,
    readonly role: WorkerInit['role'] = 'model',
  ) {
    // A GGUF model's worker does without the ONNX engine and transformers.js (src/worker/entry.ts).
    const { filename, execArgv } = scriptBeside(import.meta.url, model.engine === 'llama' ? '../worker/llama-entry' : '../worker/onnx-entry');
    const workerData: WorkerInit = {
      model,
      role,
      engine: options.engine,
      logChannel: context.logChannel,
      releaseChannel: this.releaseChannel,
    };
    // One tokenizer thread per model is plenty: counting is cheap next to a forward pass.
    this.threads = role === 'tokenizer' ? 1 : model.poolSize;
    this.perWorker = role === 'model' && model.task === 'chat' ? options.engine.generationBatchSize : 1;
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
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      // Chat tasks go to the worker whose prefix cache most likely holds their prompt's start
      // (./affinity.ts); everything else, and a chat task whose worker is full, to the least busy.
      loadBalancer: affinityBalancer(this.perWorker),
      // Admission is ours (see admit): internal tasks such as reloads must never be refused.
    });
  }

  /** Resolves when every worker has loaded the model, with what the first worker noted about the load and where it runs. */
  async start(): Promise<LoadReport> {
    const replies = await Promise.all(Array.from({ length: this.threads }, () => this.run({ type: 'load' })));
    this.ready = true;
    const first = replies[0];
    // Each worker holds its own sequences: the model's KV is theirs together.
    const kv = first?.kv ? { kv: { ...first.kv, bytes: replies.reduce((n, r) => n + (r.kv?.bytes ?? 0), 0) } } : {};
    return { notes: first?.notes ?? [], device: first?.device ?? 'cpu', ...kv };
  }

  /**
   * Generates for one request (./generation.ts: a worker lost before this request's own work began
   * there runs it again, once, on the replacement; the batch the worker was decoding fails with it).
   */
  generate(request: ChatRequest, options: GenerateOptions): Promise<ChatResult> {
    return runGeneration(this.model.id, this.context, { request, options, attempt: (attempt) => this.generateOnce(request, attempt, options.signal) });
  }

  /** One attempt on a worker, with a control block of its own; the caller's signal flips its cancel flag. */
  private async generateOnce(request: ChatRequest, attempt: Attempt, signal: AbortSignal | undefined): Promise<ChatResult> {
    const control = newControl();
    const stop = () => Atomics.store(control, TaskControl.CANCEL, 1);
    if (signal?.aborted) stop();
    signal?.addEventListener('abort', stop, { once: true });
    const watchdog: Watchdog<'generate'> = { cancel: stop, control, onReply: (reply) => attempt.ended({ model: this.model.id, ...reply }) };
    const task: TaskOf<'generate'> = { type: 'generate', request, control: control.buffer as SharedArrayBuffer, ...(attempt.test ? { test: attempt.test } : {}) };
    // With prefix caches, the worker most likely to hold this prompt's start (./affinity.ts); the key
    // rides under piscina's queue-options symbol, which never reaches the worker.
    if (this.options.engine.promptCacheBytes > 0) Object.assign(task, { [AFFINITY]: { affinity: affinityKey(request) } satisfies AffinityOptions });
    try {
      return await this.runGenerate(task, attempt.onEvent, watchdog);
    } finally {
      signal?.removeEventListener('abort', stop);
    }
  }

  /** A generate task, its events (when asked for) on a port of its own. */
  private async runGenerate(task: TaskOf<'generate'>, onEvent: Attempt['onEvent'], watchdog: Watchdog<'generate'>): Promise<ChatResult> {
    if (!onEvent) return (await this.run(task, undefined, watchdog)).result;
    const { port1, port2 } = new MessageChannel();
    // Port messages and piscina's reply travel on different channels: wait for the worker's
    // explicit end marker so no event is delivered after the result.
    let ended!: () => void;
    const drained = new Promise<void>((resolve) => (ended = resolve));
    port1.on('message', (message: PortMessage) => (message.type === 'end' ? ended() : onEvent(message)));
    try {
      const reply = await this.run(Object.assign(task, { port: port2 }), [port2], watchdog);
      await drained;
      return reply.result;
    } finally {
      port1.close();
    }
  }

  async countTokens(prompt: ChatPrompt): Promise<number> {
    return (await this.run({ type: 'count', prompt })).inputTokens;
  }

  async tokenize(task: Omit<TaskOf<'tokenize'>, 'type'>): Promise<ReplyOf<'tokenize'>> {
    return this.run({ type: 'tokenize', ...task });
  }

  async detokenize(tokens: number[], skipSpecial: boolean): Promise<string> {
    return (await this.run({ type: 'detokenize', tokens, skipSpecial })).text;
  }

  /** Scores several rerank requests' (query, document) pairs on a cross-encoder in one worker task; each result stands alone. */
  async rerankBatch(items: Array<Omit<RerankRequest, 'model'>>, options: { maxBatchTokens: number; truncate: boolean }): Promise<ReplyOf<'rerank'>['results']> {
    const control = newControl();
    return (await this.run({ type: 'rerank', items, ...options, control: control.buffer as SharedArrayBuffer }, undefined, { control })).results;
  }

  /** Embeds several requests in one worker task; each result stands alone. */
  async embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]> {
    const control = newControl();
    const reply = await this.run({ type: 'embed', items, ...options, control: control.buffer as SharedArrayBuffer }, undefined, { control });
    const tokens = reply.results.reduce((sum, r) => sum + (r.ok ? r.promptTokens : 0), 0);
    notify(this.context.hooks, 'embedBatch', { model: this.model.id, requests: items.length, tokens, threadId: reply.threadId, heapUsedBytes: reply.heapUsedBytes });
    return reply.results;
  }

  /** Workers in this pool. */
  get size(): number {
    return this.threads;
  }

  /**
   * Asks every running task to stop, gives them CLOSE_GRACE_MS to end at their next step, then
   * closes the workers. A llama.cpp worker must not be torn down while a decode is in flight (its
   * native callback would then throw into the dead thread and end the process); an ONNX worker loses
   * nothing by the wait.
   */
  async close(): Promise<void> {
    for (const control of this.running.keys()) Atomics.store(control, TaskControl.CANCEL, 1);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_GRACE_MS)));
    const stopped = await Promise.race([Promise.allSettled(this.running.values()).then(() => true), grace]);
    clearTimeout(timer);
    // A task still running is inside a native call: its model is not freed under it.
    if (stopped) await this.releaseModels();
    await this.piscina.close({ force: true });
  }

  /**
   * Asks every worker to free what its model holds outside the V8 heap (a llama.cpp model and its
   * contexts: src/worker/entry.ts), or to finish writing its prompt cache to disk (an ONNX chat
   * model with the disk cache on), and waits until each has, or RELEASE_WAIT_MS: done on its own
   * thread now, not left to the thread's teardown (a write cut short leaves only a temp file).
   */
  private async releaseModels(): Promise<void> {
    const { promptCacheDir, promptCacheDiskBytes } = this.options.engine;
    const diskCache = this.model.task === 'chat' && promptCacheDir !== undefined && promptCacheDiskBytes > 0;
    if (this.role !== 'model' || (this.model.engine !== 'llama' && !diskCache)) return;
    const channel = new BroadcastChannel(this.releaseChannel);
    const released = new Set<number>();
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RELEASE_WAIT_MS);
      channel.onmessage = (event) => {
        const message = (event as { data: ReleaseMessage }).data;
        if (message.type === 'released' && released.add(message.threadId).size >= this.threads) resolve();
      };
      channel.postMessage({ type: 'release' } satisfies ReleaseMessage);
    });
    clearTimeout(timer);
    channel.close();
  }

  /** Tasks running now, by their control block. */
  private readonly running = new Map<Int32Array, Promise<unknown>>();

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
    const running = this.runAdmitted(task, transferList, watchdog);
    if (watchdog) this.running.set(watchdog.control, running);
    try {
      return await running;
    } finally {
      if (watchdog) this.running.delete(watchdog.control);
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
          // Still no answer a grace period after the cancel: stuck, if a forward pass it takes part
          // in is what runs (it never reached a step that reads the flag). Waiting behind another
          // request's long prefill is not stuck: look again after another grace period.
          const check = () => {
            if (Atomics.load(watchdog.control, TaskControl.BUSY) === 0) {
              graceTimer = setTimeout(check, HANG_GRACE_MS);
              return;
            }
            const stuck = Atomics.load(watchdog.control, TaskControl.THREAD);
            const worker = this.piscina.threads.find((w) => w.threadId === stuck);
            if (worker) {
              killed = true;
              void worker.terminate();
            }
          };
          graceTimer = setTimeout(check, HANG_GRACE_MS);
        }, this.options.requestTimeoutMs)
      : undefined;
    let outcome: WorkerOutcome<K>;
    try {
      // The protocol's task map types the worker's answer to a task of type K (src/worker/entry.ts).
      outcome = (await this.piscina.run(task, { transferList: transferList as never })) as WorkerOutcome<K>;
    } catch (error) {
      const thread = watchdog ? Atomics.load(watchdog.control, TaskControl.THREAD) : undefined;
      if (killed) {
        this.workerLost('hung', thread);
        throw this.timeoutError(true);
      }
      this.context.logger.error({ model: this.model.id, err: error }, 'worker failure');
      this.workerLost('crashed', thread);
      // Past its deadline already: the answer is the timeout, not a run again.
      if (timedOut) throw this.timeoutError(false);
      // Lost before the task's own work began there (it waited in the worker's queue): a generation runs again.
      const beforeStart = watchdog !== undefined && Atomics.load(watchdog.control, TaskControl.STARTED) === 0;
      throw new WorkerLost(this.model.id, 'The model worker failed while handling the request; it is being restarted.', beforeStart);
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

  /**
   * A worker died or was killed: mark the model not ready until the replacement has loaded. Every
   * task it held fails at once; the worker is counted once, by its thread id (0: the task never
   * reached a worker's handler, so another task of that worker counts it).
   */
  private workerLost(reason: WorkerLoss, thread: number | undefined): void {
    if (thread === 0 || (thread !== undefined && this.lostThreads.has(thread))) return;
    if (thread !== undefined) this.lostThreads.add(thread);
    this.workerRestarts++;
    this.ready = false;
    notify(this.context.hooks, 'workerLost', this.model.id, reason);
    this.reloading ??= this.start()
      .then(() => {})
      .catch((error) => this.context.logger.error({ model: this.model.id, err: error }, 'reload failed'))
      .finally(() => (this.reloading = undefined));
  }
}

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
import type { EmbedBatchItem, EmbedItemResult, PortMessage, WorkerInit, WorkerReply, WorkerTask } from './protocol.js';

export interface ModelPoolOptions {
  intraOpThreads: number;
  allowSpinning: boolean;
  /** Tasks that may wait for a worker; beyond it requests are refused as overloaded. */
  maxQueue: number;
}

export interface GenerationStats {
  completed: number;
  cancelled: number;
  /** Output tokens of the most recent cancelled generation: how far it got before it stopped. */
  lastCancelledOutputTokens: number | null;
  /** Generations running in a worker now. */
  active: number;
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
  private nextTaskId = 1;
  readonly generationStats: GenerationStats = { completed: 0, cancelled: 0, lastCancelledOutputTokens: null, active: 0 };
  /** Generate and embed tasks completed, by worker thread id. */
  readonly tasksByThread = new Map<number, number>();

  constructor(
    readonly model: ModelInfo,
    options: ModelPoolOptions,
    readonly role: WorkerInit['role'] = 'model',
  ) {
    const { filename, execArgv } = workerScript();
    const workerData: WorkerInit = { model, role, intraOpThreads: options.intraOpThreads, allowSpinning: options.allowSpinning };
    // One tokenizer thread per model is plenty: counting is cheap next to a forward pass.
    this.threads = role === 'tokenizer' ? 1 : model.poolSize;
    this.piscina = new Piscina({
      filename: pathToFileURL(filename).href,
      workerData,
      execArgv,
      minThreads: this.threads,
      maxThreads: this.threads,
      // Idle workers must not exit: that would unload the model.
      idleTimeout: Number.MAX_SAFE_INTEGER,
      concurrentTasksPerWorker: 1,
      maxQueue: options.maxQueue,
    });
  }

  /** Resolves when every worker has loaded the model. */
  async start(): Promise<void> {
    await Promise.all(Array.from({ length: this.threads }, () => this.run({ type: 'load' })));
  }

  get queueSize(): number {
    return this.piscina.queueSize;
  }

  async generate(request: ChatRequest, options: { signal?: AbortSignal; onEvent?: (event: ChatEvent) => void }): Promise<ChatResult> {
    const cancel = new SharedArrayBuffer(4);
    const flag = new Int32Array(cancel);
    const stop = () => Atomics.store(flag, 0, 1);
    if (options.signal?.aborted) stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    this.generationStats.active++;
    try {
      if (!options.onEvent) {
        const reply = await this.run({ type: 'generate', request, cancel });
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
        const reply = await this.run({ type: 'generate', request, cancel, port: port2 }, [port2]);
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
    const reply = (await this.run({ type: 'embed', items, ...options })) as Extract<WorkerReply, { type: 'embedded' }>;
    return reply.results;
  }

  /** Workers in this pool: how many tasks can run at once. */
  get size(): number {
    return this.threads;
  }

  async close(): Promise<void> {
    await this.piscina.close({ force: true });
  }

  private async run(body: TaskBody, transferList?: MessagePort[]): Promise<WorkerReply> {
    const task = { ...body, taskId: this.nextTaskId++ } as WorkerTask;
    let reply: WorkerReply;
    try {
      reply = (await this.piscina.run(task, transferList ? { transferList: transferList as never } : undefined)) as WorkerReply;
    } catch (error) {
      const message = (error as Error).message ?? '';
      if (/queue is at limit/i.test(message)) {
        throw new ServiceError({ code: 'overloaded', kind: 'overloaded', message: `The model \`${this.model.id}\` is busy; retry shortly.` });
      }
      console.error(`[pool ${this.model.id}] worker failure`, error);
      throw new ServiceError({ code: 'worker_failed', kind: 'internal', message: 'The model worker failed while handling the request.' });
    }
    if (reply.type === 'error') throw new ServiceError(reply.error);
    if ('threadId' in reply) this.tasksByThread.set(reply.threadId, (this.tasksByThread.get(reply.threadId) ?? 0) + 1);
    if (reply.type === 'generated') {
      this.generationStats.completed++;
      if (reply.cancelled) {
        this.generationStats.cancelled++;
        this.generationStats.lastCancelledOutputTokens = reply.result.outputTokens;
      }
    }
    return reply;
  }
}

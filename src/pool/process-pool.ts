/**
 * A model's pool in a child process of its own (process-entry.ts runs an ordinary ModelPool there),
 * as Ollama runs its llama.cpp runner: native code that fails, or a worker thread torn down with a
 * native call in flight, ends that process, never the server. Used for llama.cpp models
 * (open-pool.ts): node-llama-cpp's callbacks end the whole process when they land in a worker
 * thread that has gone.
 *
 * The parent keeps what the service reads at once (ready, restarts, queue) from the child's state
 * messages, tells the observers about generations itself (so one the child never finishes still
 * ends), and starts a new child when one exits unasked: every call it held fails, except generations
 * that had not begun (no `start` event yet), which run again once on the new child, as a ModelPool
 * does for a lost worker thread.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { CoreError } from '../core/errors.js';
import { notify } from '../core/hooks.js';
import type { ChatPrompt, ChatRequest, ChatResult, EmbedBatchItem, EmbedItemResult, RerankRequest } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { LoadReport, ReplyOf, TaskOf } from '../worker/protocol.js';
import { runGeneration, WorkerLost, type Attempt } from './generation.js';
import type { GenerateOptions, InferencePool, ModelPoolOptions, PoolContext } from './pool.js';
import type { CallOf, CallReply, FromChild, GenerateExtras, ObservedOf, Passed, PoolMethod, PoolState, ResultOf, ToChild } from './process-protocol.js';
import { scriptBeside } from './script.js';

/** How long closing waits for the child to stop its work and exit before it is killed. */
const CLOSE_WAIT_MS = 6_000;

/** A call the child holds, until its reply, its failure, or the child's exit. */
interface Pending<M extends PoolMethod> {
  resolve: (value: ResultOf<M>) => void;
  reject: (error: CoreError) => void;
  /** generate: its events and its end go to the attempt; `began` once the child sent its `start` (lost after that, it does not run again). */
  generation?: { attempt: Attempt; began: boolean };
}

/** The calls a child holds, by method, by call id: a reply finds its call with its own type. */
type Calls = { [M in PoolMethod]: Map<number, Pending<M>> };

/** One child process and the calls it holds. */
interface Child {
  process: ChildProcess;
  calls: Calls;
  state: PoolState;
  /** The child's pool already reported a worker loss that it has not recovered from. */
  lossReported: boolean;
  /** Its pool loaded the model once: a child that exits before that is not started again. */
  loaded: boolean;
  dead: boolean;
  exited: Promise<void>;
}

const noCalls = (): Calls => ({ start: new Map(), generate: new Map(), countTokens: new Map(), tokenize: new Map(), detokenize: new Map(), rerankBatch: new Map(), embedBatch: new Map() });

export class ProcessPool implements InferencePool {
  readonly role = 'model' as const;
  private child: Child;
  private nextId = 1;
  /** Restarts of children that have exited, theirs and their own exits. */
  private restartsBefore = 0;
  /** A new child loading after the last one exited. */
  private respawning: Promise<void> | undefined;
  private closed = false;

  constructor(
    readonly model: ModelInfo,
    private readonly options: ModelPoolOptions,
    private readonly context: PoolContext,
  ) {
    this.child = this.spawn();
  }

  get ready(): boolean {
    return !this.respawning && this.child.state.ready;
  }

  get workerRestarts(): number {
    return this.restartsBefore + this.child.state.workerRestarts;
  }

  get queueSize(): number {
    return this.child.state.queueSize;
  }

  get size(): number {
    return this.model.poolSize;
  }

  start(): Promise<LoadReport> {
    return this.call({ method: 'start', args: [] });
  }

  /** ./generation.ts; a generation whose process exits before it sent its `start` runs again on the new one. */
  generate(request: ChatRequest, options: GenerateOptions): Promise<ChatResult> {
    return runGeneration(this.model.id, this.context, {
      request,
      options,
      attempt: (attempt) => this.call({ method: 'generate', args: [request] }, { attempt, signal: options.signal }),
    });
  }

  countTokens(prompt: ChatPrompt): Promise<number> {
    return this.call({ method: 'countTokens', args: [prompt] });
  }

  tokenize(task: Omit<TaskOf<'tokenize'>, 'type'>): Promise<ReplyOf<'tokenize'>> {
    return this.call({ method: 'tokenize', args: [task] });
  }

  detokenize(tokens: number[], skipSpecial: boolean): Promise<string> {
    return this.call({ method: 'detokenize', args: [tokens, skipSpecial] });
  }

  rerankBatch(items: Array<Omit<RerankRequest, 'model'>>, options: { maxBatchTokens: number; truncate: boolean }): Promise<ReplyOf<'rerank'>['results']> {
    return this.call({ method: 'rerankBatch', args: [items, options] });
  }

  embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]> {
    return this.call({ method: 'embedBatch', args: [items, options] });
  }

  /** Asks the child to stop its work and exit (its pool waits for running tasks to stop), killing it if it does not. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.send({ type: 'close' });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS)));
    await Promise.race([child.exited, late]);
    clearTimeout(timer);
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGKILL');
      await child.exited;
    }
  }

  /**
   * Sends a call to the child and resolves with its reply, typed by its method (`CallOf<M>` types the
   * result; the whole union, what the channel carries). generate: with its attempt (events, end) and
   * the caller's signal.
   */
  private async call<M extends PoolMethod>(call: CallOf<M> & CallOf, generate?: { attempt: Attempt; signal: AbortSignal | undefined }): Promise<ResultOf<M>> {
    if (this.closed) throw new CoreError('model_unavailable', `The model \`${this.model.id}\` is being unloaded.`, { model: this.model.id });
    if (call.method !== 'start') await this.respawning;
    const child = this.child;
    if (child.dead) throw new CoreError('worker_failed', `The model process for \`${this.model.id}\` is not running (its reload failed; see the server log).`, { model: this.model.id });
    const id = this.nextId++;
    const signal = generate?.signal;
    const cancel = () => this.send({ type: 'cancel', id });
    const extras: GenerateExtras | undefined = generate && { stream: generate.attempt.onEvent !== undefined, ...(generate.attempt.test ? { test: generate.attempt.test } : {}) };
    try {
      return await new Promise<ResultOf<M>>((resolve, reject) => {
        child.calls[call.method].set(id, { resolve, reject, ...(generate ? { generation: { attempt: generate.attempt, began: false } } : {}) });
        this.send({ type: 'call', id, call, ...(extras ? { generate: extras } : {}) });
        if (signal?.aborted) cancel();
        signal?.addEventListener('abort', cancel, { once: true });
      });
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  }

  private send(message: ToChild): void {
    if (this.child.process.connected) this.child.process.send(message);
  }

  private spawn(): Child {
    const { filename, execArgv } = scriptBeside(import.meta.url, './process-entry');
    // One libuv thread per llama.cpp worker, unless the environment sets it: node-llama-cpp runs each
    // decode on libuv's pool, and decodes rotating over its four threads each brought llama.cpp's
    // compute threads of their own (an OpenMP team per calling thread, with the build made by
    // `npm run build:llama`), which then outnumbered the cores. Measured on 2 cores, a
    // Qwen2.5-0.5B-shaped F32 GGUF, eight sequences: a decode step 287-345 ms with four, 119-165 ms
    // with one (built here); 401-438 ms and 190-284 ms with the prebuilt binary; one sequence alike
    // (docs/benchmarks.md). The pool's other users here (state files, file reads) queue behind a step.
    const env = { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? String(Math.max(1, this.model.poolSize)) };
    const proc = fork(filename, [], { execArgv, env, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let exitedResolve!: () => void;
    const child: Child = {
      process: proc,
      calls: noCalls(),
      state: { ready: false, workerRestarts: 0, queueSize: 0 },
      lossReported: false,
      loaded: false,
      dead: false,
      exited: new Promise<void>((resolve) => (exitedResolve = resolve)),
    };
    proc.on('message', (message: FromChild) => this.received(child, message));
    proc.on('error', (error) => this.context.logger.error({ model: this.model.id, err: error }, 'model process error'));
    proc.on('exit', (code, signal) => {
      exitedResolve();
      this.exited(child, code, signal);
    });
    // Only the pool's own options: the service hands in its whole options object (hooks, logger...).
    const { engine, maxQueue, requestTimeoutMs } = this.options;
    proc.send({ type: 'init', model: this.model, options: { engine, maxQueue, requestTimeoutMs } } satisfies ToChild);
    return child;
  }

  private received(child: Child, message: FromChild): void {
    switch (message.type) {
      case 'reply':
        return replied(child, message);
      case 'failed': {
        const pending = child.calls[message.method].get(message.id);
        child.calls[message.method].delete(message.id);
        if (message.ended) pending?.generation?.attempt.ended(message.ended);
        pending?.reject(CoreError.from(message.error));
        return;
      }
      case 'event': {
        const generation = child.calls.generate.get(message.id)?.generation;
        if (!generation) return;
        if (message.event.type === 'start') generation.began = true;
        generation.attempt.onEvent?.(message.event);
        return;
      }
      case 'observed':
        // Not ready from this moment (the child's next state message says so too, a little later).
        if (message.name === 'workerLost') (child.lossReported = true), (child.state = { ...child.state, ready: false });
        return passOn(this.context, message);
      case 'log':
        this.context.logger[message.level]({ ...message.fields, process: child.process.pid }, message.msg);
        return;
      case 'state':
        child.state = { ready: message.ready, workerRestarts: message.workerRestarts, queueSize: message.queueSize };
        if (message.ready) child.lossReported = false;
        return;
    }
  }

  /**
   * The child is gone. Asked to (close), or before it ever loaded the model (the load fails with
   * the reason), nothing more; otherwise its calls fail (generations that had not begun run again),
   * the loss is counted once (unless the child's pool had counted it already), and a new child
   * loads the model.
   */
  private exited(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    child.dead = true;
    const how = signal ?? `code ${code}`;
    const failed = (method: string, pending: { generation?: { began: boolean } }): CoreError => {
      if (this.closed) return new CoreError('model_unavailable', `The model \`${this.model.id}\` was unloaded.`, { model: this.model.id });
      if (method === 'start') return new CoreError('model_unavailable', `its process exited while loading it (${how})`, { model: this.model.id });
      // A generation the child had not begun (no `start` from it yet) runs again on the new child.
      return new WorkerLost(this.model.id, 'The model process failed while handling the request; it is being restarted.', pending.generation?.began === false);
    };
    if (!this.closed) this.context.logger.error({ model: this.model.id, exit: how, calls: Object.values(child.calls).reduce((n, calls) => n + calls.size, 0) }, 'model process exited');
    if (!this.closed && child.loaded) {
      this.restartsBefore += child.state.workerRestarts + (child.lossReported ? 0 : 1);
      if (!child.lossReported) notify(this.context.hooks, 'workerLost', this.model.id, 'crashed');
      this.child = this.spawn();
      this.respawning = this.start()
        .then(() => {})
        .catch((error: unknown) => this.context.logger.error({ model: this.model.id, err: error }, 'model process reload failed'))
        .finally(() => (this.respawning = undefined));
    }
    for (const [method, calls] of Object.entries(child.calls)) {
      for (const pending of calls.values()) pending.reject(failed(method, pending));
      calls.clear();
    }
  }
}

/** A reply settles its own call, with its own method's type. */
function replied<M extends PoolMethod>(child: Child, reply: CallReply<M>): void {
  const calls: Calls[M] = child.calls[reply.method];
  const pending = calls.get(reply.id);
  calls.delete(reply.id);
  if (reply.ended) pending?.generation?.attempt.ended(reply.ended);
  if (reply.method === 'start') child.loaded = true;
  pending?.resolve(reply.value);
}

/** An observer call of the child's pool, to the parent's observers. */
function passOn<N extends Passed>(context: PoolContext, message: ObservedOf<N>): void {
  notify(context.hooks, message.name, ...message.args);
}

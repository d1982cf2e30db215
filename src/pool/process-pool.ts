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
import { notify, testHooksFor, type GenerationEvent, type GenerationTestHooks } from '../core/hooks.js';
import type { ChatEvent, ChatPrompt, ChatRequest, ChatResult, EmbedBatchItem, EmbedItemResult, RerankRequest } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { ReplyOf, TaskOf } from '../worker/protocol.js';
import type { ModelPoolOptions, PoolContext } from './model-pool.js';
import type { GenerateOptions, InferencePool } from './pool.js';
import type { FromChild, PoolMethod, PoolState, ToChild } from './process-protocol.js';
import { scriptBeside } from './script.js';

/** How long closing waits for the child to stop its work and exit before it is killed. */
const CLOSE_WAIT_MS = 6_000;
/** Times a generation lost with its process before it began is run again. */
const MAX_RERUNS = 1;

/** Failures of generations lost with their process before they began (these run again). */
const lostBeforeStart = new WeakSet<CoreError>();

interface Pending {
  method: PoolMethod;
  resolve: (value: unknown) => void;
  reject: (error: CoreError) => void;
  onEvent?: (event: ChatEvent) => void;
  /** generate: the child sent its `start` (the prompt was accepted; lost after this, it is not run again). */
  began: boolean;
  ended?: (event: GenerationEvent | undefined) => void;
}

/** What a generate call adds to a call. */
interface GenerateCall {
  stream: boolean;
  onEvent: (event: ChatEvent) => void;
  ended: (event: GenerationEvent | undefined) => void;
  test?: GenerationTestHooks;
  signal?: AbortSignal;
}

/** One child process and the calls it holds. */
interface Child {
  process: ChildProcess;
  pending: Map<number, Pending>;
  state: PoolState;
  /** The child's pool already reported a worker loss that it has not recovered from. */
  lossReported: boolean;
  /** Its pool loaded the model once: a child that exits before that is not started again. */
  loaded: boolean;
  dead: boolean;
  exited: Promise<void>;
}

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

  async start(): Promise<{ notes: string[]; device: string }> {
    return (await this.call('start', [])) as { notes: string[]; device: string };
  }

  async generate(request: ChatRequest, options: GenerateOptions): Promise<ChatResult> {
    const test = testHooksFor(this.context.hooks, request);
    notify(this.context.hooks, 'generationStarted', this.model.id);
    let finished: GenerationEvent | undefined;
    // A run again repeats the prompt's `start` event: the caller sees it once.
    let started = false;
    const onEvent = (event: ChatEvent) => (event.type === 'start' && started ? undefined : ((started = true), options.onEvent?.(event)));
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          const stream = options.onEvent !== undefined;
          return (await this.call('generate', [request], { stream, onEvent, ended: (event) => (finished = event), ...(test ? { test } : {}), ...(options.signal ? { signal: options.signal } : {}) })) as ChatResult;
        } catch (error) {
          if (!(error instanceof CoreError && lostBeforeStart.has(error)) || attempt >= MAX_RERUNS) throw error;
          this.context.logger.warn({ model: this.model.id }, 'model process lost before the generation began; running it again');
        }
      }
    } finally {
      notify(this.context.hooks, 'generationEnded', this.model.id, finished);
      options.onEnded?.(finished);
    }
  }

  async countTokens(prompt: ChatPrompt): Promise<number> {
    return (await this.call('countTokens', [prompt])) as number;
  }

  async tokenize(task: Omit<TaskOf<'tokenize'>, 'type'>): Promise<ReplyOf<'tokenize'>> {
    return (await this.call('tokenize', [task])) as ReplyOf<'tokenize'>;
  }

  async detokenize(tokens: number[], skipSpecial: boolean): Promise<string> {
    return (await this.call('detokenize', [tokens, skipSpecial])) as string;
  }

  async rerankBatch(items: Array<Omit<RerankRequest, 'model'>>, options: { maxBatchTokens: number; truncate: boolean }): Promise<ReplyOf<'rerank'>['results']> {
    return (await this.call('rerankBatch', [items, options])) as ReplyOf<'rerank'>['results'];
  }

  async embedBatch(items: EmbedBatchItem[], options: { maxBatchTokens: number; truncate: boolean }): Promise<EmbedItemResult[]> {
    return (await this.call('embedBatch', [items, options])) as EmbedItemResult[];
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

  private async call(method: PoolMethod, args: unknown[], generate?: GenerateCall): Promise<unknown> {
    if (this.closed) throw new CoreError('model_unavailable', `The model \`${this.model.id}\` is being unloaded.`, { model: this.model.id });
    if (method !== 'start') await this.respawning;
    const child = this.child;
    if (child.dead) throw new CoreError('worker_failed', `The model process for \`${this.model.id}\` is not running (its reload failed; see the server log).`, { model: this.model.id });
    const id = this.nextId++;
    const signal = generate?.signal;
    const cancel = () => this.send({ type: 'cancel', id });
    try {
      return await new Promise((resolve, reject) => {
        child.pending.set(id, { method, resolve, reject, began: false, ...(generate ? { onEvent: generate.onEvent, ended: generate.ended } : {}) });
        this.send({ type: 'call', id, method, args, ...(generate ? { stream: generate.stream, ...(generate.test ? { test: generate.test } : {}) } : {}) });
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
    const proc = fork(filename, [], { execArgv, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let exitedResolve!: () => void;
    const child: Child = {
      process: proc,
      pending: new Map(),
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
      case 'failed': {
        const pending = child.pending.get(message.id);
        child.pending.delete(message.id);
        pending?.ended?.(message.ended);
        if (pending?.method === 'start' && message.type === 'reply') child.loaded = true;
        if (message.type === 'reply') pending?.resolve(message.value);
        else pending?.reject(CoreError.from(message.error));
        return;
      }
      case 'event': {
        const pending = child.pending.get(message.id);
        if (!pending) return;
        if (message.event.type === 'start') pending.began = true;
        pending.onEvent?.(message.event);
        return;
      }
      case 'observed':
        // Not ready from this moment (the child's next state message says so too, a little later).
        if (message.name === 'workerLost') (child.lossReported = true), (child.state = { ...child.state, ready: false });
        notify(this.context.hooks, message.name, ...(message.args as [never, never]));
        return;
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
    const failed = (pending: Pending): CoreError => {
      if (this.closed) return new CoreError('model_unavailable', `The model \`${this.model.id}\` was unloaded.`, { model: this.model.id });
      if (pending.method === 'start') return new CoreError('model_unavailable', `its process exited while loading it (${how})`, { model: this.model.id });
      const error = new CoreError('worker_failed', 'The model process failed while handling the request; it is being restarted.', { model: this.model.id });
      if (pending.method === 'generate' && !pending.began) lostBeforeStart.add(error);
      return error;
    };
    if (!this.closed) this.context.logger.error({ model: this.model.id, exit: how, calls: child.pending.size }, 'model process exited');
    if (!this.closed && child.loaded) {
      this.restartsBefore += child.state.workerRestarts + (child.lossReported ? 0 : 1);
      if (!child.lossReported) notify(this.context.hooks, 'workerLost', this.model.id, 'crashed');
      this.child = this.spawn();
      this.respawning = this.start()
        .then(() => {})
        .catch((error: unknown) => this.context.logger.error({ model: this.model.id, err: error }, 'model process reload failed'))
        .finally(() => (this.respawning = undefined));
    }
    for (const pending of child.pending.values()) pending.reject(failed(pending));
    child.pending.clear();
  }
}

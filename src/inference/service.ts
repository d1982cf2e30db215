/**
 * The inference core: the models available (id or alias -> entry) and their lifecycle: a model is
 * loaded on its first request (or at start when pinned), its workers are stopped after it has been
 * idle for its keep-alive, at most maxLoadedModels are loaded at once, and the available set follows
 * the models folder while the server runs. One pool (and a tokenizer pool or an embedding
 * batcher) per loaded model. A model is never unloaded under a request that holds it. The names a
 * model answers to are kept by the catalog (catalog.ts).
 *
 * (One file of ~430 lines: loads, leases, idle timers, retirement and the room under maxLoadedModels
 * all act on the same entries and their timers, and read best together.)
 */
import { CoreError, modelNotFound, wrongModelTask } from '../core/errors.js';
import type { InferenceHooks } from '../core/hooks.js';
import { describedAs, type ModelDescription } from '../core/model.js';
import { silentLogger, type Logger } from '../core/log.js';
import type { CallOptions, ChatCallOptions, ChatPrompt, ChatRequest, ChatResult, DefaultModel, DetokenizeRequest, EmbedRequest, EmbedResult, InferenceService, ModelStatus, ModelUse, RerankRequest, RerankResult, ScoreRequest, ScoreResult, TokenizeRequest, TokenizeResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import { modelFileBytes, modelSignature } from '../models/signature.js';
import { EmbedBatcher, RerankBatcher, type EmbedBatchingOptions } from '../pool/embed-batcher.js';
import type { ModelPoolOptions, PoolContext } from '../pool/model-pool.js';
import { openPool } from '../pool/open-pool.js';
import type { InferencePool } from '../pool/pool.js';
import { listenToWorkerLogs, type WorkerLogs } from '../pool/worker-logs.js';
import { ModelCatalog } from './catalog.js';
import { defaultModelAmong, scoreDocuments } from './ranking.js';

/**
 * When models are loaded and unloaded. Without it (tests, benchmarks), every model is loaded at
 * start and kept: the former behaviour.
 */
export interface LifecycleOptions {
  /** Ids loaded at start and never unloaded for idleness; `*` pins every model. */
  pinned: string[];
  /** Idle time after which a loaded model's workers are stopped (negative: never; 0: right after its last request). */
  keepAliveMs: number;
  /** Per-model keep-alive, by id (overrides keepAliveMs). */
  modelKeepAliveMs?: Record<string, number>;
  /** Most models loaded at once (0: no limit); loading one more unloads the least recently used idle one. */
  maxLoadedModels: number;
  /** How long a request may wait for its model to load before it is answered model_unavailable. */
  loadTimeoutMs: number;
  /** Reads the models available now (models/ and other sources), for models added or removed while running. */
  rescan?: { scan: () => ModelInfo[]; intervalMs: number };
}

export interface LocalServiceOptions extends ModelPoolOptions {
  models: ModelInfo[];
  embedBatching: Omit<EmbedBatchingOptions, 'maxQueue'>;
  /**
   * Extra names for models, from configuration: alias -> model id. An alias with `*` is a pattern
   * (`claude-haiku-*`), so the model names a client has hard-wired land on a local model.
   */
  aliases?: Record<string, string>;
  /** The server's logger; worker lines reach it too, with the model id. */
  logger?: Logger;
  /** Observers (metrics, test counters) and test-only fault injection. */
  hooks?: InferenceHooks;
  lifecycle?: LifecycleOptions;
}

/** A loaded model's pools. */
interface Loaded {
  pool: InferencePool;
  /** A tokenizer-only pool (token counting and the tokenize routes): see tokenizerPool. */
  counter?: InferencePool;
  /** Embedding models: gathers concurrent requests into shared forward passes. */
  batcher?: EmbedBatcher;
  /** Rerank models (cross-encoders): the same for their (query, document) pairs. */
  ranker?: RerankBatcher;
  /** Where its workers run it (the first worker's load says). */
  device?: string;
  at: number;
}

/** One model the service knows, loaded or not. */
interface Entry {
  info: ModelInfo;
  signature: string;
  fileBytes: number;
  pinned: boolean;
  loaded?: Loaded;
  loading?: Promise<Loaded>;
  /** Requests holding the model (waiting for it to load included). */
  inflight: number;
  lastUsed: number;
  /** The keep-alive now in force: the model's own, or what the last request asked for. */
  keepAliveMs: number;
  idleTimer?: NodeJS.Timeout;
  /** Removed or replaced on disk: no new requests; unloaded once the in-flight ones end. */
  retired: boolean;
  /** The last load failed: requests are answered with it at once until `retryAt` (see LOAD_RETRY_MS). */
  failure?: { error: CoreError; retryAt: number; delayMs: number };
}

/**
 * A model that failed to load is not loaded again on every request (each attempt starts workers and
 * reads the model: seconds of CPU for an answer known in advance): its failure is remembered and
 * answered at once, with its reason, for 1 s after the first failure, then 2, 4... up to 60 s after
 * each further one. Files changed on disk make a new entry (a rescan replaces it), which starts afresh.
 */
export const LOAD_RETRY_MS = { first: 1_000, max: 60_000 };

/** What a request holds while it uses a model; `release` when done. */
interface Lease {
  loaded: Loaded;
  release: () => void;
}

export class LocalInferenceService implements InferenceService {
  /** The models available now, by id and by every name they answer to. */
  private readonly catalog: ModelCatalog<Entry>;
  /** Removed or replaced models still finishing requests. */
  private readonly retiring = new Set<Entry>();
  private readonly workerLogs: WorkerLogs;
  private readonly context: PoolContext;
  private readonly lifecycle: LifecycleOptions;
  private rescanTimer?: NodeJS.Timeout;
  private closed = false;

  private constructor(private readonly options: LocalServiceOptions) {
    const logger = options.logger ?? silentLogger;
    this.workerLogs = listenToWorkerLogs(logger);
    this.context = { logger, hooks: options.hooks ?? {}, logChannel: this.workerLogs.channel };
    this.lifecycle = options.lifecycle ?? { pinned: ['*'], keepAliveMs: -1, maxLoadedModels: 0, loadTimeoutMs: 0 };
    this.catalog = new ModelCatalog(options.models.map((info) => this.newEntry(info)), options.aliases ?? {});
  }

  /** Starts the service: pinned models (every model, without lifecycle options) are loaded before it returns. */
  static async start(options: LocalServiceOptions): Promise<LocalInferenceService> {
    const service = new LocalInferenceService(options);
    try {
      await Promise.all([...service.catalog.values()].filter((e) => e.pinned).map((e) => service.load(e)));
    } catch (error) {
      await service.close();
      throw error;
    }
    const rescan = service.lifecycle.rescan;
    if (rescan && rescan.intervalMs > 0) {
      service.rescanTimer = setInterval(() => service.refresh(rescan.scan), rescan.intervalMs);
      service.rescanTimer.unref();
    }
    return service;
  }

  status(): { models: ModelStatus[] } {
    return {
      models: [...this.catalog.values()].map((entry) => {
        const loaded = entry.loaded;
        const pool = loaded?.pool;
        return {
          id: entry.info.id,
          task: entry.info.task,
          // An unloaded model is ready too: its first request loads it.
          ready: !loaded || pool!.ready,
          state: loaded ? 'loaded' : entry.loading ? 'loading' : 'unloaded',
          queued: (pool?.queueSize ?? 0) + (loaded?.batcher?.queued ?? 0) + (loaded?.ranker?.queued ?? 0),
          workers: pool?.size ?? 0,
          workerRestarts: pool?.workerRestarts ?? 0,
          fileBytes: entry.fileBytes,
          inflight: entry.inflight,
          ...(loaded ? { loadedAt: loaded.at, lastUsed: entry.lastUsed, ...(loaded.device ? { device: loaded.device } : {}) } : {}),
          ...(loaded && entry.inflight === 0 && !entry.pinned && entry.keepAliveMs >= 0 ? { expiresAt: entry.lastUsed + entry.keepAliveMs } : {}),
          pinned: entry.pinned,
          ...(entry.failure && !loaded ? { loadError: { message: entry.failure.error.message, retryAt: entry.failure.retryAt } } : {}),
        };
      }),
    };
  }

  listModels(): ModelDescription[] {
    return [...this.catalog.values()].map((e) => describedAs(e.info));
  }

  findModel(name: string): ModelDescription | undefined {
    const entry = this.catalog.named(name);
    return entry && describedAs(entry.info);
  }

  async chat(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResult> {
    const entry = this.entryFor(request.model, 'chat');
    const { id, maxOutputTokens } = entry.info;
    if (request.maxTokens > maxOutputTokens) {
      throw new CoreError('output_limit_exceeded', `${request.maxTokens} output tokens asked for; the model \`${id}\` gives at most ${maxOutputTokens}.`, {
        model: request.model,
        limit: maxOutputTokens,
        requested: request.maxTokens,
      });
    }
    return this.using(entry, options, ({ pool }) => pool.generate(request, options));
  }

  async countTokens(prompt: ChatPrompt, options: CallOptions = {}): Promise<number> {
    return this.using(this.entryFor(prompt.model, 'chat'), options, (loaded) => this.tokenizerPool(loaded).countTokens(prompt));
  }

  /** A cross-encoder's scores: concurrent requests' pairs are gathered into shared forward passes, as embeddings are. */
  async rerank(request: RerankRequest, options: CallOptions = {}): Promise<RerankResult> {
    const { model: _model, ...pairs } = request;
    return this.using(this.entryFor(request.model, 'rerank'), options, ({ ranker }) => ranker!.submit(pairs));
  }

  score(request: ScoreRequest, options: CallOptions = {}): Promise<ScoreResult> {
    return scoreDocuments(this, request, options);
  }

  defaultModel(use: ModelUse): DefaultModel {
    return defaultModelAmong([...this.catalog.values()].map((e) => e.info), use);
  }

  async tokenize(request: TokenizeRequest, options: CallOptions = {}): Promise<TokenizeResult> {
    const entry = request.input.kind === 'chat' ? this.entryFor(request.model, 'chat') : this.anyEntry(request.model);
    return this.using(entry, options, (loaded) => this.tokenizerPool(loaded).tokenize({ input: request.input, pieces: request.pieces ?? false }));
  }

  async detokenize(request: DetokenizeRequest, options: CallOptions = {}): Promise<string> {
    return this.using(this.anyEntry(request.model), options, (loaded) => this.tokenizerPool(loaded).detokenize(request.tokens, request.skipSpecial ?? false));
  }

  /**
   * The model's tokenizer-only pool, so tokenizing never waits behind generations or embeddings;
   * started on first use (a tokenizer's objects cost tens of MiB per worker; many clients never
   * count). Until it is up, the model's own pool serves.
   */
  private tokenizerPool(loaded: Loaded): InferencePool {
    if (!loaded.counter) {
      const counter = openPool(loaded.pool.model, this.options, this.context, 'tokenizer');
      loaded.counter = counter;
      void counter.start().catch((error: unknown) => this.context.logger.error({ err: error, model: counter.model.id }, 'token counting pool failed to start'));
    }
    return loaded.counter.ready ? loaded.counter : loaded.pool;
  }

  async embed(request: EmbedRequest, options: CallOptions = {}): Promise<EmbedResult> {
    return this.using(this.entryFor(request.model, 'embedding'), options, ({ batcher }) => batcher!.embed({ inputs: request.inputs, dimensions: request.dimensions, truncate: request.truncate, maxTokens: request.maxTokens, normalize: request.normalize }));
  }

  /** Unloads a model now if no request holds it (as `keep_alive: 0` does); false when it is busy or not loaded. */
  async unload(id: string): Promise<boolean> {
    const entry = this.catalog.get(id);
    if (!entry?.loaded || entry.inflight > 0) return false;
    await this.unloadEntry(entry, 'asked');
    return true;
  }

  /**
   * Loads a model now, as its first request would (the load route, POST /models/load), and resolves
   * once it is loaded; its idle timer then runs (again) as after a request. An unknown name: model_not_found;
   * a failed load: model_unavailable with the reason.
   */
  async loadModel(name: string): Promise<ModelStatus> {
    const entry = this.anyEntry(name);
    await this.load(entry);
    // Already loaded: asked for again, it counts as used now (its idle timer starts over).
    if (entry.loaded && entry.inflight === 0) {
      entry.lastUsed = Date.now();
      this.scheduleIdle(entry);
    }
    return this.status().models.find((m) => m.id === entry.info.id)!;
  }

  /**
   * Unloads a model now (the unload route, POST /models/unload), after a load under way ends. A model
   * that requests hold is not taken from under them: `busy` says so and it stays loaded. A pinned
   * model is unloaded too; its next request loads it again. An unknown name: model_not_found.
   */
  async unloadModel(name: string): Promise<{ busy: boolean; status: ModelStatus }> {
    const entry = this.anyEntry(name);
    if (entry.loading) await entry.loading.catch(() => undefined);
    const busy = entry.inflight > 0;
    if (!busy) await this.unloadEntry(entry, 'asked');
    return { busy, status: this.status().models.find((m) => m.id === entry.info.id)! };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.rescanTimer);
    const all = [...this.catalog.values(), ...this.retiring];
    for (const entry of all) clearTimeout(entry.idleTimer);
    await Promise.all(all.map(async (entry) => {
      const loaded = entry.loaded ?? (await entry.loading?.catch(() => undefined));
      entry.loaded = undefined;
      if (loaded) await closeLoaded(loaded);
    }));
    this.catalog.clear();
    this.retiring.clear();
    this.workerLogs.close();
  }

  // ----------------------------------------------------------------------------------------------
  // Models available

  private newEntry(info: ModelInfo): Entry {
    const pinned = this.lifecycle.pinned.includes('*') || this.lifecycle.pinned.includes(info.id);
    const keepAliveMs = pinned ? -1 : (this.lifecycle.modelKeepAliveMs?.[info.id] ?? this.lifecycle.keepAliveMs);
    return { info, signature: modelSignature(info), fileBytes: modelFileBytes(info), pinned, inflight: 0, lastUsed: 0, keepAliveMs, retired: false };
  }

  /**
   * Takes in the models available now: a new one is served (loaded on its first request, or now when
   * pinned); a removed or replaced one stops taking requests and is unloaded once its in-flight ones end.
   */
  refresh(scan: () => ModelInfo[]): void {
    if (this.closed) return;
    let models: ModelInfo[];
    try {
      models = scan();
    } catch (error) {
      this.context.logger.warn({ err: error }, 'models rescan failed');
      return;
    }
    const now = new Map(models.map((m) => [m.id, m]));
    for (const entry of [...this.catalog.values()]) {
      const found = now.get(entry.info.id);
      if (found && modelSignature(found) === entry.signature) continue;
      this.catalog.delete(entry.info.id);
      this.retire(entry, found ? 'replaced' : 'removed');
    }
    for (const info of models) {
      if (this.catalog.has(info.id) || this.clashes(info)) continue;
      const entry = this.newEntry(info);
      this.catalog.add(entry);
      this.context.logger.info({ model: info.id, task: info.task }, `model ${info.id} available`);
      if (entry.pinned) void this.load(entry).catch((error: unknown) => this.context.logger.error({ err: error, model: info.id }, `model ${info.id} failed to load`));
    }
  }

  /** A new model whose id or alias another model already answers to is not taken in (the log says so). */
  private clashes(info: ModelInfo): boolean {
    const taken = [info.id, ...info.aliases].find((name) => this.catalog.named(name) !== undefined);
    if (taken !== undefined) this.context.logger.warn({ model: info.id, name: taken }, `model ${info.id} skipped: the name ${taken} is taken`);
    return taken !== undefined;
  }

  private retire(entry: Entry, why: 'removed' | 'replaced'): void {
    entry.retired = true;
    clearTimeout(entry.idleTimer);
    this.context.logger.info({ model: entry.info.id, inflight: entry.inflight }, `model ${entry.info.id} ${why}`);
    this.retiring.add(entry);
    this.scheduleIdle(entry);
  }

  private anyEntry(name: string): Entry {
    const entry = this.catalog.named(name);
    if (!entry) throw modelNotFound(name);
    return entry;
  }

  private entryFor(name: string, task: ModelInfo['task']): Entry {
    const entry = this.catalog.named(name);
    if (!entry) throw modelNotFound(name);
    if (entry.info.task !== task) throw wrongModelTask(name, entry.info.task);
    return entry;
  }

  // ----------------------------------------------------------------------------------------------
  // Loading and unloading

  /** Runs `work` with the model loaded (loading it first if need be), holding it meanwhile. */
  private async using<T>(entry: Entry, options: CallOptions, work: (loaded: Loaded) => Promise<T>): Promise<T> {
    const lease = await this.lease(entry, options);
    try {
      return await work(lease.loaded);
    } finally {
      lease.release();
    }
  }

  private async lease(entry: Entry, options: CallOptions): Promise<Lease> {
    entry.inflight++;
    clearTimeout(entry.idleTimer);
    const release = () => {
      entry.inflight--;
      entry.lastUsed = Date.now();
      if (options.keepAliveMs !== undefined && !entry.pinned) entry.keepAliveMs = options.keepAliveMs;
      this.scheduleIdle(entry);
    };
    try {
      return { loaded: entry.loaded ?? (await this.waitForLoad(entry, options.signal)), release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** The model's load, waited for at most loadTimeoutMs (0: no bound) or until the caller goes away. */
  private async waitForLoad(entry: Entry, signal: AbortSignal | undefined): Promise<Loaded> {
    const loading = this.load(entry);
    const limit = this.lifecycle.loadTimeoutMs;
    if (limit <= 0 && !signal) return loading;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await Promise.race([
        loading,
        new Promise<never>((_, reject) => {
          if (limit > 0) {
            timer = setTimeout(() => reject(new CoreError('model_unavailable', `The model \`${entry.info.id}\` is still loading after ${limit} ms; try again shortly.`, { model: entry.info.id, limit })), limit);
          }
          onAbort = () => reject(new CoreError('internal', 'the client went away while the model loaded', { reason: 'cancelled' }));
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Loads the model's pools (once, however many ask), making room under maxLoadedModels first. */
  private load(entry: Entry): Promise<Loaded> {
    if (entry.loaded) return Promise.resolve(entry.loaded);
    if (entry.loading) return entry.loading;
    const failure = entry.failure;
    if (failure && Date.now() < failure.retryAt) {
      const seconds = Math.ceil((failure.retryAt - Date.now()) / 1000);
      return Promise.reject(new CoreError('model_unavailable', `${failure.error.message} (it is tried again in ${seconds} s)`, failure.error.details));
    }
    const loading = (async () => {
      await this.makeRoom(entry);
      const { info } = entry;
      const started = Date.now();
      const pool = openPool(info, this.options, this.context);
      const loaded: Loaded = { pool, at: 0 };
      if (info.task === 'embedding') loaded.batcher = new EmbedBatcher(pool, { ...this.options.embedBatching, maxQueue: this.options.maxQueue });
      if (info.task === 'rerank') loaded.ranker = new RerankBatcher(pool, { ...this.options.embedBatching, maxQueue: this.options.maxQueue });
      try {
        const { notes, device } = await pool.start();
        loaded.device = device;
        const { id, task, dtype, poolSize: workers } = info;
        this.context.logger.info({ model: id, task, engine: info.engine, device, format: info.gguf ? (info.gguf.quant ?? 'gguf') : dtype, workers, ms: Date.now() - started, notes }, `model ${id} loaded`);
      } catch (error) {
        await closeLoaded(loaded);
        throw error;
      }
      loaded.at = Date.now();
      return loaded;
    })();
    entry.loading = loading.catch((error: unknown) => {
      // The client learns that the model cannot be loaded and why (a worker's load failure arrives as
      // model_unavailable with its reason; a pool that could not start at all, as internal): the
      // reason is about the model's files, not the request. Other typed errors pass as they are.
      if (error instanceof CoreError && error.code !== 'internal' && error.code !== 'model_unavailable') throw error;
      const reason = String((error as Error)?.message ?? error);
      throw new CoreError('model_unavailable', `The model \`${entry.info.id}\` could not be loaded: ${reason}`, { model: entry.info.id, reason });
    });
    entry.loading.then(
      (loaded) => {
        entry.loading = undefined;
        entry.failure = undefined;
        entry.loaded = loaded;
        entry.lastUsed = Date.now();
        if (this.closed) void this.unloadEntry(entry, 'closed');
        else this.scheduleIdle(entry);
      },
      (error: CoreError) => {
        entry.loading = undefined;
        const delayMs = entry.failure ? Math.min(entry.failure.delayMs * 2, LOAD_RETRY_MS.max) : LOAD_RETRY_MS.first;
        entry.failure = { error, retryAt: Date.now() + delayMs, delayMs };
        this.context.logger.error({ err: error, model: entry.info.id, retryInMs: delayMs }, `model ${entry.info.id} failed to load`);
      },
    );
    return entry.loading;
  }

  /** Under maxLoadedModels: unloads the least recently used idle, unpinned models until one more fits. */
  private async makeRoom(entry: Entry): Promise<void> {
    const max = this.lifecycle.maxLoadedModels;
    if (max <= 0) return;
    const loaded = () => [...this.catalog.values(), ...this.retiring].filter((e) => e !== entry && (e.loaded || e.loading));
    while (loaded().length >= max) {
      const idle = loaded().filter((e) => e.loaded && e.inflight === 0 && !e.pinned).sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (!idle) {
        this.context.logger.warn({ model: entry.info.id, max }, `loading ${entry.info.id} beyond maxLoadedModels: every loaded model is busy or pinned`);
        return;
      }
      await this.unloadEntry(idle, 'to make room');
    }
  }

  /** Arms the idle unload of a loaded model that no request holds (now, for a retired one). */
  private scheduleIdle(entry: Entry): void {
    clearTimeout(entry.idleTimer);
    if (this.closed || entry.inflight > 0 || (!entry.loaded && !entry.loading)) {
      if (entry.retired && entry.inflight === 0 && !entry.loaded && !entry.loading) this.retiring.delete(entry);
      return;
    }
    if (entry.retired) return void this.unloadEntry(entry, 'retired');
    if (entry.pinned || entry.keepAliveMs < 0 || !entry.loaded) return;
    entry.idleTimer = setTimeout(() => void this.unloadEntry(entry, 'idle'), entry.keepAliveMs);
    entry.idleTimer.unref();
  }

  private async unloadEntry(entry: Entry, why: string): Promise<void> {
    const loaded = entry.loaded;
    if (!loaded || entry.inflight > 0) return;
    entry.loaded = undefined;
    clearTimeout(entry.idleTimer);
    await closeLoaded(loaded);
    if (entry.retired) this.retiring.delete(entry);
    this.context.logger.info({ model: entry.info.id, why, idleMs: Date.now() - entry.lastUsed }, `model ${entry.info.id} unloaded`);
  }
}

async function closeLoaded(loaded: Loaded): Promise<void> {
  await Promise.all([loaded.pool.close(), loaded.counter?.close()]);
}

/**
 * Model residency: which models are in memory. Each model is in one state (./residence.ts) and
 * moves only through `go` below, which checks the move, stops the timers of the state it leaves and
 * keeps the account of the room in memory. Loads, unloads, idle timers, the back-off after a failed
 * load, eviction under maxLoadedModels, retirement and the rescan all live here, apart from request
 * handling (./service.ts), as Ollama's scheduler and llama-server's router keep them.
 *
 *   unloaded --first request--> loading --> loaded --idle, asked, to make room, closing--> unloaded
 *                                 |  ^
 *                    load failed  v  |  first request after the back-off
 *                                failed
 *   any state --removed or replaced on disk--> retired --no request holds it, pools closed--> gone
 *
 * A model is loaded on its first request (or at start when pinned), its pools are closed after it
 * has been idle for its keep-alive, at most maxLoadedModels are in memory at once (loading one more
 * unloads the least recently used idle one), and the available set follows the models folder while
 * the server runs. A model is never unloaded under a request that holds it (see `using`), except
 * when the service closes.
 *
 * Room in memory: a model takes it from the moment it starts loading until its pools are closed
 * (residence.ts takesRoom); `resident` is the one account of it, kept by `go`, and makeRoom reads it.
 * Memory a model takes beyond its pools (a KV budget, a disk cache) is to be counted there too.
 *
 * Contract: event-loop thread; every method returns at once or awaits pools starting or closing.
 */
import { CoreError, modelNotFound } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { CallOptions } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import { modelFileBytes, modelSignature } from '../models/signature.js';
import { ModelCatalog } from './catalog.js';
import { ModelPools, type PoolSettings } from './model-pools.js';
import { loadFailure, NEXT, poolsOf, takesRoom, type ModelEntry, type Residence } from './residence.js';

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

export interface ResidencyOptions {
  models: ModelInfo[];
  /** Extra names for models, alias -> model id (./catalog.ts). */
  aliases: Record<string, string>;
  lifecycle: LifecycleOptions;
  /** What each model's pools are opened with (./model-pools.ts). */
  pools: PoolSettings;
}

export class Residency {
  /** The models available now, by id and by every name they answer to. */
  private readonly catalog: ModelCatalog<ModelEntry>;
  /** Removed or replaced models still finishing requests. */
  private readonly retiring = new Set<ModelEntry>();
  /** The models taking room in memory now (residence.ts takesRoom): kept by `go` alone. */
  private readonly resident = new Set<ModelEntry>();
  /** Pools being closed: closing the service waits for them. */
  private readonly closing = new Set<Promise<void>>();
  private readonly lifecycle: LifecycleOptions;
  private readonly logger: Logger;
  private rescanTimer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: ResidencyOptions) {
    this.lifecycle = options.lifecycle;
    this.logger = options.pools.context.logger;
    this.catalog = new ModelCatalog(options.models.map((info) => this.newEntry(info)), options.aliases);
  }

  /** Loads the pinned models (every model, without lifecycle options), then follows the models folder. */
  async start(): Promise<void> {
    await Promise.all(this.models().filter((e) => e.pinned).map((e) => this.load(e)));
    const rescan = this.lifecycle.rescan;
    if (rescan && rescan.intervalMs > 0) {
      this.rescanTimer = setInterval(() => this.refresh(rescan.scan), rescan.intervalMs);
      this.rescanTimer.unref();
    }
  }

  /** The models available now. */
  models(): ModelEntry[] {
    return [...this.catalog.values()];
  }

  /** A model by id or by any name it answers to. */
  named(name: string): ModelEntry | undefined {
    return this.catalog.named(name);
  }

  /** A model by its id alone. */
  byId(id: string): ModelEntry | undefined {
    return this.catalog.get(id);
  }

  /** Runs `work` with the model's pools (loading them first if need be), holding the model meanwhile. */
  async using<T>(entry: ModelEntry, options: CallOptions, work: (pools: ModelPools) => Promise<T>): Promise<T> {
    entry.inflight++;
    if (entry.residence.state === 'loaded') clearTimeout(entry.residence.idleTimer);
    try {
      return await work(poolsOf(entry.residence) ?? (await this.waitForLoad(entry, options.signal)));
    } finally {
      entry.inflight--;
      entry.lastUsed = Date.now();
      if (options.keepAliveMs !== undefined && !entry.pinned) entry.keepAliveMs = options.keepAliveMs;
      this.settle(entry);
    }
  }

  /** The load route: loads the model as its first request would; one already loaded counts as used now (its idle timer starts over). */
  async loadNow(entry: ModelEntry): Promise<void> {
    await this.load(entry);
    if (entry.residence.state === 'loaded' && entry.inflight === 0) {
      entry.lastUsed = Date.now();
      this.settle(entry);
    }
  }

  /** The unload route: after a load under way ends, closes the model's pools, unless requests hold it (`busy`). */
  async unloadNow(entry: ModelEntry): Promise<{ busy: boolean }> {
    if (entry.residence.state === 'loading') await entry.residence.loading.catch(() => undefined);
    const busy = entry.inflight > 0;
    if (!busy) await this.unload(entry, 'asked');
    return { busy };
  }

  /** Closes a model's pools now if no request holds it; false when it holds none or is busy. */
  async unload(entry: ModelEntry, why: string): Promise<boolean> {
    if (!poolsOf(entry.residence) || entry.inflight > 0) return false;
    await this.closePools(entry, why);
    return true;
  }

  // ----------------------------------------------------------------------------------------------
  // Transitions

  /**
   * The one place a model changes state: the move is checked against NEXT, the idle timer of a
   * loaded model leaving that state stops, and the account of the room follows the new state.
   */
  private go(entry: ModelEntry, next: Residence): void {
    const from = entry.residence;
    if (!NEXT[from.state].includes(next.state)) throw new Error(`model ${entry.info.id}: no move from ${from.state} to ${next.state}`);
    if (from.state === 'loaded') clearTimeout(from.idleTimer);
    entry.residence = next;
    if (takesRoom(next)) this.resident.add(entry);
    else this.resident.delete(entry);
  }

  /** The model's pools: loaded once however many ask (making room under maxLoadedModels first); a recent failure is answered at once. */
  load(entry: ModelEntry): Promise<ModelPools> {
    const r = entry.residence;
    if (r.state === 'loaded') return Promise.resolve(r.pools);
    if (r.state === 'loading') return r.loading;
    if (r.state === 'retired') return r.pools ? Promise.resolve(r.pools) : (r.loading ?? Promise.reject(modelNotFound(entry.info.id)));
    if (r.state === 'failed' && Date.now() < r.failure.retryAt) {
      const seconds = Math.ceil((r.failure.retryAt - Date.now()) / 1000);
      return Promise.reject(new CoreError('model_unavailable', `${r.failure.error.message} (it is tried again in ${seconds} s)`, r.failure.error.details));
    }
    const loading = this.open(entry);
    this.go(entry, { state: 'loading', loading, ...(r.state === 'failed' ? { failure: r.failure } : {}) });
    // Attached before any caller's: the model is in its new state when they resume.
    loading.then((pools) => this.loadEnded(entry, pools), (error: CoreError) => this.loadFailed(entry, error));
    return loading;
  }

  private async open(entry: ModelEntry): Promise<ModelPools> {
    try {
      await this.makeRoom(entry);
      return await ModelPools.open(entry.info, this.options.pools);
    } catch (error) {
      // The client learns that the model cannot be loaded and why (a worker's load failure arrives as
      // model_unavailable with its reason; a pool that could not start at all, as internal): the
      // reason is about the model's files, not the request. Other typed errors pass as they are.
      if (error instanceof CoreError && error.code !== 'internal' && error.code !== 'model_unavailable') throw error;
      const reason = String((error as Error)?.message ?? error);
      throw new CoreError('model_unavailable', `The model \`${entry.info.id}\` could not be loaded: ${reason}`, { model: entry.info.id, reason });
    }
  }

  private loadEnded(entry: ModelEntry, pools: ModelPools): void {
    this.go(entry, entry.residence.state === 'retired' ? { state: 'retired', pools } : { state: 'loaded', pools });
    entry.lastUsed = Date.now();
    if (this.closed) void this.unload(entry, 'closed');
    else this.settle(entry);
  }

  private loadFailed(entry: ModelEntry, error: CoreError): void {
    const r = entry.residence;
    const failure = loadFailure(error, r.state === 'loading' ? r.failure : undefined);
    this.go(entry, r.state === 'retired' ? { state: 'retired' } : { state: 'failed', failure });
    this.logger.error({ err: error, model: entry.info.id, retryInMs: failure.delayMs }, `model ${entry.info.id} failed to load`);
    this.settle(entry);
  }

  /**
   * What follows once no request holds a model (a lease ended, a load ended, it was retired): a
   * loaded model's idle timer starts (unless it is pinned or kept for ever); a retired one's pools
   * close, and it is gone once it holds nothing.
   */
  private settle(entry: ModelEntry): void {
    const r = entry.residence;
    if (this.closed || entry.inflight > 0) return;
    if (r.state === 'retired') {
      if (r.pools) void this.unload(entry, 'retired');
      else if (!r.loading) this.retiring.delete(entry);
      return;
    }
    if (r.state !== 'loaded') return;
    clearTimeout(r.idleTimer);
    if (entry.pinned || entry.keepAliveMs < 0) return;
    r.idleTimer = setTimeout(() => void this.unload(entry, 'idle'), entry.keepAliveMs);
    r.idleTimer.unref();
  }

  /** loaded -> unloaded, or a retired model's pools closed (it is then gone): whether or not requests hold it. */
  private async closePools(entry: ModelEntry, why: string): Promise<void> {
    const r = entry.residence;
    const pools = poolsOf(r);
    if (!pools) return;
    this.go(entry, r.state === 'retired' ? { state: 'retired' } : { state: 'unloaded' });
    const closing = pools.close();
    this.closing.add(closing);
    try {
      await closing;
    } finally {
      this.closing.delete(closing);
    }
    if (r.state === 'retired') this.retiring.delete(entry);
    this.logger.info({ model: entry.info.id, why, idleMs: Date.now() - entry.lastUsed }, `model ${entry.info.id} unloaded`);
  }

  /** Under maxLoadedModels: unloads the least recently used idle, unpinned models until one more fits. */
  private async makeRoom(entry: ModelEntry): Promise<void> {
    const max = this.lifecycle.maxLoadedModels;
    if (max <= 0) return;
    const others = () => [...this.resident].filter((e) => e !== entry);
    while (others().length >= max) {
      const idle = others().filter((e) => e.residence.state === 'loaded' && e.inflight === 0 && !e.pinned).sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (!idle) {
        this.logger.warn({ model: entry.info.id, max }, `loading ${entry.info.id} beyond maxLoadedModels: every loaded model is busy or pinned`);
        return;
      }
      await this.unload(idle, 'to make room');
    }
  }

  /** The model's load, waited for at most loadTimeoutMs (0: no bound) or until the caller goes away. */
  private async waitForLoad(entry: ModelEntry, signal: AbortSignal | undefined): Promise<ModelPools> {
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

  // ----------------------------------------------------------------------------------------------
  // The models available

  private newEntry(info: ModelInfo): ModelEntry {
    const pinned = this.lifecycle.pinned.includes('*') || this.lifecycle.pinned.includes(info.id);
    const keepAliveMs = pinned ? -1 : (this.lifecycle.modelKeepAliveMs?.[info.id] ?? this.lifecycle.keepAliveMs);
    return { info, signature: modelSignature(info), fileBytes: modelFileBytes(info), pinned, residence: { state: 'unloaded' }, inflight: 0, lastUsed: 0, keepAliveMs };
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
      this.logger.warn({ err: error }, 'models rescan failed');
      return;
    }
    const now = new Map(models.map((m) => [m.id, m]));
    for (const entry of this.models()) {
      const found = now.get(entry.info.id);
      if (found && modelSignature(found) === entry.signature) continue;
      this.catalog.delete(entry.info.id);
      this.retire(entry, found ? 'replaced' : 'removed');
    }
    for (const info of models) {
      if (this.catalog.has(info.id) || this.clashes(info)) continue;
      const entry = this.newEntry(info);
      this.catalog.add(entry);
      this.logger.info({ model: info.id, task: info.task }, `model ${info.id} available`);
      if (entry.pinned) void this.load(entry).catch((error: unknown) => this.logger.error({ err: error, model: info.id }, `model ${info.id} failed to load`));
    }
  }

  /** A new model whose id or alias another model already answers to is not taken in (the log says so). */
  private clashes(info: ModelInfo): boolean {
    const taken = [info.id, ...info.aliases].find((name) => this.catalog.named(name) !== undefined);
    if (taken !== undefined) this.logger.warn({ model: info.id, name: taken }, `model ${info.id} skipped: the name ${taken} is taken`);
    return taken !== undefined;
  }

  private retire(entry: ModelEntry, why: 'removed' | 'replaced'): void {
    const r = entry.residence;
    this.go(entry, { state: 'retired', ...(r.state === 'loaded' ? { pools: r.pools } : {}), ...(r.state === 'loading' ? { loading: r.loading } : {}) });
    this.logger.info({ model: entry.info.id, inflight: entry.inflight }, `model ${entry.info.id} ${why}`);
    this.retiring.add(entry);
    this.settle(entry);
  }

  /** Closes every model's pools (a load under way ends first), whatever holds them, and stops following the models folder. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.rescanTimer);
    await Promise.all([...this.catalog.values(), ...this.retiring].map(async (entry) => {
      const r = entry.residence;
      await (r.state === 'loading' || r.state === 'retired' ? r.loading : undefined)?.catch(() => undefined);
      await this.closePools(entry, 'closed');
    }));
    await Promise.all(this.closing);
    this.catalog.clear();
    this.retiring.clear();
  }
}

/**
 * Where one model stands: its state of residency (unloaded, loading, loaded, failed, retired), the
 * moves between the states, and what the server reports of it. Only the residency module
 * (./residency.ts) moves a model, through its one transition function, which checks every move
 * against NEXT.
 */
import type { CoreError } from '../core/errors.js';
import type { ModelStatus } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { ModelPools } from './model-pools.js';

/** A failed load: requests are answered with it at once until `retryAt`. */
export interface LoadFailure {
  error: CoreError;
  retryAt: number;
  delayMs: number;
}

export type Residence =
  /** Not in memory: its first request loads it. */
  | { state: 'unloaded' }
  /**
   * Its pools are starting; every request for it waits for this one load. `failure`: the attempt
   * before this one (still reported until this one ends; the next back-off doubles its delay).
   */
  | { state: 'loading'; loading: Promise<ModelPools>; failure?: LoadFailure }
  /** In memory; `idleTimer` runs while no request holds it. */
  | { state: 'loaded'; pools: ModelPools; idleTimer?: NodeJS.Timeout }
  /** The last load failed: answered at once until its retryAt; the first request after that loads it again. */
  | { state: 'failed'; failure: LoadFailure }
  /**
   * Removed or replaced on disk: no new request finds it. What it still holds (pools, or a load under
   * way) is closed once no request holds it; then it is gone.
   */
  | { state: 'retired'; pools?: ModelPools; loading?: Promise<ModelPools> };

export type ResidencyState = Residence['state'];

/** Every move a model may make; any other is a bug (the transition function refuses it). */
export const NEXT: { readonly [S in ResidencyState]: readonly ResidencyState[] } = {
  unloaded: ['loading', 'retired'],
  loading: ['loaded', 'failed', 'retired'],
  // Idle past its keep-alive, asked to, evicted to make room, or the server closing.
  loaded: ['unloaded', 'retired'],
  // Retried (after the back-off) or gone from disk.
  failed: ['loading', 'retired'],
  // Its load ends or its pools close: what it holds changes, and it stays retired.
  retired: ['retired'],
};

/**
 * A model that failed to load is not loaded again on every request (each attempt starts workers and
 * reads the model: seconds of CPU for an answer known in advance): its failure is remembered and
 * answered at once, with its reason, for 1 s after the first failure, then 2, 4... up to 60 s after
 * each further one. Files changed on disk make a new entry (a rescan replaces it), which starts afresh.
 */
export const LOAD_RETRY_MS = { first: 1_000, max: 60_000 };

/** The failure a load that ended in `error` leaves: its retry a back-off step after the one before. */
export function loadFailure(error: CoreError, previous: LoadFailure | undefined): LoadFailure {
  const delayMs = previous ? Math.min(previous.delayMs * 2, LOAD_RETRY_MS.max) : LOAD_RETRY_MS.first;
  return { error, retryAt: Date.now() + delayMs, delayMs };
}

/** The pools a model holds in memory now, if any. */
export const poolsOf = (r: Residence): ModelPools | undefined => (r.state === 'loaded' || r.state === 'retired' ? r.pools : undefined);

/** It takes room in memory: its pools are there or starting. */
export const takesRoom = (r: Residence): boolean => r.state === 'loading' || r.state === 'loaded' || (r.state === 'retired' && (r.pools !== undefined || r.loading !== undefined));

/** One model the service knows, loaded or not, and the requests that hold it. */
export interface ModelEntry {
  readonly info: ModelInfo;
  /** Its files as they were when it was found (a rescan that finds them changed replaces the entry). */
  readonly signature: string;
  readonly fileBytes: number;
  readonly pinned: boolean;
  residence: Residence;
  /** Requests holding the model (waiting for it to load included). */
  inflight: number;
  lastUsed: number;
  /** The keep-alive now in force: the model's own, or what the last request asked for. */
  keepAliveMs: number;
}

/** What the server reports of a model (GET /models/status, `models ps`). */
export function statusOf(entry: ModelEntry): ModelStatus {
  const r = entry.residence;
  const pools = r.state === 'loaded' ? r.pools : undefined;
  const failure = r.state === 'failed' || r.state === 'loading' ? r.failure : undefined;
  return {
    id: entry.info.id,
    task: entry.info.task,
    // An unloaded model is ready too: its first request loads it.
    ready: !pools || pools.pool.ready,
    state: r.state === 'loaded' || r.state === 'loading' ? r.state : 'unloaded',
    queued: pools?.queued ?? 0,
    workers: pools?.pool.size ?? 0,
    workerRestarts: pools?.pool.workerRestarts ?? 0,
    fileBytes: entry.fileBytes,
    inflight: entry.inflight,
    ...(pools ? { loadedAt: pools.at, lastUsed: entry.lastUsed, ...(pools.device ? { device: pools.device } : {}), ...(pools.kv ? { kvBytes: pools.kv.bytes, sequences: pools.kv.layout } : {}) } : {}),
    ...(pools && entry.inflight === 0 && !entry.pinned && entry.keepAliveMs >= 0 ? { expiresAt: entry.lastUsed + entry.keepAliveMs } : {}),
    pinned: entry.pinned,
    ...(failure ? { loadError: { message: failure.error.message, retryAt: failure.retryAt } } : {}),
  };
}

/**
 * The messages between a ProcessPool (process-pool.ts) and the child process that runs its model
 * (process-entry.ts), over Node's IPC channel with the structured-clone ('advanced') serialization.
 */
import type { CoreErrorData } from '../core/errors.js';
import type { EmbedBatchEvent, GenerationEvent, GenerationTestHooks, WorkerLoss } from '../core/hooks.js';
import type { ChatEvent } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { ModelPoolOptions } from './model-pool.js';
import type { InferencePool } from './pool.js';

/** The pool methods a child runs for its parent. */
export type PoolMethod = 'start' | 'generate' | 'countTokens' | 'tokenize' | 'detokenize' | 'rerankBatch' | 'embedBatch';

/** The child pool's counters the parent answers `status()` from. */
export type PoolState = Pick<InferencePool, 'ready' | 'workerRestarts' | 'queueSize'>;

export type ToChild =
  | { type: 'init'; model: ModelInfo; options: ModelPoolOptions }
  | {
      type: 'call';
      id: number;
      method: PoolMethod;
      args: unknown[];
      /** generate: send every ChatEvent (else only `start`, which tells the parent the generation began). */
      stream?: boolean;
      /** generate, tests only: the fault or script the parent's hooks chose for this request. */
      test?: GenerationTestHooks;
    }
  /** generate: the client went away. */
  | { type: 'cancel'; id: number }
  | { type: 'close' };

export type FromChild =
  | { type: 'reply'; id: number; value: unknown; ended?: GenerationEvent }
  | { type: 'failed'; id: number; error: CoreErrorData; ended?: GenerationEvent }
  | { type: 'event'; id: number; event: ChatEvent }
  /** An observer call of the child's pool, passed on to the parent's observers (generations excepted: the parent tells those itself). */
  | { type: 'observed'; name: 'embedBatch'; args: [EmbedBatchEvent] }
  | { type: 'observed'; name: 'workerLost'; args: [model: string, reason: WorkerLoss] }
  | { type: 'log'; level: 'error' | 'warn' | 'info' | 'debug'; fields: Record<string, unknown>; msg: string }
  | ({ type: 'state' } & PoolState);

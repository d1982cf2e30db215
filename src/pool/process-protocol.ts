/**
 * The messages between a ProcessPool (process-pool.ts) and the child process that runs its model
 * (process-entry.ts), over Node's IPC channel with the structured-clone ('advanced') serialization.
 * A call is a pool method by name with its arguments, its answer that method's result: both read
 * off the pool interface (./pool.ts), so neither side casts. generate alone differs: its callbacks
 * stay with the parent, and the child sends its events and its end instead.
 */
import type { CoreErrorData } from '../core/errors.js';
import type { GenerationEvent, GenerationTestHooks, InferenceObserver } from '../core/hooks.js';
import type { ChatEvent, ChatRequest, ChatResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { InferencePool, ModelPoolOptions } from './pool.js';

/** The pool methods a child runs as they are, arguments and result. */
export type PlainMethod = 'start' | 'countTokens' | 'tokenize' | 'detokenize' | 'rerankBatch' | 'embedBatch';

/** Each method's arguments and result on the channel. */
export type PoolCalls = { [M in PlainMethod]: { args: Parameters<InferencePool[M]>; result: Awaited<ReturnType<InferencePool[M]>> } } & {
  generate: { args: [request: ChatRequest]; result: ChatResult };
};
export type PoolMethod = keyof PoolCalls;
export type ResultOf<M extends PoolMethod> = PoolCalls[M]['result'];

/** The plain methods as the child's pool answers them (a ModelPool is one). */
export type PlainMethods = { [M in PlainMethod]: (...args: PoolCalls[M]['args']) => Promise<ResultOf<M>> };

/** A call of method M (one of several: the union of their calls). */
export type CallOf<M extends PoolMethod = PoolMethod> = { [K in M]: { method: K; args: PoolCalls[K]['args'] } }[M];

/** generate: what the parent adds to its call. */
export interface GenerateExtras {
  /** Send every ChatEvent (else only `start`, which tells the parent the generation began). */
  stream: boolean;
  /** Tests only: the fault or script the parent's hooks chose for this request. */
  test?: GenerationTestHooks;
}

/** A reply to a call of method M, carrying its method so the parent finds the call's own type. */
export type CallReply<M extends PoolMethod = PoolMethod> = { [K in M]: { type: 'reply'; id: number; method: K; value: ResultOf<K>; ended?: GenerationEvent } }[M];

/** The observer calls the child passes on (generations excepted: the parent tells those itself). */
export type Passed = 'embedBatch' | 'workerLost';
export type ObservedOf<N extends Passed = Passed> = { [K in N]: { type: 'observed'; name: K; args: Parameters<NonNullable<InferenceObserver[K]>> } }[N];

/** The child pool's counters the parent answers `status()` from. */
export type PoolState = Pick<InferencePool, 'ready' | 'workerRestarts' | 'queueSize'>;

export type ToChild =
  | { type: 'init'; model: ModelInfo; options: ModelPoolOptions }
  /** generate: with what the parent adds to it. */
  | { type: 'call'; id: number; call: CallOf; generate?: GenerateExtras }
  /** generate: the client went away. */
  | { type: 'cancel'; id: number }
  | { type: 'close' };

export type FromChild =
  | CallReply
  | { type: 'failed'; id: number; method: PoolMethod; error: CoreErrorData; ended?: GenerationEvent }
  | { type: 'event'; id: number; event: ChatEvent }
  | ObservedOf
  | { type: 'log'; level: 'error' | 'warn' | 'info' | 'debug'; fields: Record<string, unknown>; msg: string }
  | ({ type: 'state' } & PoolState);

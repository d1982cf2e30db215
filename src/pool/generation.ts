/**
 * One generation, as both pools run it (model-pool.ts on worker threads, process-pool.ts in a child
 * process): the test hooks are chosen once, the observers hear it start and end once, and a
 * generation lost with its worker before its own work began there (it waited in the worker's queue,
 * or for admission to its batch) is not its own failure: it runs again, once, on the replacement,
 * and the caller sees the prompt's `start` event once. Whether it had begun is the failure's own
 * flag (WorkerLost.beforeStart), set by the pool that saw the worker go.
 */
import { CoreError } from '../core/errors.js';
import { notify, testHooksFor, type GenerationEvent, type GenerationTestHooks } from '../core/hooks.js';
import type { ChatEvent, ChatRequest, ChatResult } from '../core/types.js';
import type { GenerateOptions, PoolContext } from './pool.js';

/** Times a generation lost before it began is run again. */
const MAX_RERUNS = 1;

/** A worker (a thread, or a model's process) died while it held a task. */
export class WorkerLost extends CoreError {
  constructor(
    model: string,
    message: string,
    /** The task's own work had not begun (a generation may run again). */
    readonly beforeStart: boolean,
  ) {
    super('worker_failed', message, { model });
  }
}

/** What one attempt of a generation is handed. */
export interface Attempt {
  /** The test hooks chosen for this generation, the same for every attempt. */
  test: GenerationTestHooks | undefined;
  /** The caller's events, a rerun's repeated `start` dropped; undefined when the caller streams nothing. */
  onEvent: ((event: ChatEvent) => void) | undefined;
  /** Takes the generation's end as the worker reports it (for the observers and the caller's onEnded). */
  ended: (event: GenerationEvent) => void;
}

export interface Generation {
  request: ChatRequest;
  options: GenerateOptions;
  /** One run on a worker; a failure that is a WorkerLost before it began runs it again. */
  attempt: (attempt: Attempt) => Promise<ChatResult>;
}

/** Runs a generation on a pool whose context is `context`, for the model `model`. */
export async function runGeneration(model: string, context: PoolContext, generation: Generation): Promise<ChatResult> {
  const { request, options } = generation;
  let finished: GenerationEvent | undefined;
  let started = false;
  const callerOnEvent = options.onEvent;
  const onEvent = callerOnEvent && ((event: ChatEvent) => (event.type === 'start' && started ? undefined : ((started = true), callerOnEvent(event))));
  const attempt: Attempt = { test: testHooksFor(context.hooks, request), onEvent, ended: (event) => (finished = event) };
  notify(context.hooks, 'generationStarted', model);
  try {
    for (let rerun = 0; ; rerun++) {
      try {
        return await generation.attempt(attempt);
      } catch (error) {
        if (!(error instanceof WorkerLost && error.beforeStart) || rerun >= MAX_RERUNS) throw error;
        context.logger.warn({ model }, 'worker lost before the generation began; running it again');
      }
    }
  } finally {
    notify(context.hooks, 'generationEnded', model, finished);
    options.onEnded?.(finished);
  }
}

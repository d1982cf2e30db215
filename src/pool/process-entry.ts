/**
 * Entry of the child process a ProcessPool starts (process-pool.ts): it runs an ordinary ModelPool
 * (worker threads, batching, deadlines, watchdog) for its parent, over the IPC channel. Whatever
 * takes a worker thread down here, native code included, ends this process at worst, never the
 * server. The parent's end of the channel closing ends it too.
 */
import { CoreError, toCoreError } from '../core/errors.js';
import type { GenerationEvent, GenerationTestHooks, InferenceHooks } from '../core/hooks.js';
import type { Logger } from '../core/log.js';
import type { ChatRequest } from '../core/types.js';
import { ModelPool } from './model-pool.js';
import type { CallOf, FromChild, GenerateExtras, PlainMethod, PlainMethods, PoolMethod, PoolState, CallReply, ToChild } from './process-protocol.js';
import { listenToWorkerLogs } from './worker-logs.js';

/** A message to the parent (a reply to a call of method M is one, whatever M). */
const send = <M extends PoolMethod>(message: FromChild | CallReply<M>) => {
  if (process.connected) process.send!(message);
};

/** Errors in log fields cross as their name, message and stack. */
const plain = (fields: object): Record<string, unknown> =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v]));
const logAt = (level: keyof Logger) => (fields: object, msg: string) => send({ type: 'log', level, fields: plain(fields), msg });
const logger: Logger = { error: logAt('error'), warn: logAt('warn'), info: logAt('info'), debug: logAt('debug') };

/** Test hooks the parent chose for a request, found by the request object the pool is handed. */
const testHooks = new WeakMap<ChatRequest, GenerationTestHooks>();
const hooks: InferenceHooks = {
  fault: (request) => testHooks.get(request)?.fault,
  script: (request) => testHooks.get(request)?.script,
  observers: [{
    embedBatch: (event) => send({ type: 'observed', name: 'embedBatch', args: [event] }),
    workerLost: (model, reason) => send({ type: 'observed', name: 'workerLost', args: [model, reason] }),
  }],
};

let pool: ModelPool | undefined;
/** Generations running, by call id: how to stop each, and its end once the pool has told it. */
const generations = new Map<number, { abort: AbortController; ended?: GenerationEvent }>();
let state: PoolState = { ready: false, workerRestarts: 0, queueSize: 0 };

/** How often the pool's counters are looked at besides each call's start and end (a reload ends with no call). */
const STATE_POLL_MS = 100;

/** Tells the parent the pool's counters when they have changed. */
function sendState(): void {
  if (!pool) return;
  const now: PoolState = { ready: pool.ready, workerRestarts: pool.workerRestarts, queueSize: pool.queueSize };
  if (now.ready === state.ready && now.workerRestarts === state.workerRestarts && now.queueSize === state.queueSize) return;
  state = now;
  send({ type: 'state', ...now });
}

async function call(message: Extract<ToChild, { type: 'call' }>): Promise<void> {
  const { id, call } = message;
  const ended = () => {
    const event = generations.get(id)?.ended;
    return event ? { ended: event } : {};
  };
  try {
    if (!pool) throw new CoreError('internal', 'model process not initialised');
    const reply = call.method === 'generate' ? await generate(pool, id, { request: call.args[0], extras: message.generate }) : await answer(pool, id, call);
    // The pool's state first: a caller answered 504 after a worker was lost must find the model not ready.
    sendState();
    send({ ...reply, ...ended() });
  } catch (error) {
    sendState();
    send({ type: 'failed', id, method: call.method, error: toCoreError(error).toData(), ...ended() });
    if (toCoreError(error).code === 'internal') logger.error({ err: error, method: call.method }, 'model process call failed');
  } finally {
    generations.delete(id);
  }
}

/** A plain method's call, answered by the pool as it is. */
async function answer<M extends PlainMethod>(methods: PlainMethods, id: number, call: CallOf<M>): Promise<CallReply<M>> {
  return { type: 'reply', id, method: call.method, value: await methods[call.method](...call.args) };
}

/** generate: the parent holds the callbacks; the events go back as messages (every one when it streams, else only `start`). */
async function generate(pool: ModelPool, id: number, { request, extras }: { request: ChatRequest; extras: GenerateExtras | undefined }): Promise<CallReply<'generate'>> {
  if (extras?.test) testHooks.set(request, extras.test);
  const running: { abort: AbortController; ended?: GenerationEvent } = { abort: new AbortController() };
  generations.set(id, running);
  const value = await pool.generate(request, {
    signal: running.abort.signal,
    onEvent: (event) => (extras?.stream || event.type === 'start' ? send({ type: 'event', id, event }) : undefined),
    onEnded: (event) => (running.ended = event),
  });
  return { type: 'reply', id, method: 'generate', value };
}

/** Stops the pool's work (its close waits for running tasks to stop at their next step) and ends the process. */
function closeAndExit(): void {
  void (pool?.close() ?? Promise.resolve()).finally(() => process.exit(0));
}

process.on('message', (message: ToChild) => {
  switch (message.type) {
    case 'init': {
      const logs = listenToWorkerLogs(logger);
      pool = new ModelPool(message.model, message.options, { logger, hooks, logChannel: logs.channel });
      setInterval(sendState, STATE_POLL_MS).unref();
      return;
    }
    case 'call':
      void call(message);
      sendState();
      return;
    case 'cancel':
      generations.get(message.id)?.abort.abort();
      return;
    case 'close':
      closeAndExit();
      return;
  }
});
// The server is gone (or closed the channel): nothing is left to serve.
process.on('disconnect', closeAndExit);

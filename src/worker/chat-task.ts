/**
 * A chat task in a worker: the request's turn (src/chat/turn.ts) run on the model's engine. The turn
 * is built first (a prompt that leaves no room, or a schema the grammar cannot express, is refused
 * before anything is sent); then the engine's cached prefix is looked up, so that `start` (sent
 * before the prefill, which may wait behind others) already carries the figure the result will: the
 * engine is handed this very prefix. On llama.cpp the lookup resolves once the request has its
 * sequence (it may wait for one that fits: src/engines/llama/slots.ts), so the figure is what that
 * sequence keeps; until then no `start` is sent (the stream opens with pings meanwhile). The task control block (./protocol.ts TaskControl) is read for
 * cancellation at every step and written for the pool's watchdog.
 */
import type { MessagePort } from 'node:worker_threads';
import type { LogFn } from '../core/log.js';
import type { ChatRequest } from '../core/types.js';
import type { ChatModel } from '../chat/model.js';
import { ChatTurn } from '../chat/turn.js';
import type { SequenceEngine } from '../engines/sequence.js';
import { markBusy, TaskControl, type PortMessage, type ReplyOf } from './protocol.js';

export type ChatOutcome = Omit<ReplyOf<'generate'>, 'threadId' | 'heapUsedBytes'>;

export interface ChatTaskContext {
  engine: SequenceEngine;
  control: Int32Array;
  /** Present when the caller wants the turn's events as they happen. */
  port?: MessagePort;
  log?: LogFn;
}

export async function runChatTask(model: ChatModel, request: ChatRequest, context: ChatTaskContext): Promise<ChatOutcome> {
  const started = performance.now();
  const { engine, control, port } = context;
  const send = (message: PortMessage) => port?.postMessage(message);
  const turn = await ChatTurn.start(model, request, { send, constrains: engine.constrains, ...(context.log ? { log: context.log } : {}) });
  try {
    const cancelled = () => Atomics.load(control, TaskControl.CANCEL) !== 0;
    if (turn.images?.length && !cancelled()) await engine.checkImages?.(turn.images);
    // The client left while the task waited in the queue: no lookup, no prefill. (The lookup may
    // itself wait, for a sequence or for a shared prefix another request is prefilling.)
    const prefix = cancelled() ? null : await engine.lookup(turn.promptIds, turn.maxTokens, { cancelled, ...(turn.images ? { images: turn.images } : {}) });
    const cachedInputTokens = prefix?.length ?? 0;
    let firstTokenMs: number | null = null;
    let peakBatch = 0;
    let ran = false;
    try {
      send({ type: 'start', inputTokens: turn.inputTokens, cachedInputTokens });
      if (!cancelled()) {
        const sequence = turn.sequence();
        const onToken = (id: number) => ((firstTokenMs ??= performance.now() - started), sequence.onToken(id));
        ran = true;
        peakBatch = await engine.run({ ...sequence, onToken, cancelled, busy: (on) => markBusy(control, on) }, prefix);
      }
    } finally {
      // A sequence the lookup claimed and no run took (cancelled meanwhile) goes back.
      if (!ran) prefix?.release?.();
    }
    const promptCache = engine.promptCacheStats?.();
    return {
      result: turn.result(cachedInputTokens),
      cancelled: cancelled(),
      timing: { firstTokenMs, totalMs: performance.now() - started, peakBatch },
      ...(promptCache ? { promptCache } : {}),
    };
  } finally {
    turn.dispose();
  }
}

/**
 * The main-thread end of the workers' log channel: each record a worker posts (src/worker/log.ts)
 * is written to the server's logger with the model id and the worker's thread id.
 */
import { BroadcastChannel } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../core/log.js';
import type { WorkerLogRecord } from '../worker/protocol.js';

export interface WorkerLogs {
  /** The channel name workers are given (WorkerInit.logChannel). */
  channel: string;
  close(): void;
}

export function listenToWorkerLogs(logger: Logger): WorkerLogs {
  const channel = `worker-log-${randomBytes(6).toString('hex')}`;
  const port = new BroadcastChannel(channel);
  port.unref();
  port.onmessage = (event) => {
    const { level, model, threadId, msg, err } = (event as { data: WorkerLogRecord }).data;
    logger[level]({ model, worker: threadId, ...(err ? { err } : {}) }, msg);
  };
  return { channel, close: () => port.close() };
}

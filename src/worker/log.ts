/**
 * Logging from a worker thread: records go on the BroadcastChannel named in WorkerInit, and the
 * main thread writes them to the server's pino logger with the model id (src/pool/worker-logs.ts).
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import type { LogFn } from '../core/log.js';
import type { WorkerLogRecord } from './protocol.js';

export type WorkerLog = LogFn;

export function workerLog(channelName: string, model: string): WorkerLog {
  const channel = new BroadcastChannel(channelName);
  // The channel must not keep an idle worker alive on its own.
  channel.unref();
  return (level, msg, error) => {
    const record: WorkerLogRecord = { level, model, threadId, msg };
    if (error instanceof Error) record.err = { name: error.name, message: error.message, stack: error.stack };
    else if (error !== undefined) record.err = { name: 'Error', message: String(error) };
    channel.postMessage(record);
  };
}

/**
 * Worker thread entry (piscina). The model named in workerData is loaded once when the thread
 * starts and kept for the thread's life; every task awaits that one load.
 */
import { threadId, workerData } from 'node:worker_threads';
import { toServiceError, type ServiceErrorOptions } from '../errors.js';
import type { PortMessage, WorkerInit, WorkerReply, WorkerTask } from '../pool/protocol.js';
import { loadModel, type LoadedModel } from './load.js';
import { generate, countPromptTokens } from './generate.js';
import { embed } from './embed.js';

const init = workerData as WorkerInit;
const loading: Promise<LoadedModel> = loadModel(init);
// Keep an early load failure from being reported as unhandled before the first task awaits it.
loading.catch(() => {});

export default async function handle(task: WorkerTask): Promise<WorkerReply> {
  try {
    const loaded = await loading;
    switch (task.type) {
      case 'load':
        return { type: 'loaded', taskId: task.taskId, hiddenSize: loaded.hiddenSize };
      case 'count':
        return { type: 'counted', taskId: task.taskId, inputTokens: countPromptTokens(loaded, task.prompt) };
      case 'generate': {
        try {
          const outcome = await generate(loaded, task.request, new Int32Array(task.cancel), task.port);
          task.port?.postMessage({ type: 'end' } satisfies PortMessage);
          return { type: 'generated', taskId: task.taskId, ...outcome, threadId };
        } finally {
          task.port?.close();
        }
      }
      case 'embed': {
        const { vectors, promptTokens } = await embed(loaded, task.inputs, task.dimensions);
        // Vectors are small (KBs); structured clone copies them, which is cheaper than transfer bookkeeping.
        return { type: 'embedded', taskId: task.taskId, vectors, promptTokens, threadId };
      }
    }
  } catch (error) {
    return { type: 'error', taskId: task.taskId, error: errorForWire(error) };
  }
}

function errorForWire(error: unknown): ServiceErrorOptions {
  const serviceError = toServiceError(error);
  if (serviceError.kind === 'internal') {
    // Internal details stay in the server log, never in a response.
    console.error(`[worker ${init.model.id}]`, error);
  }
  return serviceError.toJSON();
}

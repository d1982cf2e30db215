/**
 * Worker thread entry (piscina). What workerData names is loaded once when the thread starts and
 * kept for the thread's life; every task awaits that one load.
 */
import { threadId, workerData } from 'node:worker_threads';
import { ServiceError, toServiceError, type ServiceErrorOptions } from '../errors.js';
import { TaskControl, type PortMessage, type WorkerInit, type WorkerReply, type WorkerTask } from '../pool/protocol.js';
import { loadModel, loadTokenizer, type LoadedModel, type LoadedTokenizer } from './load.js';
import { generate } from './generate.js';
import { embedBatch } from './embed.js';
import { renderPrompt } from './prompt.js';

const init = workerData as WorkerInit;
const loading: Promise<LoadedTokenizer | LoadedModel> = init.role === 'tokenizer' ? loadTokenizer(init.model) : loadModel(init);
// Keep an early load failure from being reported as unhandled before the first task awaits it.
loading.catch(() => {});

async function loadedModel(): Promise<LoadedModel> {
  const loaded = await loading;
  if (!('model' in loaded)) throw new ServiceError({ code: 'wrong_worker', kind: 'internal', message: 'task sent to a tokenizer-only worker' });
  return loaded;
}

export default async function handle(task: WorkerTask): Promise<WorkerReply> {
  if ('control' in task) Atomics.store(new Int32Array(task.control), TaskControl.THREAD, threadId);
  try {
    switch (task.type) {
      case 'load': {
        const loaded = await loading;
        return { type: 'loaded', taskId: task.taskId, hiddenSize: 'hiddenSize' in loaded ? loaded.hiddenSize : null, notes: 'notes' in loaded ? loaded.notes : [] };
      }
      case 'count':
        return { type: 'counted', taskId: task.taskId, inputTokens: renderPrompt(await loading, task.prompt).ids.length };
      case 'generate': {
        try {
          const outcome = await generate(await loadedModel(), task.request, {
            cancel: new Int32Array(task.control),
            port: task.port,
            faultInjection: init.faultInjection,
          });
          task.port?.postMessage({ type: 'end' } satisfies PortMessage);
          return { type: 'generated', taskId: task.taskId, ...outcome, threadId };
        } finally {
          task.port?.close();
        }
      }
      case 'embed': {
        const results = await embedBatch(await loadedModel(), task.items, { maxBatchTokens: task.maxBatchTokens, truncate: task.truncate });
        // Vectors are small (KBs); structured clone copies them, which is cheaper than transfer bookkeeping.
        return { type: 'embedded', taskId: task.taskId, results, threadId };
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

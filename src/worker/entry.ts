/**
 * Worker thread entry (piscina). What workerData names is loaded once when the thread starts and
 * kept for the thread's life; every task awaits that one load.
 */
import v8 from 'node:v8';
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import { CoreError, toCoreError } from '../core/errors.js';
import { markBusy, TaskControl, type PortMessage, type ReleaseMessage, type ReplyOf, type TaskOf, type TaskType, type WorkerInit, type WorkerOutcome, type WorkerTask } from './protocol.js';
import type { LoadedModel } from '../engines/onnx/load.js';
import { loadGgufTokenizer, type LoadedTokenizer } from '../tokenize/load-tokenizer.js';
import { runChatTask } from './chat-task.js';
import { withTestHooks } from './test-hooks.js';
import { embedBatch } from '../engines/embed-batch.js';
import { llamaEmbedder } from '../engines/llama/embed.js';
import { workerLog } from './log.js';
import { collectGarbage } from './collect-garbage.js';
import { renderPrompt } from '../chat/prompt.js';
import { detokenize, piecesOf, tokenizeText } from '../engines/onnx/tokens.js';
import { disposeLlamaModel, loadLlamaModel, type LlamaLoaded } from '../engines/llama/load.js';
import { layoutText } from '../engines/llama/layout.js';
import { llamaEngine } from '../engines/llama/runner.js';
import { attachSlotDiskCache, saveSlotDiskCache } from '../engines/llama/slot-disk.js';
import { llamaRerank } from '../engines/llama/rank.js';
import type { SequenceEngine } from '../engines/sequence.js';

/** The ONNX engine's modules, for a worker that runs an ONNX model (./onnx-engine.ts). */
export type OnnxEngine = typeof import('./onnx-engine.js');

/**
 * Starts a worker: loads its model (or tokenizer) and returns piscina's task handler. `onnx`: the
 * ONNX engine, which only ./onnx-entry.ts passes: it imports transformers.js (and through it
 * onnxruntime-node and sharp), which a GGUF model's worker (./llama-entry.ts) never loads, about
 * 20 MiB of RSS (../tokenize/text-tokenizer.ts). The pool picks the entry by the model's engine.
 */
export function serveWorker(onnx?: OnnxEngine): (task: WorkerTask) => Promise<WorkerOutcome> {
  const init = workerData as WorkerInit;
  const log = workerLog(init.logChannel, init.model.id);
  const gguf = init.model.engine === 'llama';
  const onnxOnly = () => {
    if (!onnx) throw new CoreError('internal', 'an ONNX task sent to a worker without the ONNX engine');
    return onnx;
  };
  // Collected right after the load, before the first task: see collect-garbage.ts.
  const load: Promise<LoadedTokenizer | LoadedModel | LlamaLoaded> = gguf
    ? (init.role === 'tokenizer' ? loadGgufTokenizer(init.model) : loadLlamaModel(init.model, init.engine, log))
    : init.role === 'tokenizer' ? onnxOnly().loadTokenizer(init.model) : onnxOnly().loadModel(init.model, init.engine, log);
  const loading: Promise<LoadedTokenizer | LoadedModel | LlamaLoaded> = load.then((loaded) => {
    collectGarbage();
    if ('llama' in loaded && init.role === 'model') attachSlotDiskCache(loaded as LlamaLoaded, log);
    return loaded;
  });
  // Keep an early load failure from being reported as unhandled before the first task awaits it.
  loading.catch(() => {});

  // Asked by its pool before it closes (src/pool/model-pool.ts releaseModels): a llama.cpp model is
  // disposed here, on its own thread, so its native memory is freed now and no native call is left
  // to land in a thread that has gone (its sequences worth keeping written to the prompt cache on disk
  // first); an ONNX chat model's prompt cache finishes its disk writes.
  const release = new BroadcastChannel(init.releaseChannel);
  release.unref();
  release.onmessage = (event) => {
    if ((event as { data: ReleaseMessage }).data.type !== 'release') return;
    void loading
      .then((loaded) => ('llama' in loaded ? saveSlotDiskCache(loaded).finally(() => disposeLlamaModel(loaded)) : 'model' in loaded ? onnxOnly().flushPromptCache(loaded) : undefined))
      .catch((error: unknown) => log('warn', 'model not freed before the worker closed', error))
      .finally(() => release.postMessage({ type: 'released', threadId } satisfies ReleaseMessage));
  };

  async function loadedModel(): Promise<LoadedModel | LlamaLoaded> {
    const loaded = await loading;
    if (!('model' in loaded)) throw new CoreError('internal', 'task sent to a tokenizer-only worker');
    return loaded;
  }

  const engineOf = (model: LoadedModel | LlamaLoaded): SequenceEngine => ('llama' in model ? llamaEngine(model) : onnxOnly().onnxEngine(model, log));
  const embedderOf = (model: LoadedModel | LlamaLoaded) => ('llama' in model ? llamaEmbedder(model) : onnxOnly().onnxEmbedder(model));

  /** This worker's V8 heap in use, reported with each reply (the server's /metrics: worker_heap_used_bytes). */
  const heapUsed = () => v8.getHeapStatistics().used_heap_size;

  const handlers: { [K in TaskType]: (task: TaskOf<K>) => Promise<ReplyOf<K>> } = {
    async load() {
      let loaded: LoadedTokenizer | LoadedModel | LlamaLoaded;
      try {
        loaded = await loading;
      } catch (error) {
        // Why a model cannot be loaded is about its files, not a request: it crosses as the reason of a
        // model_unavailable (the service answers requests with it), not as a hidden internal error.
        log('error', 'model failed to load', error);
        throw error instanceof CoreError ? error : new CoreError('model_unavailable', (error as Error)?.message ?? String(error), { model: init.model.id });
      }
      const kv = 'layout' in loaded && loaded.layout ? { kv: { bytes: loaded.layout.kvBytes, layout: layoutText(loaded.layout) } } : {};
      return { notes: 'notes' in loaded ? loaded.notes : [], device: 'device' in loaded ? loaded.device : 'cpu', ...kv };
    },
    async count(task) {
      return { inputTokens: renderPrompt(await loading, task.prompt).ids.length };
    },
    async tokenize({ input, pieces }) {
      const loaded = await loading;
      if (input.kind === 'text') return tokenizeText(loaded.tokenizer, input.text, { addSpecial: input.addSpecial, pieces });
      const { ids } = renderPrompt(loaded, input.prompt);
      return pieces ? { tokens: ids, pieces: piecesOf(loaded.tokenizer, ids) } : { tokens: ids };
    },
    async detokenize({ tokens, skipSpecial }) {
      return { text: detokenize((await loading).tokenizer, tokens, skipSpecial) };
    },
    async rerank(task) {
      markBusy(new Int32Array(task.control), true);
      const model = await loadedModel();
      const options = { maxBatchTokens: task.maxBatchTokens, truncate: task.truncate };
      const results = 'llama' in model ? await llamaRerank(model, task.items, options) : await onnxOnly().rerankPairs(model, task.items, options);
      return { results, threadId, heapUsedBytes: heapUsed() };
    },
    async generate(task) {
      try {
        const model = await loadedModel();
        const control = new Int32Array(task.control);
        const engine = task.test ? withTestHooks(engineOf(model), model, task.test, control) : engineOf(model);
        const outcome = await runChatTask(model, task.request, { engine, control, ...(task.port ? { port: task.port } : {}), log });
        task.port?.postMessage({ type: 'end' } satisfies PortMessage);
        return { ...outcome, threadId, heapUsedBytes: heapUsed() };
      } finally {
        task.port?.close();
      }
    },
    async embed(task) {
      // The whole batch is this task's own work (one embedding task per worker at a time).
      markBusy(new Int32Array(task.control), true);
      const results = await embedBatch(embedderOf(await loadedModel()), task.items, { maxBatchTokens: task.maxBatchTokens, truncate: task.truncate });
      // Vectors are small (KBs); structured clone copies them, which is cheaper than transfer bookkeeping.
      return { results, threadId, heapUsedBytes: heapUsed() };
    },
  };

  function dispatch<K extends TaskType>(task: TaskOf<K>): Promise<ReplyOf<K>> {
    return handlers[task.type](task);
  }

  return async function handle(task: WorkerTask): Promise<WorkerOutcome> {
    if ('control' in task) Atomics.store(new Int32Array(task.control), TaskControl.THREAD, threadId);
    try {
      return { ok: true, reply: await dispatch(task) };
    } catch (error) {
      const coreError = toCoreError(error);
      // Internal details stay in the server log, never in a response.
      if (coreError.code === 'internal') log('error', `${task.type} task failed`, error);
      return { ok: false, error: coreError.toData() };
    }
  };
}

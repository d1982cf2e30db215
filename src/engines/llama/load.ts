/**
 * A GGUF model loaded in a worker thread on llama.cpp (node-llama-cpp, pinned at 3.21.1: its
 * prebuilt binaries for CPU, CUDA, Vulkan and Metal are npm packages of the lock; nothing is built
 * or downloaded at run time). The tokenizer comes from the GGUF's own metadata, or from a
 * tokenizer.json beside it (src/tokenize/gguf-tokenizer.ts), so the chat layer renders and counts
 * with the same code as for an ONNX model; llama.cpp runs the weights.
 *
 * One llama.cpp runtime per worker, for the backend the `gpu` setting names; a chat model's
 * `generationBatchSize` sequences (llama-server's slots) in one context, or two of different
 * sequence sizes (a long room and a short room), as its KV budget allows (./layout.ts), decoded in
 * a continuous batch (./runner.ts).
 */
import type { Llama, LlamaContext, LlamaEmbeddingContext, LlamaModel, LlamaRankingContext } from 'node-llama-cpp';
import type { EngineSettings } from '../../core/engine-settings.js';
import type { LogFn } from '../../core/log.js';
import { ggufNumber, readGgufMetadata, type GgufMetadata } from '../../models/gguf.js';
import { kvBytesPerToken } from '../../models/gguf-kv.js';
import type { ModelInfo } from '../../models/registry.js';
import { loadGgufTokenizer, type LoadedTokenizer } from '../../tokenize/load-tokenizer.js';
import type { GenerationDefaults } from '../sequence.js';
import { layoutText, planLayout, type Layout } from './layout.js';
import type { AttentionCost } from './attention-tile.js';

/** A GGUF model loaded; it satisfies the chat layer's ChatModel as it is (src/chat/model.ts), as the ONNX engine's LoadedModel does. */
export interface LlamaLoaded extends LoadedTokenizer {
  /** End-of-generation ids: the metadata's eos, eot and eom, and every control token llama.cpp ends on. */
  eosTokenIds: number[];
  generationDefaults: GenerationDefaults;
  /** Rows of the logits: the vocabulary's size. */
  vocabSize: number;
  llama: Llama;
  model: LlamaModel;
  /** Chat models: the contexts whose sequences ./runner.ts decodes, one per room of the layout, longest first. */
  contexts?: LlamaContext[];
  /** Chat models: the rooms and the KV bytes they take (./layout.ts). */
  layout?: Layout;
  /** Embedding models. */
  embedding?: LlamaEmbeddingContext;
  /** Rerank models (pooling type rank: a cross-encoder's score). */
  ranking?: LlamaRankingContext;
  /** Where it runs, for the log and /v1/models: `cpu`, or the GPU backend and the layers on it. */
  device: string;
  /** Bytes of KV one token takes in the context (the prompt cache's count). */
  kvBytesPerToken: number;
  /** Chat models whose passes of 64 tokens take llama.cpp's tiled CPU flash attention: what a pass costs (./attention-tile.ts). */
  attention?: AttentionCost;
  notes: string[];
  engine: EngineSettings;
}

let runtime: { gpu: string; llama: Promise<Llama> } | undefined;

/**
 * node-llama-cpp, imported when a worker first loads a GGUF model: a worker of an ONNX model never
 * loads it. (Imported statically, it also kept tsx's loader from starting in worker threads under
 * Node 20: every worker then failed on its own .ts entry.)
 */
const bindings = () => import('node-llama-cpp');

/** The worker's llama.cpp runtime for the backend `gpu` names (one per worker; the first model's setting holds). */
function llamaRuntime(engine: EngineSettings, log: LogFn): Promise<Llama> {
  if (runtime) return runtime.llama;
  const gpu = engine.gpu === 'false' ? false : engine.gpu;
  const llama = bindings().then(({ getLlama, LlamaLogLevel }) => getLlama({
    gpu,
    build: 'never',
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
    logger: (level, message) => {
      const text = message.trim();
      if (text) log(level === LlamaLogLevel.error || level === LlamaLogLevel.fatal ? 'error' : 'warn', `llama.cpp: ${text}`);
    },
  })).catch((error: unknown) => {
    const reason = (error as Error)?.message ?? String(error);
    throw new Error(gpu === false
      ? `llama.cpp's CPU binary did not load: ${reason}`
      : `gpu=${engine.gpu}: llama.cpp's ${gpu === 'auto' ? 'GPU' : gpu} backend did not load on this machine (${reason}); set gpu=false to run on the CPU`);
  });
  runtime = { gpu: engine.gpu, llama };
  return llama;
}

/** Sampling defaults the GGUF states (`general.sampling.*`, as llama.cpp's converter writes them from generation_config.json); llama.cpp's own otherwise. */
function generationDefaults(metadata: GgufMetadata): GenerationDefaults {
  const temperature = ggufNumber(metadata, 'general.sampling.temp');
  const topK = ggufNumber(metadata, 'general.sampling.top_k');
  const topP = ggufNumber(metadata, 'general.sampling.top_p');
  if (temperature === undefined && topK === undefined && topP === undefined) return { doSample: true, temperature: 0.8, topK: 40, topP: 0.95 };
  return { doSample: (temperature ?? 1) > 0, ...(temperature !== undefined ? { temperature } : {}), ...(topK !== undefined ? { topK } : {}), ...(topP !== undefined ? { topP } : {}) };
}

const KV_TYPES = { q8_0: 'Q8_0', q4_0: 'Q4_0', float16: 'F16' } as const;

function vocabSize(metadata: GgufMetadata): number {
  const tokens = metadata.get('tokenizer.ggml.tokens');
  return Array.isArray(tokens) ? tokens.length : 0;
}

/** The GGUF vocabulary lists node-llama-cpp parses into its `fileInfo`. */
export const VOCABULARY_LISTS = ['tokens', 'merges', 'token_type', 'scores'] as const;

/**
 * node-llama-cpp keeps the GGUF's metadata as it parsed it for the model's life (`model.fileInfo`),
 * the vocabulary lists included, though llama.cpp holds the vocabulary itself and node-llama-cpp
 * 3.21.1 reads only the token list's length (test/unit/llama-file-info.test.ts reads its source for
 * that). Each list becomes an empty array of its length: on Qwen3's 151k tokens and merges, 13 MiB
 * of the worker's heap (measured right after a load).
 */
function dropVocabularyLists(model: LlamaModel): void {
  const lists = (model.fileInfo.metadata as { tokenizer?: { ggml?: Record<string, unknown> } }).tokenizer?.ggml;
  if (!lists) return;
  for (const key of VOCABULARY_LISTS) {
    const list = lists[key];
    if (Array.isArray(list)) lists[key] = new Array<never>(list.length);
  }
}

export async function loadLlamaModel(info: ModelInfo, engine: EngineSettings, log: LogFn = () => {}): Promise<LlamaLoaded> {
  const file = info.gguf?.parts[0];
  if (!file || !info.gguf) throw new Error(`${info.id} is not a GGUF model`);
  const metadata = readGgufMetadata(file);
  const [{ tokenizer }, llama] = await Promise.all([loadGgufTokenizer(info, metadata), llamaRuntime(engine, log)]);
  const onGpu = llama.gpu !== false;
  const model = await llama.loadModel({ modelPath: file, gpuLayers: onGpu ? engine.gpuLayers : 0 });
  dropVocabularyLists(model);
  const notes: string[] = [];
  const device = onGpu ? `${llama.gpu} (${model.gpuLayers} layers)` : 'cpu';
  // node-llama-cpp loads a build made here (npm run build:llama) before its prebuilt binaries. The
  // prebuilt CPU binaries have no OpenMP and a generic per-family instruction set; built for this
  // CPU, prefill and batched decoding ran 1.3-1.4x faster (docs/benchmarks.md).
  const binary = llama.buildType === 'localBuild' ? 'built here' : 'prebuilt';
  if (binary === 'prebuilt' && !onGpu) notes.push('llama.cpp: the prebuilt CPU binary; `npm run build:llama` builds one for this CPU, faster (docs/benchmarks.md)');
  // One thread per core that does math, unless set: node-llama-cpp's own default is at least 4,
  // which on a 2-core machine runs llama.cpp's spinning threads on top of each other (measured: a
  // 7,353-token prefill of the test model 5.0 s instead of 0.8 s, each decoding step 250 ms).
  const threads = { threads: engine.intraOpThreads > 0 ? engine.intraOpThreads : llama.cpuMathCores };
  const flashAttention = engine.flashAttention === 'auto' ? 'auto' as const : engine.flashAttention === 'on';
  let contexts: LlamaContext[] | undefined;
  let layout: Layout | undefined;
  let attention: AttentionCost | undefined;
  let embedding: LlamaEmbeddingContext | undefined;
  let ranking: LlamaRankingContext | undefined;
  if (info.task === 'chat') {
    const kv = engine.kvCacheDtype === 'auto' ? {} : { experimentalKvCacheKeyType: KV_TYPES[engine.kvCacheDtype], experimentalKvCacheValueType: KV_TYPES[engine.kvCacheDtype] };
    layout = planLayout({
      contextLength: info.contextLength,
      sequences: engine.generationBatchSize,
      bytesPerToken: info.gguf.kv?.bytesPerToken ?? kvBytesPerToken(metadata, engine.kvCacheDtype),
      budgetBytes: info.gguf.kv?.budgetBytes ?? Number.MAX_SAFE_INTEGER,
      // A prefill chunk's logits, float32 (./layout.ts).
      contextOverheadBytes: vocabSize(metadata) * engine.prefillChunkTokens * 4,
    });
    contexts = [];
    for (const room of layout.rooms) {
      contexts.push(await model.createContext({
        contextSize: room.contextSize,
        sequences: room.sequences,
        batchSize: engine.prefillChunkTokens,
        flashAttention,
        // A sliding-window model keeps every position's KV (the budget counts them all): a kept
        // prefix is then reused as it is, never re-evaluated from a checkpoint (./slots.ts).
        swaFullCache: true,
        ...threads,
        ...kv,
      }));
    }
    attention = tiledAttention(model, contexts[0]!, engine, metadata, onGpu);
    notes.push(`llama.cpp (${binary}) on ${device}: sequences ${layoutText(layout)} tokens (${(layout.kvBytes / 2 ** 20).toFixed(0)} MiB of KV), flash attention ${contexts[0]!.flashAttention ? 'on' : 'off'}`);
  } else {
    // An encoder's input goes through in one pass: a batch as long as its context.
    const encoder = { contextSize: info.contextLength, batchSize: Math.max(engine.prefillChunkTokens, info.contextLength), ...threads };
    if (info.task === 'rerank') ranking = await model.createRankingContext(encoder);
    else embedding = await model.createEmbeddingContext(encoder);
    notes.push(`llama.cpp (${binary}) on ${device}`);
  }
  const eos = ['eos', 'eot', 'eom'].map((k) => ggufNumber(metadata, `tokenizer.ggml.${k}_token_id`)).filter((id): id is number => id !== undefined);
  // Every token llama.cpp itself ends a generation on (it also finds them by their text: <|im_end|>, <|endoftext|>...).
  const types = (metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  types.forEach((type, id) => type === 3 && model.isEogToken(id as never) && eos.push(id));
  return {
    info,
    tokenizer,
    llama,
    model,
    ...(contexts && layout ? { contexts, layout } : {}),
    ...(embedding ? { embedding } : {}),
    ...(ranking ? { ranking } : {}),
    device,
    kvBytesPerToken: info.gguf.kv?.bytesPerToken ?? kvBytesPerToken(metadata, engine.kvCacheDtype),
    ...(attention ? { attention } : {}),
    notes,
    engine,
    eosTokenIds: [...new Set(eos)],
    generationDefaults: generationDefaults(metadata),
    vocabSize: vocabSize(metadata),
  };
}

/**
 * The cost estimate of ./attention-tile.ts, for a model whose every layer attends to every position
 * (no sliding window, no recurrent layers) on the CPU with flash attention on and an F16 or F32 KV
 * cache: what llama.cpp's tiled kernel takes. Undefined otherwise (GPU kernels are other code).
 */
function tiledAttention(model: LlamaModel, context: LlamaContext, engine: EngineSettings, metadata: GgufMetadata, onGpu: boolean): AttentionCost | undefined {
  const insights = model.fileInsights;
  if (onGpu || !context.flashAttention || !['auto', 'float16'].includes(engine.kvCacheDtype)) return undefined;
  if (insights.isRecurrent || insights.isHybrid || insights.swaSize !== undefined) return undefined;
  const layers = ggufNumber(metadata, `${String(metadata.get('general.architecture'))}.block_count`) ?? 0;
  return layers > 0 ? { layers, perToken: 2 * insights.totalParameters } : undefined;
}

export async function disposeLlamaModel(loaded: LlamaLoaded): Promise<void> {
  for (const context of loaded.contexts ?? []) await context.dispose();
  await loaded.embedding?.dispose();
  await loaded.ranking?.dispose();
  await loaded.model.dispose();
}

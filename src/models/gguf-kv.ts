/**
 * What a GGUF chat model's KV cache costs, from the file's metadata alone, and the context served
 * within a KV budget (the kvBudgetBytes setting, or the model's manifest.json). The scanner serves
 * the context this gives (what /v1/models and the chat turn's limits read); the worker lays its
 * sequences out within the same budget (src/engines/llama/layout.ts).
 */
import os from 'node:os';
import type { EngineSettings, KvCacheDtype } from '../core/engine-settings.js';
import { ggufNumber, type GgufMetadata } from './gguf.js';

/** Bytes per value of each KV type (auto is llama.cpp's F16; Q8_0: 34 bytes a block of 32, Q4_0: 18). */
const KV_BYTES: Record<KvCacheDtype, number> = { auto: 2, float16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };

/** llama.cpp pads a context's cells to a multiple of this (node-llama-cpp's padSafeContextSize): contexts are sized in its steps. */
export const KV_CELL_STEP = 256;

/** The context when the GGUF names none. */
const DEFAULT_CONTEXT = 4096;

/** The default budget: a quarter of the machine's memory (see engineSettingsSchema.kvBudgetBytes). */
export const autoKvBudgetBytes = () => Math.floor(os.totalmem() / 4);

/** What the scanner needs of the engine's settings to size a GGUF model's context. */
export type GgufKvSettings = Pick<EngineSettings, 'kvBudgetBytes' | 'kvCacheDtype'>;

/** A per-layer array (hybrid models write 0 KV heads on their recurrent layers) or one number for every layer. */
function perLayer(metadata: GgufMetadata, key: string, layers: number, fallback: number): number[] {
  const value = metadata.get(key);
  if (Array.isArray(value)) return Array.from({ length: layers }, (_, i) => Number(value[i] ?? 0));
  return Array(layers).fill(typeof value === 'number' ? value : fallback) as number[];
}

/**
 * Bytes of KV a token takes: over the layers, (key + value length) per KV head, at the cache's type.
 * Every attention layer counted in full: a sliding-window layer gets its full-size cache here
 * (layout.ts asks llama.cpp for it), recurrent layers (0 KV heads) none.
 */
export function kvBytesPerToken(metadata: GgufMetadata, dtype: KvCacheDtype): number {
  const arch = String(metadata.get('general.architecture'));
  const n = (key: string) => ggufNumber(metadata, `${arch}.${key}`);
  const layers = n('block_count') ?? 0;
  const heads = perLayer(metadata, `${arch}.attention.head_count`, layers, 1);
  const kvHeads = perLayer(metadata, `${arch}.attention.head_count_kv`, layers, NaN).map((h, i) => (Number.isNaN(h) ? heads[i]! : h));
  const embedding = n('embedding_length') ?? 0;
  const values = kvHeads.reduce((sum, kv, i) => {
    const headDim = heads[i]! > 0 ? embedding / heads[i]! : 0;
    return sum + kv * ((n('attention.key_length') ?? headDim) + (n('attention.value_length') ?? headDim));
  }, 0);
  return Math.round(values * KV_BYTES[dtype]);
}

/** The context the GGUF was trained for, as its metadata states it. */
export function trainedContext(metadata: GgufMetadata): number {
  const trained = ggufNumber(metadata, `${String(metadata.get('general.architecture'))}.context_length`);
  return trained && trained > 0 ? trained : DEFAULT_CONTEXT;
}

export interface ServedContext {
  contextLength: number;
  /** The KV budget this model's worker lays its sequences out in (bytes). */
  budgetBytes: number;
  bytesPerToken: number;
}

/**
 * The context a GGUF chat model is served: its trained one (or the manifest's contextLength), cut to
 * what one sequence's KV can take within the budget (in KV_CELL_STEP steps).
 */
export function servedContext(options: { metadata: GgufMetadata; settings: GgufKvSettings; manifest: { contextLength?: number; kvBudgetBytes?: number } }): ServedContext {
  const { metadata, settings, manifest } = options;
  const budgetBytes = manifest.kvBudgetBytes ?? (settings.kvBudgetBytes === 'auto' ? autoKvBudgetBytes() : settings.kvBudgetBytes);
  const bytesPerToken = kvBytesPerToken(metadata, settings.kvCacheDtype);
  const wanted = manifest.contextLength ?? trainedContext(metadata);
  const fits = bytesPerToken > 0 ? Math.floor(budgetBytes / bytesPerToken / KV_CELL_STEP) * KV_CELL_STEP : wanted;
  return { contextLength: Math.max(KV_CELL_STEP, Math.min(wanted, fits)), budgetBytes, bytesPerToken };
}

/**
 * The ONNX engine as the chat layer sees it (../sequence.ts SequenceEngine): one batch decoder per
 * loaded model, with its prefix cache when the budget allows one (behind its disk tier when the
 * settings give one: ./decode/prefix-disk-tier.ts), or transformers.js generate for
 * the exports the decoder cannot drive (one sequence at a time, no grammar, no cache). Reads its
 * settings from the model's engine settings (prefillChunkTokens, promptCacheBytes).
 *
 * Contract: worker thread; one engine per loaded model, made on its first use and kept with it.
 */
import type { SequenceEngine, SequencePrefix, SequenceSpec } from '../sequence.js';
import { BatchDecoder, type Admission, type DecoderSpec } from './decode/scheduler.js';
import { PrefixCache } from './decode/prefix-cache.js';
import { PrefixDiskTier } from './decode/prefix-disk-tier.js';
import type { KvStore } from './decode/kv-store.js';
import { PromptDiskStore } from '../../cache/disk-store.js';
import { cacheKeyOf } from '../../cache/cache-key.js';
import type { LogFn } from '../../core/log.js';
import type { CacheShape } from './tensors.js';
import { samplingPlan } from '../sampler.js';
import { batchDecoding, cacheShape, supportsBatchDecoding } from './decode/session-info.js';
import { CoreError } from '../../core/errors.js';
import { generateWithTransformers } from './generate-transformers.js';
import type { LoadedModel } from './loaded-model.js';
import { imageKeyedIds } from './decode/image-keys.js';

const engines = new WeakMap<LoadedModel, SequenceEngine>();
/** The disk tier of each engine that has one, for `flushPromptCache`. */
const diskTiers = new WeakMap<LoadedModel, PrefixDiskTier>();

/** `log`: where the disk tier's warnings go (read at the first call, which makes the engine). */
export function onnxEngine(loaded: LoadedModel, log: LogFn = () => {}): SequenceEngine {
  let engine = engines.get(loaded);
  if (!engine) engines.set(loaded, (engine = makeEngine(loaded, log)));
  return engine;
}

/** Waits for the prompt cache's queued disk writes (before the worker closes: src/worker/entry.ts). */
export async function flushPromptCache(loaded: LoadedModel): Promise<void> {
  await diskTiers.get(loaded)?.flush();
}

/** The prefix cache, behind its disk tier when the settings give it a folder and a budget. */
function promptCache(loaded: LoadedModel, shape: CacheShape, log: LogFn): { memory: PrefixCache; store: KvStore } | undefined {
  const { promptCacheBytes, prefillChunkTokens, promptCacheDir, promptCacheDiskBytes, promptCacheMinTokens } = loaded.engine;
  if (promptCacheBytes <= 0) return undefined;
  // A dynamically quantized graph: reuse only whole, aligned prefill chunks (exact warm = cold).
  const memory = new PrefixCache(shape, promptCacheBytes, loaded.dynamicQuantization ? prefillChunkTokens : 1);
  if (!promptCacheDir || promptCacheDiskBytes <= 0) return { memory, store: memory };
  // What shapes the KV's bytes beyond the model's files: the layout, and the settings that rewrite the graph.
  const { fusedAttention, kvCacheDtype } = loaded.engine;
  const variant = { ...shape, fusedAttention, kvCacheDtype, align: loaded.dynamicQuantization ? prefillChunkTokens : 1 };
  const disk = new PromptDiskStore({ dir: promptCacheDir, budgetBytes: promptCacheDiskBytes, minTokens: promptCacheMinTokens, key: cacheKeyOf({ engine: 'onnx', info: loaded.info, variant }), log });
  const tier = new PrefixDiskTier(memory, disk, shape);
  diskTiers.set(loaded, tier);
  return { memory, store: tier };
}

function makeEngine(loaded: LoadedModel, log: LogFn): SequenceEngine {
  const shape = supportsBatchDecoding(loaded) ? cacheShape(loaded) : undefined;
  if (!shape) {
    return {
      constrains: false,
      lookup: () => null,
      run: async (spec) => {
        // transformers.js generate is fed token ids here: an image would be read as its placeholders.
        if (loaded.vision) {
          const reason = batchDecoding(loaded);
          throw new CoreError('model_unavailable', `The model \`${loaded.info.id}\` cannot be served: its vision-language decoder is not one the batch decoder drives (${reason.ok ? 'unknown' : reason.reason}).`, { model: loaded.info.id });
        }
        return (await generateWithTransformers(loaded, decoderSpec(spec), loaded.eosTokenIds), 1);
      },
    };
  }
  const { prefillChunkTokens } = loaded.engine;
  const passDependent = loaded.dynamicQuantization;
  const caches = promptCache(loaded, shape, log);
  const cache = caches?.memory;
  const decoder = new BatchDecoder(loaded, { prefillChunkTokens, passDependent, ...(caches ? { kvStore: caches.store } : {}) });
  return {
    constrains: true,
    // The admission (its length: the prefix reported), after any wait for a prompt being prefilled
    // that shares a long prefix with this one (./decode/scheduler.ts admit); image placeholders keyed
    // by the images' bytes and grids (./decode/image-keys.ts).
    lookup: (ids, _maxTokens, { cancelled, images } = {}) => (cache ? decoder.admit(imageKeyedIds(ids, images), cancelled) : null),
    // Without a cache the decoder is told there is no prefix; with one, the caller's admission (or
    // undefined: the decoder looks it up at admission).
    run: (spec, prefix) => decoder.run({ ...decoderSpec(spec), ...(cache ? admitted(prefix as Admission | null | undefined) : { prefix: null }) }),
    ...(cache ? { promptCacheStats: () => cache.stats() } : {}),
    ...(loaded.vision ? { checkImages: (images) => decoder.checkImages(images) } : {}),
  };
}

/** What the decoder takes of an admission: its prefix and its place among the holders. */
function admitted(admission: Admission | null | undefined): Pick<DecoderSpec, 'prefix' | 'holder'> {
  if (admission === undefined) return {};
  if (admission === null) return { prefix: null };
  return { prefix: admission.prefix ?? null, holder: admission.holder };
}

/** The neutral spec with its sampling plan built: a seeded generator, and penalties that count the tokens as they come. */
function decoderSpec(spec: SequenceSpec): DecoderSpec {
  const sampling = samplingPlan(spec.sampling, spec.promptIds);
  const { penalties } = sampling;
  return { ...spec, sampling, ...(penalties ? { onToken: (id: number) => (penalties.record(id), spec.onToken(id)) } : {}) };
}

export type { SequencePrefix };

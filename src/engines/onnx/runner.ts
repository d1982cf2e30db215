/**
 * The ONNX engine as the chat layer sees it (../sequence.ts SequenceEngine): one batch decoder per
 * loaded model, with its prefix cache when the budget allows one, or transformers.js generate for
 * the exports the decoder cannot drive (one sequence at a time, no grammar, no cache). Reads its
 * settings from the model's engine settings (prefillChunkTokens, promptCacheBytes).
 *
 * Contract: worker thread; one engine per loaded model, made on its first use and kept with it.
 */
import type { SequenceEngine, SequencePrefix, SequenceSpec } from '../sequence.js';
import { BatchDecoder, type DecoderSpec } from './decode/scheduler.js';
import { PrefixCache } from './decode/prefix-cache.js';
import type { KvPrefix } from './decode/kv-store.js';
import { samplingPlan } from '../sampler.js';
import { cacheShape, supportsBatchDecoding } from './decode/session-info.js';
import { generateWithTransformers } from './generate-transformers.js';
import type { LoadedModel } from './loaded-model.js';

const engines = new WeakMap<LoadedModel, SequenceEngine>();

export function onnxEngine(loaded: LoadedModel): SequenceEngine {
  let engine = engines.get(loaded);
  if (!engine) engines.set(loaded, (engine = makeEngine(loaded)));
  return engine;
}

function makeEngine(loaded: LoadedModel): SequenceEngine {
  const shape = supportsBatchDecoding(loaded) ? cacheShape(loaded) : undefined;
  if (!shape) {
    return {
      constrains: false,
      lookup: () => null,
      run: async (spec) => (await generateWithTransformers(loaded, decoderSpec(spec), loaded.eosTokenIds), 1),
    };
  }
  const { promptCacheBytes, prefillChunkTokens } = loaded.engine;
  // A dynamically quantized graph: reuse only whole, aligned prefill chunks (exact warm = cold).
  const passDependent = loaded.dynamicQuantization;
  const cache = promptCacheBytes > 0 ? new PrefixCache(shape, promptCacheBytes, passDependent ? prefillChunkTokens : 1) : undefined;
  const decoder = new BatchDecoder(loaded, { prefillChunkTokens, passDependent, ...(cache ? { kvStore: cache } : {}) });
  return {
    constrains: true,
    lookup: (ids) => (cache ? (decoder.lookup(ids) ?? null) : null),
    // Without a cache the decoder is told there is no prefix; with one, the caller's lookup (or
    // undefined: the decoder looks it up at admission).
    run: (spec, prefix) => decoder.run({ ...decoderSpec(spec), ...(cache ? (prefix === undefined ? {} : { prefix: prefix as KvPrefix | null }) : { prefix: null }) }),
    ...(cache ? { promptCacheStats: () => cache.stats() } : {}),
  };
}

/** The neutral spec with its sampling plan built: a seeded generator, and penalties that count the tokens as they come. */
function decoderSpec(spec: SequenceSpec): DecoderSpec {
  const sampling = samplingPlan(spec.sampling, spec.promptIds);
  const { penalties } = sampling;
  return { ...spec, sampling, ...(penalties ? { onToken: (id: number) => (penalties.record(id), spec.onToken(id)) } : {}) };
}

export type { SequencePrefix };

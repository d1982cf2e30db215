import { LocalInferenceService, type LocalServiceOptions } from '../../src/inference/service.js';
import { scanModels, type ModelInfo } from '../../src/models/registry.js';
import { MODELS_DIR } from './paths.js';

/** Starts real worker pools on the bundled models (or on `modelsDir`). */
export const TEST_BATCHING = { enabled: true, maxBatchTokens: 16_384, maxWaitMs: 0, truncate: false };

export async function startRealService(
  options: { modelsDir?: string; poolSize?: Record<string, number>; only?: string[]; aliases?: Record<string, string>; batching?: Partial<typeof TEST_BATCHING>;
    requestTimeoutMs?: number; faultInjection?: boolean; maxQueue?: number; generationBatchSize?: number; observer?: LocalServiceOptions['observer'] } = {},
): Promise<LocalInferenceService> {
  const { models, skipped } = scanModels({ modelsDir: options.modelsDir ?? MODELS_DIR, defaultPoolSize: 1 });
  if (skipped.length) throw new Error(`unexpected skipped model folders: ${JSON.stringify(skipped)}`);
  const chosen: ModelInfo[] = models
    .filter((m) => !options.only || options.only.includes(m.id))
    .map((m) => ({ ...m, poolSize: options.poolSize?.[m.id] ?? m.poolSize }));
  return LocalInferenceService.start({ models: chosen, aliases: options.aliases, intraOpThreads: 1, allowSpinning: true, maxQueue: options.maxQueue ?? 256, generationBatchSize: options.generationBatchSize ?? 8, requestTimeoutMs: options.requestTimeoutMs ?? 0, faultInjection: options.faultInjection ?? false, observer: options.observer, embedBatching: { ...TEST_BATCHING, ...options.batching } });
}

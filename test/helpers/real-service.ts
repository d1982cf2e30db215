import type { EngineSettings } from '../../src/core/engine-settings.js';
import type { Fault } from '../../src/core/hooks.js';
import type { ChatRequest } from '../../src/core/types.js';
import { LocalInferenceService, type LifecycleOptions } from '../../src/inference/service.js';
import type { InferenceHooks, InferenceObserver } from '../../src/core/hooks.js';
import type { Logger } from '../../src/core/log.js';
import type { ModelInfo } from '../../src/models/registry.js';
import { scanModelSources } from '../../src/models/sources.js';
import { Counters } from './counters.js';
import { TEST_ENGINE, testEngine } from './engine.js';
import { GEMMA_VISION_MODEL, SERVED_MODELS_DIR, VISION_MODEL } from './paths.js';

/** Starts real worker pools on the bundled models (the GGUF test model's folder under TEST_CHAT_ENGINE=llama; or on `modelsDir`). */
export const TEST_BATCHING = { enabled: true, maxBatchTokens: 16_384, maxWaitMs: 0, truncate: false };


/**
 * Fault injection for tests: a user message starting with "[fault:crash]" (or hang, throw) commits
 * that fault; "[fault:slow-prefill:MS]" holds the worker inside this request's prefill for MS ms.
 */
export function faultByMarker(request: ChatRequest): Fault | undefined {
  const text = request.messages.at(-1)?.content ?? '';
  const slow = /^\[fault:slow-prefill:(\d+)\]/.exec(text);
  if (slow) return { slowPrefillMs: Number(slow[1]) };
  const match = /^\[fault:(crash|hang|throw|abort)\]/.exec(text);
  return match ? (match[1] as Fault) : undefined;
}

export type RealService = LocalInferenceService & { counters: Counters };

export async function startRealService(
  options: {
    modelsDir?: string; /** Also serve the models of this Hugging Face cache folder. */ hfCacheDir?: string; poolSize?: Record<string, number>; only?: string[]; aliases?: Record<string, string>; batching?: Partial<typeof TEST_BATCHING>;
    requestTimeoutMs?: number; faults?: boolean; maxQueue?: number; generationBatchSize?: number; observers?: InferenceObserver[]; logger?: Logger;
    script?: InferenceHooks['script']; promptCacheBytes?: number; lifecycle?: LifecycleOptions; ggufProcess?: boolean;
    /** Engine settings a test sets beyond the ones named above (the prompt cache's disk folder...). */
    engine?: Partial<EngineSettings>;
  } = {},
): Promise<RealService> {
  const { models, skipped } = scanModelSources({ modelsDir: options.modelsDir ?? SERVED_MODELS_DIR, hfCacheDir: options.hfCacheDir ?? null, defaultPoolSize: 1 });
  if (skipped.length) throw new Error(`unexpected skipped model folders: ${JSON.stringify(skipped)}`);
  // The bundled vision models are served where a test names them in `only`: every other server of
  // the suite would start their workers (and load their three graphs) for nothing.
  const chosen: ModelInfo[] = models
    .filter((m) => (options.only ? options.only.includes(m.id) : m.id !== VISION_MODEL && m.id !== GEMMA_VISION_MODEL))
    .map((m) => ({ ...m, poolSize: options.poolSize?.[m.id] ?? m.poolSize }));
  const counters = new Counters();
  const service = await LocalInferenceService.start({
    models: chosen,
    aliases: options.aliases,
    engine: testEngine({ generationBatchSize: options.generationBatchSize ?? TEST_ENGINE.generationBatchSize, promptCacheBytes: options.promptCacheBytes ?? TEST_ENGINE.promptCacheBytes, ...(options.ggufProcess !== undefined ? { ggufProcess: options.ggufProcess } : {}), ...options.engine }),
    maxQueue: options.maxQueue ?? 256,
    requestTimeoutMs: options.requestTimeoutMs ?? 0,
    hooks: { observers: [counters, ...(options.observers ?? [])], fault: options.faults ? faultByMarker : undefined, script: options.script },
    embedBatching: { ...TEST_BATCHING, ...options.batching },
    logger: options.logger,
    ...(options.lifecycle ? { lifecycle: options.lifecycle } : {}),
  });
  return Object.assign(service, { counters });
}

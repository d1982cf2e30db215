import type { FastifyInstance } from 'fastify';
import { buildApp, closeApp } from '../../src/app.js';
import type { EngineSettings } from '../../src/core/engine-settings.js';
import type { InferenceHooks } from '../../src/core/hooks.js';
import { startRealService, type RealService } from './real-service.js';
import type { LifecycleOptions } from '../../src/inference/service.js';
import { createMetrics } from '../../src/metrics.js';

export interface RealServer {
  app: FastifyInstance;
  service: RealService;
  url: string;
  close(): Promise<void>;
}

/** The real app on real workers, listening on a free loopback port. */
export async function startRealServer(
  options: {
    apiKeys?: string[]; aliases?: Record<string, string>; faults?: boolean; modelsDir?: string; hfCacheDir?: string; script?: InferenceHooks['script']; requestTimeoutMs?: number;
    maxQueue?: number; generationBatchSize?: number; only?: string[]; lifecycle?: LifecycleOptions; pingIntervalMs?: number; promptCacheBytes?: number; ggufProcess?: boolean;
    engine?: Partial<EngineSettings>;
  } = {},
): Promise<RealServer> {
  const metrics = createMetrics();
  const service = await startRealService({ ...options, observers: [metrics.observer] });
  const app = await buildApp({
    config: { apiKeys: options.apiKeys ?? [], bodyLimit: 8 * 1024 * 1024, pingIntervalMs: options.pingIntervalMs ?? 60_000 },
    inference: service,
    metrics,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    service,
    url,
    async close() {
      await closeApp(app, 5_000);
      await service.close();
    },
  };
}

/**
 * The prompt's tokens from an Anthropic usage block: the server runs with its prefix cache on (as it
 * ships), so a prompt seen before is counted partly as cache reads (input + creation + read).
 */
export function promptTokens(usage: { input_tokens: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null }): number {
  return usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
}

/**
 * Per-worker metrics (src/metrics.ts): each generation reports its worker's prefix cache running
 * totals and heap in use; the counters grow by the difference per worker, and the gauges sum the
 * workers' latest reports over the model's current load.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GenerationEvent, PromptCacheStats } from '../../src/core/hooks.js';
import { createMetrics } from '../../src/metrics.js';
import type { InferenceService } from '../../src/core/types.js';

const event = (threadId: number, promptCache: PromptCacheStats, heapUsedBytes = 1000): GenerationEvent => ({
  model: 'm', threadId, cancelled: false, promptCache, heapUsedBytes,
  result: { parts: [], text: '', finish: 'eos', stopString: null, inputTokens: 10, outputTokens: 1 },
  timing: { firstTokenMs: null, totalMs: 1, peakBatch: 1 },
});
const stats = (hits: number, tokensReused: number, bytes: number, evictions = 0): PromptCacheStats => ({ hits, misses: 1, tokensReused, bytes, entries: 1, evictions });

describe('prompt cache metrics', () => {
  it('adds each worker\'s growth to the counters and sums the bytes its workers hold', async () => {
    const metrics = createMetrics();
    metrics.observer.generationEnded!('m', event(1, stats(1, 100, 4096)));
    metrics.observer.generationEnded!('m', event(1, stats(3, 250, 8192, 2)));
    metrics.observer.generationEnded!('m', event(2, stats(1, 50, 1024)));
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/prompt_cache_hits_total\{model="m"\} 4\n/);
    expect(text).toMatch(/prompt_cache_misses_total\{model="m"\} 2\n/);
    expect(text).toMatch(/prompt_cache_tokens_reused_total\{model="m"\} 300\n/);
    expect(text).toMatch(/prompt_cache_evictions_total\{model="m"\} 2\n/);
    expect(text).toMatch(/prompt_cache_bytes\{model="m"\} 9216\n/);
    metrics.observer.workerLost!('m', 'crashed');
    expect(await metrics.registry.metrics()).not.toMatch(/prompt_cache_bytes\{model="m"\}/);
  });

  afterEach(() => { vi.useRealTimers(); });

  it('sums each worker\'s latest heap report, and forgets reports from before the model\'s current load', async () => {
    // The clock is set by hand: a report's time decides whether it predates the current load.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const metrics = createMetrics();
    const models = [{ id: 'm', state: 'loaded' as string, loadedAt: 0, queued: 0, ready: true, fileBytes: 1 }];
    metrics.bind({ status: () => ({ models }) } as unknown as InferenceService);
    metrics.observer.generationEnded!('m', event(1, stats(1, 1, 4096), 5000));
    metrics.observer.generationEnded!('m', event(1, stats(1, 1, 4096), 7000));
    metrics.observer.embedBatch!({ model: 'm', requests: 1, tokens: 3, threadId: 2, heapUsedBytes: 3000 });
    expect(await metrics.registry.metrics()).toMatch(/worker_heap_used_bytes\{model="m"\} 10000\n/);
    // Unloaded: no value; loaded again: only reports from the new workers count.
    models[0]!.state = 'unloaded';
    expect(await metrics.registry.metrics()).not.toMatch(/worker_heap_used_bytes\{model="m"\}|prompt_cache_bytes\{model="m"\}/);
    metrics.observer.generationEnded!('m', event(3, stats(1, 1, 2048), 6000));
    models[0]!.state = 'loaded';
    models[0]!.loadedAt = 1_000_010;
    metrics.observer.embedBatch!({ model: 'm', requests: 1, tokens: 3, threadId: 4, heapUsedBytes: 2500 });
    vi.setSystemTime(1_000_020);
    metrics.observer.generationEnded!('m', event(5, stats(1, 1, 1024), 4000));
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/worker_heap_used_bytes\{model="m"\} 4000\n/);
    expect(text).toMatch(/prompt_cache_bytes\{model="m"\} 1024\n/);
  });
});

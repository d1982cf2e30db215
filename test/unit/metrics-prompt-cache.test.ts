/**
 * Prefix cache metrics (src/metrics.ts): each generation reports its worker's running totals; the
 * counters grow by the difference per worker, and the bytes gauge sums the workers' latest reports.
 */
import { describe, expect, it } from 'vitest';
import type { GenerationEvent, PromptCacheStats } from '../../src/core/hooks.js';
import { createMetrics } from '../../src/metrics.js';

const event = (threadId: number, promptCache: PromptCacheStats): GenerationEvent => ({
  model: 'm', threadId, cancelled: false, promptCache,
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
});

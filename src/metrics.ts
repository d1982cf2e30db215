/**
 * Prometheus metrics (prom-client), one registry per server instance. The inference core reports
 * to `observer`, one of the observers in the hooks it is built with; the HTTP layer counts
 * requests; gauges that mirror the service's state (queue depth, readiness) are read at scrape time.
 */
import client from 'prom-client';
import type { InferenceObserver, PromptCacheStats } from './core/hooks.js';
import type { InferenceService } from './core/types.js';

export interface Metrics {
  registry: client.Registry;
  observer: InferenceObserver;
  /** Records one finished HTTP exchange. */
  request(method: string, route: string, status: number, seconds: number): void;
  /** Reads the service's state into the gauges (called at scrape time). */
  bind(service: InferenceService): void;
}

/**
 * The latest value each worker thread reported (KV held, heap in use), summed per model over the
 * workers of the model's current load: a lost worker's reports are forgotten, and so are reports
 * made before the model was last loaded (an unloaded model's workers are gone).
 */
class WorkerReports {
  private readonly latest = new Map<string, { model: string; value: number; at: number }>();

  set(model: string, threadId: number, value: number): void {
    this.latest.set(`${model}\u0000${threadId}`, { model, value, at: Date.now() });
  }

  forget(model: string): void {
    for (const [key, report] of this.latest) if (report.model === model) this.latest.delete(key);
  }

  /** Sums per model; `models`: the service's, when bound (a model not loaded has no sum). */
  sums(models?: ReadonlyArray<{ id: string; state?: string; loadedAt?: number }>): Map<string, number> {
    const current = models && new Map(models.filter((m) => m.state !== 'unloaded' && m.state !== 'loading').map((m) => [m.id, m.loadedAt ?? 0]));
    const sums = new Map<string, number>();
    for (const [key, { model, value, at }] of this.latest) {
      const since = current ? current.get(model) : 0;
      if (since === undefined || at < since) {
        this.latest.delete(key);
        continue;
      }
      sums.set(model, (sums.get(model) ?? 0) + value);
    }
    return sums;
  }
}

export function createMetrics(): Metrics {
  let service: InferenceService | undefined;
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({ name: 'http_requests_total', help: 'HTTP requests by route and status', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds', help: 'Time to the end of the response (streams included)', labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry],
  });
  const tokens = new client.Counter({ name: 'model_tokens_total', help: 'Tokens processed, by model and direction', labelNames: ['model', 'direction'], registers: [registry] });
  const ttft = new client.Histogram({
    name: 'generation_time_to_first_token_seconds', help: 'Worker time from task start to the first generated token', labelNames: ['model'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: [registry],
  });
  const speed = new client.Histogram({
    name: 'generation_tokens_per_second', help: 'Decode speed of finished generations', labelNames: ['model'],
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000], registers: [registry],
  });
  const batchSize = new client.Histogram({ name: 'embedding_batch_requests', help: 'Requests per dispatched embedding batch', labelNames: ['model'], buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256], registers: [registry] });
  const restarts = new client.Counter({ name: 'worker_restarts_total', help: 'Workers replaced after a crash or a hang', labelNames: ['model', 'reason'], registers: [registry] });
  // Prefix cache: each generation's reply carries its worker's running totals; the counters grow by
  // the difference from that worker's previous report (a replacement worker starts from zero).
  const cacheHits = new client.Counter({ name: 'prompt_cache_hits_total', help: 'Prompts whose prefill started after a cached prefix', labelNames: ['model'], registers: [registry] });
  const cacheMisses = new client.Counter({ name: 'prompt_cache_misses_total', help: 'Prompts prefilled in full (no cached prefix)', labelNames: ['model'], registers: [registry] });
  const cacheTokens = new client.Counter({ name: 'prompt_cache_tokens_reused_total', help: 'Prompt tokens whose KV came from the prefix cache', labelNames: ['model'], registers: [registry] });
  const cacheEvictions = new client.Counter({ name: 'prompt_cache_evictions_total', help: 'Prefix cache entries dropped to fit the budget', labelNames: ['model'], registers: [registry] });
  /** Latest totals per model and worker thread (for the counters' differences). */
  const cacheReports = new Map<string, { model: string; stats: PromptCacheStats }>();
  /** A gauge per model summing its workers' latest reports (WorkerReports); returns where reports go. */
  const workerGauge = (name: string, help: string) => {
    const reports = new WorkerReports();
    new client.Gauge({
      name, help, labelNames: ['model'], registers: [registry],
      collect() {
        this.reset();
        for (const [model, value] of reports.sums(service?.status().models)) this.set({ model }, value);
      },
    });
    return reports;
  };
  const cacheBytes = workerGauge('prompt_cache_bytes', 'Bytes of KV the prefix caches hold (last report of each worker)');
  const workerHeaps = workerGauge('worker_heap_used_bytes', "V8 heap in use in the model's worker threads (last report of each worker)");
  const cacheReport = (model: string, threadId: number, stats: PromptCacheStats) => {
    const key = `${model}\u0000${threadId}`;
    const before = cacheReports.get(key)?.stats;
    const delta = (k: 'hits' | 'misses' | 'tokensReused' | 'evictions') => Math.max(0, stats[k] - (before?.[k] ?? 0));
    cacheHits.inc({ model }, delta('hits'));
    cacheMisses.inc({ model }, delta('misses'));
    cacheTokens.inc({ model }, delta('tokensReused'));
    cacheEvictions.inc({ model }, delta('evictions'));
    cacheReports.set(key, { model, stats });
    cacheBytes.set(model, threadId, stats.bytes);
  };

  new client.Gauge({
    name: 'model_queue_depth', help: 'Requests waiting for a worker', labelNames: ['model'], registers: [registry],
    collect() {
      for (const m of service?.status().models ?? []) this.set({ model: m.id }, m.queued);
    },
  });
  new client.Gauge({
    name: 'model_requests_inflight', help: 'Requests holding the model now (running, queued, or waiting for it to load)', labelNames: ['model'], registers: [registry],
    collect() {
      for (const m of service?.status().models ?? []) this.set({ model: m.id }, m.inflight ?? 0);
    },
  });
  new client.Gauge({
    name: 'model_loaded', help: '1 while the model is loaded (its workers hold it), 0 when its next request will load it', labelNames: ['model'], registers: [registry],
    collect() {
      for (const m of service?.status().models ?? []) this.set({ model: m.id }, m.state === 'unloaded' || m.state === 'loading' ? 0 : 1);
    },
  });
  new client.Gauge({
    name: 'model_loaded_bytes', help: 'Bytes of the graph and weights files of a loaded model (each of its workers holds a copy)', labelNames: ['model'], registers: [registry],
    collect() {
      for (const m of service?.status().models ?? []) this.set({ model: m.id }, m.state === 'loaded' || m.state === undefined ? (m.fileBytes ?? 0) : 0);
    },
  });
  new client.Gauge({
    name: 'model_ready', help: '1 when every worker of the model has it loaded', labelNames: ['model'], registers: [registry],
    collect() {
      for (const m of service?.status().models ?? []) this.set({ model: m.id }, m.ready ? 1 : 0);
    },
  });

  return {
    registry,
    observer: {
      generationEnded(model, event) {
        if (!event) return;
        const { timing, result } = event;
        if (event.promptCache) cacheReport(model, event.threadId, event.promptCache);
        workerHeaps.set(model, event.threadId, event.heapUsedBytes);
        tokens.inc({ model, direction: 'input' }, result.inputTokens);
        tokens.inc({ model, direction: 'output' }, result.outputTokens);
        if (timing.firstTokenMs !== null) {
          ttft.observe({ model }, timing.firstTokenMs / 1000);
          const decodeSeconds = (timing.totalMs - timing.firstTokenMs) / 1000;
          if (result.outputTokens > 1 && decodeSeconds > 0) speed.observe({ model }, (result.outputTokens - 1) / decodeSeconds);
        }
      },
      workerLost(model, reason) {
        restarts.inc({ model, reason });
        // The lost worker's cache is gone; the others report theirs again with their next generation.
        cacheBytes.forget(model);
        workerHeaps.forget(model);
      },
      embedBatch({ model, requests: requestCount, tokens: tokenCount, threadId, heapUsedBytes }) {
        batchSize.observe({ model }, requestCount);
        workerHeaps.set(model, threadId, heapUsedBytes);
        tokens.inc({ model, direction: 'input' }, tokenCount);
      },
    },
    request(method, route, status, seconds) {
      requests.inc({ method, route, status: String(status) });
      duration.observe({ route }, seconds);
    },
    bind(s) {
      service = s;
    },
  };
}

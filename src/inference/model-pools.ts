/**
 * What a loaded model holds: its pool of workers, and beside it a tokenizer-only pool (started on
 * first use), an embedding batcher or a rerank batcher. Opened and closed whole by the residency
 * module (./residency.ts); requests reach them through the facade (./service.ts).
 */
import type { ModelInfo } from '../models/registry.js';
import { EmbedBatcher, RerankBatcher, type EmbedBatchingOptions } from '../pool/embed-batcher.js';
import type { ModelPoolOptions, PoolContext } from '../pool/pool.js';
import { openPool } from '../pool/open-pool.js';
import type { InferencePool } from '../pool/pool.js';

/** What every model's pools are opened with. */
export interface PoolSettings {
  options: ModelPoolOptions & { embedBatching: Omit<EmbedBatchingOptions, 'maxQueue'> };
  context: PoolContext;
}

export class ModelPools {
  /** A tokenizer-only pool (token counting and the tokenize routes): see tokenizerPool. */
  private counter?: InferencePool;
  /** Embedding models: gathers concurrent requests into shared forward passes. */
  readonly batcher?: EmbedBatcher;
  /** Rerank models (cross-encoders): the same for their (query, document) pairs. */
  readonly ranker?: RerankBatcher;
  /** Where its workers run it (the first worker's load says). */
  device?: string;
  /** A GGUF chat model: the KV bytes of all its workers' sequences, and their layout in one worker. */
  kv?: { bytes: number; layout: string };
  /** Unix ms: when its workers had all loaded it. */
  at = 0;

  private constructor(
    readonly pool: InferencePool,
    private readonly settings: PoolSettings,
  ) {
    const { task } = pool.model;
    const batching = { ...settings.options.embedBatching, maxQueue: settings.options.maxQueue };
    if (task === 'embedding') this.batcher = new EmbedBatcher(pool, batching);
    if (task === 'rerank') this.ranker = new RerankBatcher(pool, batching);
  }

  /** Starts the model's workers and resolves once every one has loaded it; closed again if any fails. */
  static async open(info: ModelInfo, settings: PoolSettings): Promise<ModelPools> {
    const started = Date.now();
    const pools = new ModelPools(openPool(info, settings.options, settings.context), settings);
    try {
      const { notes, device, kv } = await pools.pool.start();
      pools.device = device;
      if (kv) pools.kv = kv;
      const { id, task, dtype, poolSize: workers } = info;
      const served = kv ? { contextLength: info.contextLength, kvBytes: kv.bytes, sequences: kv.layout } : {};
      settings.context.logger.info({ model: id, task, engine: info.engine, device, format: info.gguf ? (info.gguf.quant ?? 'gguf') : dtype, workers, ...served, ms: Date.now() - started, notes }, `model ${id} loaded`);
    } catch (error) {
      await pools.close();
      throw error;
    }
    pools.at = Date.now();
    return pools;
  }

  /** Requests waiting: for a worker, or in a batcher for their batch. */
  get queued(): number {
    return this.pool.queueSize + (this.batcher?.queued ?? 0) + (this.ranker?.queued ?? 0);
  }

  /**
   * The model's tokenizer-only pool, so tokenizing never waits behind generations or embeddings;
   * started on first use (a tokenizer's objects cost tens of MiB per worker; many clients never
   * count). Until it is up, the model's own pool serves.
   */
  tokenizerPool(): InferencePool {
    if (!this.counter) {
      const { options, context } = this.settings;
      const counter = openPool(this.pool.model, options, context, 'tokenizer');
      this.counter = counter;
      void counter.start().catch((error: unknown) => context.logger.error({ err: error, model: counter.model.id }, 'token counting pool failed to start'));
    }
    return this.counter.ready ? this.counter : this.pool;
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.counter?.close()]);
  }
}

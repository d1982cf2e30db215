/**
 * Dynamic batching of embedding requests for one model (runs on the event-loop thread); a
 * cross-encoder's rerank requests are gathered the same way (DynamicBatcher with the pairs' job).
 *
 * Requests queue here while every worker of the model is busy; when a worker frees up, everything
 * waiting (up to a token budget) goes to it as one task, and the worker runs it in as few forward
 * passes as the budget allows. A lone request waits only for the end of the current event-loop
 * turn (or `maxWaitMs` if set), so it pays almost nothing for batching, and load turns into larger
 * batches by itself. The queue is bounded: beyond `maxQueue` waiting requests, new ones are refused
 * as overloaded at once.
 */
import { CoreError, overloaded, type CoreErrorData } from '../core/errors.js';
import type { EmbedResult, RerankRequest, RerankResult } from '../core/types.js';
import type { EmbedBatchItem } from '../core/types.js';
import type { InferencePool } from './pool.js';

export interface EmbedBatchingOptions {
  /** Off: every request is its own worker task (the baseline the benchmark compares against). */
  enabled: boolean;
  /** Padded tokens per forward pass, and the estimated tokens gathered into one task. */
  maxBatchTokens: number;
  /** How long a request may wait for others while a worker is idle. */
  maxWaitMs: number;
  /** Cut over-long inputs to the context instead of refusing them. */
  truncate: boolean;
  maxQueue: number;
}

interface Pending<Item, Result> {
  item: Item;
  estimatedTokens: number;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** Each request of a gathered batch succeeds or fails on its own. */
export type BatchItemResult<Result> = { ok: true; value: Result } | { ok: false; error: CoreErrorData };

/** What one kind of request is to the batcher: a cheap token estimate, and one worker task for a batch of them. */
export interface BatchJob<Item, Result> {
  estimate(item: Item): number;
  run(items: Item[]): Promise<Array<BatchItemResult<Result>>>;
}

/** Cheap token estimate for gathering (the worker cuts forward passes by the real counts). */
const textTokens = (text: string) => Math.ceil(text.length / 4) + 2;

function estimate(item: EmbedBatchItem): number {
  return item.inputs.reduce((sum, input) => sum + (typeof input === 'string' ? textTokens(input) : input.length), 0);
}

export class DynamicBatcher<Item, Result> {
  private readonly queue: Array<Pending<Item, Result>> = [];
  private inflight = 0;
  private scheduled = false;

  constructor(
    private readonly pool: InferencePool,
    private readonly options: EmbedBatchingOptions,
    private readonly job: BatchJob<Item, Result>,
  ) {}

  submit(item: Item): Promise<Result> {
    if (this.queue.length >= this.options.maxQueue + this.pool.size) {
      return Promise.reject(overloaded(this.pool.model.id));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ item, estimatedTokens: this.job.estimate(item), resolve, reject });
      this.pump();
    });
  }

  get queued(): number {
    return this.queue.length;
  }

  /**
   * Dispatches when a worker is free, but never synchronously: requests that arrive in the same
   * turn of the event loop (one poll phase of socket reads) join the same batch. With
   * `maxWaitMs` > 0 an idle worker also waits that long for company.
   */
  private pump(): void {
    if (this.scheduled || this.queue.length === 0 || this.inflight >= this.pool.size) return;
    this.scheduled = true;
    const go = () => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.inflight < this.pool.size) this.dispatch(this.take());
    };
    if (this.options.enabled && this.options.maxWaitMs > 0) setTimeout(go, this.options.maxWaitMs);
    else setImmediate(go);
  }

  /** The next batch: at least one request, then more while they fit the budget. */
  private take(): Array<Pending<Item, Result>> {
    if (!this.options.enabled) return this.queue.splice(0, 1);
    let tokens = this.queue[0]!.estimatedTokens;
    let count = 1;
    while (count < this.queue.length && tokens + this.queue[count]!.estimatedTokens <= this.options.maxBatchTokens) {
      tokens += this.queue[count]!.estimatedTokens;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private dispatch(batch: Array<Pending<Item, Result>>): void {
    if (batch.length === 0) return;
    this.inflight++;
    const settle = (apply: () => void) => {
      // Start the next batch before answering this one: the worker computes while the event loop
      // serialises and writes the responses.
      this.inflight--;
      this.pump();
      apply();
    };
    this.job.run(batch.map((p) => p.item)).then(
      (results) =>
        settle(() =>
          results.forEach((result, i) => {
            if (result.ok) batch[i]!.resolve(result.value);
            else batch[i]!.reject(CoreError.from(result.error));
          }),
        ),
      (error) => settle(() => batch.forEach((p) => p.reject(error))),
    );
  }
}

/** Embedding requests gathered into shared worker tasks and forward passes. */
export class EmbedBatcher extends DynamicBatcher<EmbedBatchItem, EmbedResult> {
  constructor(pool: InferencePool, options: EmbedBatchingOptions) {
    super(pool, options, {
      estimate,
      run: async (items) =>
        (await pool.embedBatch(items, { maxBatchTokens: options.maxBatchTokens, truncate: options.truncate })).map((r) =>
          r.ok ? { ok: true as const, value: { vectors: r.vectors, promptTokens: r.promptTokens } } : r,
        ),
    });
  }

  embed(item: EmbedBatchItem): Promise<EmbedResult> {
    return this.submit(item);
  }
}

/** A cross-encoder's rerank requests gathered the same way: their pairs share forward passes. */
export class RerankBatcher extends DynamicBatcher<Omit<RerankRequest, 'model'>, RerankResult> {
  constructor(pool: InferencePool, options: EmbedBatchingOptions) {
    super(pool, options, {
      estimate: (item) => item.documents.reduce((sum, d) => sum + textTokens(item.query) + textTokens(d), 0),
      run: (items) => pool.rerankBatch(items, { maxBatchTokens: options.maxBatchTokens, truncate: options.truncate }),
    });
  }
}

/**
 * Dynamic batching of embedding requests for one model (runs on the event-loop thread).
 *
 * Requests queue here while every worker of the model is busy; when a worker frees up, everything
 * waiting (up to a token budget) goes to it as one task, and the worker runs it in as few forward
 * passes as the budget allows. A lone request waits only for the end of the current event-loop
 * turn (or `maxWaitMs` if set), so it pays almost nothing for batching, and load turns into larger
 * batches by itself. The queue is bounded: beyond `maxQueue` waiting requests, new ones are refused
 * as overloaded at once.
 */
import { CoreError, overloaded } from '../core/errors.js';
import type { EmbedResult } from '../core/types.js';
import type { EmbedBatchItem } from '../core/types.js';
import type { ModelPool } from './model-pool.js';

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

interface Pending {
  item: EmbedBatchItem;
  estimatedTokens: number;
  resolve: (result: EmbedResult) => void;
  reject: (error: unknown) => void;
}

/** Cheap token estimate for gathering (the worker cuts forward passes by the real counts). */
function estimate(item: EmbedBatchItem): number {
  return item.inputs.reduce((sum, input) => sum + (typeof input === 'string' ? Math.ceil(input.length / 4) + 2 : input.length), 0);
}

export class EmbedBatcher {
  private readonly queue: Pending[] = [];
  private inflight = 0;
  private scheduled = false;

  constructor(
    private readonly pool: ModelPool,
    private readonly options: EmbedBatchingOptions,
  ) {}

  embed(item: EmbedBatchItem): Promise<EmbedResult> {
    if (this.queue.length >= this.options.maxQueue + this.pool.size) {
      return Promise.reject(overloaded(this.pool.model.id));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ item, estimatedTokens: estimate(item), resolve, reject });
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
  private take(): Pending[] {
    if (!this.options.enabled) return this.queue.splice(0, 1);
    let tokens = this.queue[0]!.estimatedTokens;
    let count = 1;
    while (count < this.queue.length && tokens + this.queue[count]!.estimatedTokens <= this.options.maxBatchTokens) {
      tokens += this.queue[count]!.estimatedTokens;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private dispatch(batch: Pending[]): void {
    if (batch.length === 0) return;
    this.inflight++;
    const settle = (apply: () => void) => {
      // Start the next batch before answering this one: the worker computes while the event loop
      // serialises and writes the responses.
      this.inflight--;
      this.pump();
      apply();
    };
    this.pool.embedBatch(batch.map((p) => p.item), { maxBatchTokens: this.options.maxBatchTokens, truncate: this.options.truncate }).then(
      (results) =>
        settle(() =>
          results.forEach((result, i) => {
            if (result.ok) batch[i]!.resolve({ vectors: result.vectors, promptTokens: result.promptTokens });
            else batch[i]!.reject(CoreError.from(result.error));
          }),
        ),
      (error) => settle(() => batch.forEach((p) => p.reject(error))),
    );
  }
}

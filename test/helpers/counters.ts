/**
 * A test observer (InferenceHooks.observers): counts what the inference core reports, per model.
 */
import type { GenerationEvent, InferenceObserver } from '../../src/core/hooks.js';

export interface ModelCounts {
  /** Generations admitted and not yet ended. */
  active: number;
  completed: number;
  cancelled: number;
  /** Output tokens of the most recent cancelled generation: how far it got before it stopped. */
  lastCancelledOutputTokens: number | null;
  /** Most generations decoded together in one step so far. */
  peakBatch: number;
  /** Generate and embed tasks completed, by worker thread id. */
  tasksByThread: Map<number, number>;
  /** Requests per dispatched embedding batch, in order. */
  embedBatchSizes: number[];
}

export class Counters implements InferenceObserver {
  private readonly models = new Map<string, ModelCounts>();

  of(model: string): ModelCounts {
    let counts = this.models.get(model);
    if (!counts) {
      counts = { active: 0, completed: 0, cancelled: 0, lastCancelledOutputTokens: null, peakBatch: 0, tasksByThread: new Map(), embedBatchSizes: [] };
      this.models.set(model, counts);
    }
    return counts;
  }

  generationStarted(model: string): void {
    this.of(model).active++;
  }

  generationEnded(model: string, event: GenerationEvent | undefined): void {
    const counts = this.of(model);
    counts.active--;
    if (!event) return;
    counts.completed++;
    counts.peakBatch = Math.max(counts.peakBatch, event.timing.peakBatch);
    if (event.cancelled) {
      counts.cancelled++;
      counts.lastCancelledOutputTokens = event.result.outputTokens;
    }
    this.task(counts, event.threadId);
  }

  embedBatch({ model, requests, threadId }: { model: string; requests: number; threadId: number }): void {
    const counts = this.of(model);
    counts.embedBatchSizes.push(requests);
    this.task(counts, threadId);
  }

  private task(counts: ModelCounts, threadId: number): void {
    counts.tasksByThread.set(threadId, (counts.tasksByThread.get(threadId) ?? 0) + 1);
  }
}

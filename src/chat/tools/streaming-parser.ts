/**
 * What every tool-call parser shares: it is fed the answer's deltas and returns the events each one
 * completes; `finish` flushes what it held (an open call, held text). A format's parser implements
 * `feed` and pushes its events to `out`. Contract: one parser per answer, not shared; no push after finish.
 */
import type { ToolCallParser, ToolEvent } from './types.js';

export abstract class StreamingParser implements ToolCallParser {
  protected out: ToolEvent[] = [];
  private finished = false;

  push(text: string): ToolEvent[] {
    if (this.finished) throw new Error(`${this.constructor.name}.push after finish`);
    this.feed(text, false);
    return this.flush();
  }

  finish(): ToolEvent[] {
    if (this.finished) return [];
    this.feed('', true);
    this.finished = true;
    return this.flush();
  }

  /** Reads `text` (`final`: the answer ended, nothing more will come). */
  protected abstract feed(text: string, final: boolean): void;

  private flush(): ToolEvent[] {
    const out = this.out;
    this.out = [];
    return out;
  }
}

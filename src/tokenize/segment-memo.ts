/**
 * The prompt encoder's memory of segments it has tokenized (prompt-encoder.ts): a segment's text ->
 * its tokens, least recently used first out, within a byte budget. An agent resends its whole
 * conversation every turn (Claude Code's first request alone is ~77,000 characters of system prompt
 * and tools, 18.7k tokens, ~0.1 s to tokenize on a loaded machine), and a chat template puts each
 * message between special tokens, so the segments of the turn before come back whole.
 *
 * Bytes are an estimate of what an entry holds: its key (two per UTF-16 unit) and one reference per
 * token (the tokens are the vocabulary's own strings).
 */

/** Bytes an entry is counted at beyond its key and tokens (the Map's entry, the array's header). */
const ENTRY_OVERHEAD = 96;

export class SegmentMemo {
  private readonly map = new Map<string, readonly string[]>();
  private held = 0;

  constructor(readonly budget: number) {}

  /** Bytes held now (never more than the budget). */
  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.map.size;
  }

  /** The segment's tokens, made the most recently used; undefined when not held. */
  get(key: string): readonly string[] | undefined {
    const tokens = this.map.get(key);
    if (tokens !== undefined) {
      this.map.delete(key);
      this.map.set(key, tokens);
    }
    return tokens;
  }

  /** Keeps the segment's tokens, dropping the least recently used until they fit; one larger than the whole budget is not kept. */
  set(key: string, tokens: readonly string[]): void {
    const cost = bytesOf(key, tokens);
    if (cost > this.budget) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.map.delete(key);
      this.held -= bytesOf(key, old);
    }
    for (const [oldest, value] of this.map) {
      if (this.held + cost <= this.budget) break;
      this.map.delete(oldest);
      this.held -= bytesOf(oldest, value);
    }
    this.map.set(key, tokens);
    this.held += cost;
  }

  /** Every entry, least recently used first (the order `set` in turn restores). */
  entries(): IterableIterator<[string, readonly string[]]> {
    return this.map.entries();
  }

  clear(): void {
    this.map.clear();
    this.held = 0;
  }
}

const bytesOf = (key: string, tokens: readonly string[]) => 2 * key.length + 8 * tokens.length + ENTRY_OVERHEAD;

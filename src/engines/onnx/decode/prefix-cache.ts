/**
 * The prefix cache: a KvStore (./kv-store.ts) that keeps the KV of finished sequences within a byte
 * budget and hands a new prompt the KV of its longest common token prefix with any of them.
 *
 * Entries are whole sequences (prompt + fed-back generated tokens) with their KV, one per finished
 * sequence; a lookup takes the token-level longest common prefix over every entry, so a conversation
 * whose template rewrites an earlier turn still reuses what matches up to the rewrite. A finished
 * sequence that extends an entry replaces it (only its new tokens are copied out of the batch); one
 * that is a prefix of an entry only refreshes that entry. Past the budget the least recently used
 * entries (looked up or stored) are dropped.
 *
 * Keys: one cache serves one loaded model in one worker (one decoder), so the model is implicit;
 * the KV of a token depends on the tokens before it and their positions (0..n-1; on a Qwen-VL model,
 * M-RoPE positions, which depend on the tokens and images before them alone; on Gemma 3, 1..n), which the token key
 * covers: a prompt's images are keyed by their bytes and grids in it (./image-keys.ts). Nothing else
 * (sampling, logits masks) reaches the KV.
 *
 * Why a scan and not a radix tree: whole-sequence entries keep each entry's KV one contiguous array
 * per layer, as the decoder wants it, and a lookup compares tokens only up to each entry's first
 * difference (a few dozen long conversations within a realistic budget: microseconds next to a
 * forward pass; ten thousand short chats sharing a 20-token system prompt: 0.3 ms, measured).
 * Recency is the Set's order, so a use and an eviction cost O(1), not a scan.
 *
 * Contract: as KvStore's (worker thread, synchronous, arrays never written after they cross).
 */
import type { PromptCacheStats } from '../../../core/hooks.js';
import { extractRow } from './kv-batch.js';
import type { KvPrefix, KvStore } from './kv-store.js';
import { kvLike, type CacheShape, type KvArray } from '../tensors.js';

export type PrefixCacheStats = PromptCacheStats;

interface Entry {
  tokens: number[];
  /** Leading tokens whose KV is what a cold prefill computes: the most a lookup hands out. */
  exact: number;
  /** Keys then values per layer, each [1, kvHeads, tokens.length, headDim]. */
  kv: KvArray[];
  bytes: number;
}

/** KV bytes one token takes in a model of this shape (keys and values of every layer, 4 bytes each or 2 for float16). */
export const kvBytesPerToken = (shape: CacheShape) => shape.layers * 2 * shape.kvHeads * shape.headDim * (shape.dtype === 'float16' ? 2 : 4);

const commonPrefix = (a: readonly number[], b: readonly number[], limit: number) => {
  let n = 0;
  while (n < limit && a[n] === b[n]) n++;
  return n;
};

export class PrefixCache implements KvStore {
  /** In order of last use, least recent first: eviction takes the first, a use moves an entry last. */
  private readonly entries = new Set<Entry>();
  private held = 0;
  private readonly counts = { hits: 0, misses: 0, tokensReused: 0, evictions: 0 };

  constructor(
    private readonly shape: CacheShape,
    /** Most bytes of KV held at once; 0 caches nothing. */
    private readonly budgetBytes: number,
    /**
     * Prefixes handed out are a multiple of this many tokens: the prefill chunk, on a graph whose KV
     * depends on what shared its pass, so the rest of the prompt is cut into the same passes as cold.
     */
    private readonly align = 1,
  ) {}

  stats(): PrefixCacheStats {
    return { ...this.counts, bytes: this.held, entries: this.entries.size };
  }

  lookup(tokens: readonly number[]): KvPrefix | undefined {
    const best = this.longest(tokens, tokens.length - 1, true);
    const length = best ? best.length - (best.length % this.align) : 0;
    if (!best || length === 0) {
      this.counts.misses++;
      return undefined;
    }
    const { entry } = best;
    this.touch(entry);
    this.counts.hits++;
    this.counts.tokensReused += length;
    const stored = entry.tokens.length;
    // The whole entry: its arrays as they are (nobody writes them); a part of it: a copy of that part.
    const kv = length === stored ? entry.kv : extractRow(this.shape, { kv: entry.kv, columns: stored }, { index: 0, length: stored, from: 0, to: length });
    return { length, kv };
  }

  store(tokens: readonly number[], readKv: (from?: number) => KvArray[], exact = tokens.length): void {
    const n = tokens.length;
    if (n === 0 || this.budgetBytes <= 0 || n * kvBytesPerToken(this.shape) > this.budgetBytes) return;
    const best = this.longest(tokens, n);
    if (best && best.length === n) {
      // Already held, as this entry or a prefix of it.
      this.touch(best.entry);
      return;
    }
    let kv: KvArray[];
    if (best && best.length === best.entry.tokens.length) {
      // Extends an entry: copy only the new tokens, and let this sequence replace it.
      kv = this.concat(best.entry.kv, best.length, readKv(best.length), n - best.length);
      this.drop(best.entry);
    } else {
      kv = readKv();
    }
    const bytes = kv.reduce((sum, a) => sum + a.byteLength, 0);
    this.entries.add({ tokens: [...tokens], exact: Math.min(exact, n), kv, bytes });
    this.held += bytes;
    this.evict();
  }

  /** How many tokens `lookup` would hand out for `tokens` now (nothing counted, nothing touched). */
  reusable(tokens: readonly number[]): number {
    const best = this.longest(tokens, tokens.length - 1, true);
    return best ? best.length - (best.length % this.align) : 0;
  }

  /**
   * Takes in a whole entry from elsewhere (the disk: ./prefix-disk-tier.ts), as the most recently
   * used; the arrays are the cache's from then on. False when it does not fit the budget at all.
   */
  adopt(tokens: readonly number[], kv: KvArray[], exact: number): boolean {
    const bytes = kv.reduce((sum, a) => sum + a.byteLength, 0);
    if (tokens.length === 0 || bytes > this.budgetBytes) return false;
    const held = this.longest(tokens, tokens.length);
    if (held && held.length === held.entry.tokens.length) this.drop(held.entry);
    this.entries.add({ tokens: [...tokens], exact: Math.min(exact, tokens.length), kv, bytes });
    this.held += bytes;
    this.evict();
    return true;
  }

  /** The entry holding exactly `tokens` (what `store` just kept), if held: its tokens, exact part and KV, never to be written. */
  holding(tokens: readonly number[]): { tokens: readonly number[]; exact: number; kv: readonly KvArray[] } | undefined {
    const best = this.longest(tokens, tokens.length);
    return best && best.length === tokens.length && best.entry.tokens.length === tokens.length ? best.entry : undefined;
  }

  /** The entry sharing the longest prefix with `tokens` (at most `limit` tokens; `usable`: within its exact part). */
  private longest(tokens: readonly number[], limit: number, usable = false): { entry: Entry; length: number } | undefined {
    let best: { entry: Entry; length: number } | undefined;
    for (const entry of this.entries) {
      const length = commonPrefix(entry.tokens, tokens, Math.min(limit, usable ? entry.exact : entry.tokens.length));
      if (length > (best?.length ?? 0) || (best && length === best.length && entry.tokens.length < best.entry.tokens.length)) best = { entry, length };
    }
    return best;
  }

  /** [1, kvHeads, a + b, headDim] arrays: `head` (a columns) then `tail` (b columns), per array. */
  private concat(head: readonly KvArray[], a: number, tail: readonly KvArray[], b: number): KvArray[] {
    const { kvHeads, headDim } = this.shape;
    return head.map((h, t) => {
      const out = kvLike(h, kvHeads * (a + b) * headDim) as Float32Array; // of h's type: float32 values or half bits
      const tl = tail[t]! as Float32Array;
      for (let k = 0; k < kvHeads; k++) {
        out.set(h.subarray(k * a * headDim, (k + 1) * a * headDim), k * (a + b) * headDim);
        out.set(tl.subarray(k * b * headDim, (k + 1) * b * headDim), (k * (a + b) + a) * headDim);
      }
      return out;
    });
  }

  private touch(entry: Entry): void {
    this.entries.delete(entry);
    this.entries.add(entry);
  }

  private drop(entry: Entry): void {
    this.entries.delete(entry);
    this.held -= entry.bytes;
  }

  /** Drops least recently used entries until the budget holds. */
  private evict(): void {
    for (const oldest of this.entries) {
      if (this.held <= this.budgetBytes) break;
      this.drop(oldest);
      this.counts.evictions++;
    }
  }
}

/**
 * The KV store seam: where the batch decoder asks for a cached prefix of a new prompt and hands the
 * KV of every sequence that finished. A prefix cache (radix tree or hashed blocks, a byte budget,
 * LRU eviction) implements it; `noKvStore`, the default, caches nothing and costs nothing: the
 * decoder then never extracts KV.
 *
 * Layout: a KV list is keys then values per layer (2 x layers arrays), each [1, kvHeads, length,
 * headDim] of the graph's KV type (float32, or float16 as half bits in a Uint16Array: ../tensors.ts
 * KvArray), the layout of the export's past_key_values / present tensors (../tensors.ts CacheShape).
 *
 * Contract: called on the worker thread that owns the decoder, synchronously, between forward
 * passes; one store serves one model (one decoder). Arrays cross in one direction only and are never
 * written after crossing: the decoder reads the arrays `lookup` returns (as the prefill's
 * past_key_values, until that prefill has run) and never writes them, so the store must not write
 * into them either (it may drop them at any time: nothing is freed by hand). The arrays `readKv`
 * returns are fresh copies the store owns from then on.
 */

import type { KvArray } from '../tensors.js';

/** A cached prefix of a prompt: its first `length` tokens and their KV. */
export interface KvPrefix {
  /** 1 <= length <= tokens.length - 1, so at least one token is left to prefill. */
  length: number;
  /** 2 x layers arrays (keys then values per layer), each [1, kvHeads, length, headDim]. */
  kv: readonly KvArray[];
}

export interface KvStore {
  /**
   * The longest cached prefix of `tokens`, at most tokens.length - 1 tokens long, or undefined.
   * Called before each prefill; a result outside the contract fails that sequence.
   */
  lookup(tokens: readonly number[]): KvPrefix | undefined;
  /** How many tokens `lookup` would hand out for `tokens` now, about (nothing counted, nothing read). */
  reusable?(tokens: readonly number[]): number;
  /**
   * After a sequence ended normally (not cancelled, not failed): `tokens` are every token whose KV
   * the sequence holds (the prompt and the generated tokens that were fed back; not the last
   * generated one). `readKv(from)` copies the KV of tokens [from, tokens.length) out of the batch,
   * [1, kvHeads, tokens.length - from, headDim] per array; it is valid only during this call, and
   * costs a copy, so a store that already holds the prefix asks only for the new part, and one that
   * does not want this sequence does not call it. A throw fails that sequence (after its tokens were
   * streamed). `exact`: how many leading tokens have the KV a cold prefill of them would compute
   * (fewer than all on a graph whose KV depends on what shared its forward pass); a later prompt may
   * be handed at most those. Default: all of them.
   */
  store(tokens: readonly number[], readKv: (from?: number) => KvArray[], exact?: number): void;
  /**
   * As `store`, for a prompt's first tokens part way through its prefill or at its end, which other
   * requests wait for or may share now (the scheduler's shared prefixes: ../../prefix-waits.ts); the
   * sequence's own `store` at its end follows and extends them. A store with a slower tier keeps
   * these in memory only. Absent: `store` is called.
   */
  share?(tokens: readonly number[], readKv: (from?: number) => KvArray[], exact?: number): void;
}

/** Caches nothing: every prompt is prefilled in full, and KV is never copied out of the batch. */
export const noKvStore: KvStore = {
  lookup: () => undefined,
  store: () => {},
};

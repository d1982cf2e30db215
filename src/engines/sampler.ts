/**
 * Choosing the next token from one row of logits: greedy (argmax), or temperature / top-k / top-p
 * sampling, under an optional per-sequence logits mask.
 *
 * The mask is the seam for grammar-constrained decoding: a packed bitset over the vocabulary in
 * XGrammar's layout (token i is allowed when bit i & 31 of word i >> 5 is set). Disallowed tokens
 * are never chosen: top-k and top-p apply to the allowed tokens only, as after XGrammar's
 * apply_token_bitmask (disallowed logits set to -inf). Tokens beyond the mask's last word are
 * disallowed (a tokenizer's vocabulary may be shorter than the logits row); bits beyond the row are
 * ignored. A mask that allows no token of the row throws an internal CoreError (reason `logits_mask_empty`): a grammar that allows nothing is a bug, not a request error.
 *
 * Candidates are ordered as a stable sort by descending logit orders them (ties: lower id first),
 * as before; the selection avoids that sort (./top-tokens.ts).
 *
 * Contract: worker thread, synchronous. `logits` and `mask` are only read. The scratch buffers are
 * module state reused by every call (safe: nothing here awaits).
 */
import { CoreError } from '../core/errors.js';
import { allows, type LogitsMask, type SamplingSettings } from './sequence.js';
import { heapTop, orderKeys, radixCut, shorter, type Cut } from './top-tokens.js';

export interface SamplingPlan {
  doSample: boolean;
  temperature: number;
  /** 0: no top-k limit. */
  topK: number;
  /** 1: no nucleus limit. */
  topP: number;
  /** Uniform numbers in [0, 1) for sampling; Math.random when absent (seeded: seededRandom). */
  random?: () => number;
  /** Presence and frequency penalties over the tokens generated so far. */
  penalties?: TokenPenalties;
}

export interface PenaltyOptions {
  /** Subtracted once from the logit of every generated token (OpenAI's presence_penalty). */
  presence?: number;
  /** Subtracted once per time a token was generated (OpenAI's frequency_penalty). */
  frequency?: number;
  /** Hugging Face's repetition penalty over prompt and generated tokens (1: none). */
  repetition?: number;
}

/**
 * Penalties on tokens already seen, applied in vLLM's order. The repetition penalty (Hugging Face's,
 * over the prompt's and the generated tokens) divides a positive logit by it and multiplies a
 * negative one. Then OpenAI's presence and frequency penalties, over the generated tokens only (as
 * vLLM and OpenAI's own description, "the text so far", have it): the logit is lowered by `presence`
 * once and by `frequency` for each time the token was generated (negative values raise it).
 */
export class TokenPenalties {
  private readonly counts = new Map<number, number>();
  private readonly presence: number;
  private readonly frequency: number;
  private readonly repetition: number;
  /** Prompt tokens, for the repetition penalty (empty without one). */
  private readonly prompt: ReadonlySet<number>;

  constructor(options: PenaltyOptions, prompt: readonly number[] = []) {
    this.presence = options.presence ?? 0;
    this.frequency = options.frequency ?? 0;
    this.repetition = options.repetition ?? 1;
    this.prompt = this.repetition === 1 ? new Set() : new Set(prompt);
  }

  /** A token was generated. */
  record(id: number): void {
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
  }

  /** Applies the penalties to a logits row in place; returns what puts the row back exactly as it was. */
  apply(logits: Float32Array): () => void {
    const ids: number[] = [];
    const before: number[] = [];
    const touch = (id: number) => {
      ids.push(id);
      before.push(logits[id]!);
    };
    if (this.repetition !== 1) for (const id of this.prompt) if (id < logits.length && !this.counts.has(id)) touch(id);
    for (const id of this.counts.keys()) if (id < logits.length) touch(id);
    if (this.repetition !== 1) for (const id of ids) logits[id] = logits[id]! > 0 ? logits[id]! / this.repetition : logits[id]! * this.repetition;
    for (const [id, n] of this.counts) if (id < logits.length) logits[id] = logits[id]! - this.presence - this.frequency * n;
    return () => ids.forEach((id, i) => (logits[id] = before[i]!));
  }
}

/**
 * Up to this k, top-k is a bounded heap (about 1 ms at k 1024 on a 152k row); above it, and for
 * top-p without k, radix selection (about 4 ms, whatever k; scripts/bench/sampler.ts).
 */
export const HEAP_TOP_K = 1024;

let ids = new Int32Array(0);
let keys = new Uint32Array(0);
let weights = new Float64Array(0);

function scratchFor(vocab: number): void {
  if (ids.length >= vocab) return;
  ids = new Int32Array(vocab);
  keys = new Uint32Array(vocab);
  weights = new Float64Array(vocab);
}

const emptyMask = () =>
  new CoreError('internal', 'the logits mask allows no token of the vocabulary', { reason: 'logits_mask_empty' });

/** Fills ids with the tokens the mask allows, in increasing order; their count (never 0). */
function allowedIds(vocab: number, mask: LogitsMask): number {
  scratchFor(vocab);
  let n = 0;
  const words = Math.min(mask.length, Math.ceil(vocab / 32));
  for (let w = 0; w < words; w++) {
    const bits = mask[w]! | 0;
    if (bits === 0) continue;
    const base = w * 32;
    if (bits === -1 && base + 32 <= vocab) {
      // A whole word allowed (inside a grammar's free string, most are): no bit walking.
      for (let j = 0; j < 32; j++) ids[n++] = base + j;
      continue;
    }
    for (let rest = bits; rest !== 0; rest &= rest - 1) {
      const id = base + 31 - Math.clz32(rest & -rest);
      if (id >= vocab) break;
      ids[n++] = id;
    }
  }
  if (n === 0) throw emptyMask();
  return n;
}

function argmax(logits: Float32Array, mask: LogitsMask | undefined): number {
  let best = 0;
  let top = logits[0]!;
  for (let i = 1; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > top) {
      top = v;
      best = i;
    }
  }
  // The first argmax overall, when the mask allows it, is the first argmax of the allowed tokens.
  if (!mask || allows(mask, best)) return best;
  const words = Math.min(mask.length, Math.ceil(logits.length / 32));
  best = -1;
  top = -Infinity;
  for (let w = 0; w < words; w++) {
    for (let rest = mask[w]! | 0; rest !== 0; rest &= rest - 1) {
      const id = w * 32 + 31 - Math.clz32(rest & -rest);
      if (id >= logits.length) break;
      const v = logits[id]!;
      if (best < 0 || v > top) {
        top = v;
        best = id;
      }
    }
  }
  if (best < 0) throw emptyMask();
  return best;
}

/** The tokens sampling chooses from, with unnormalised weights; views of scratch, valid until the next call. */
export interface Candidates {
  ids: Int32Array;
  weights: Float64Array;
  count: number;
}

/** Small k: the top k sorted, then the nucleus cut along them (the former sampler's arithmetic). */
function sortedCandidates(logits: Float32Array, order: Int32Array, plan: SamplingPlan): Candidates {
  const max = logits[order[0]!]!;
  let total = 0;
  for (let i = 0; i < order.length; i++) total += weights[i] = Math.exp((logits[order[i]!]! - max) / plan.temperature);
  let count = order.length;
  if (plan.topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < order.length; i++) {
      cumulative += weights[i]! / total;
      if (cumulative >= plan.topP) {
        count = i + 1;
        break;
      }
    }
  }
  return { ids: order, weights, count };
}

/** Large k or none: weights for every allowed token, prefixes found by radix selection, kept in id order. */
function selectedCandidates(logits: Float32Array, n: number, k: number, plan: SamplingPlan): Candidates {
  let max = logits[ids[0]!]!;
  for (let j = 1; j < n; j++) if (logits[ids[j]!]! > max) max = logits[ids[j]!]!;
  let total = 0;
  for (let j = 0; j < n; j++) total += weights[j] = Math.exp((logits[ids[j]!]! - max) / plan.temperature);
  if (k === n && plan.topP >= 1) return { ids, weights, count: n };
  orderKeys(logits, ids, n, keys);
  let cut: Cut | undefined;
  if (k < n) {
    cut = radixCut(keys, weights, n, { count: k });
    total = 0;
    forEachIn(cut!, n, (j) => (total += weights[j]!));
  }
  if (plan.topP < 1) {
    const nucleus = radixCut(keys, weights, n, { mass: plan.topP * total });
    if (nucleus && (!cut || shorter(nucleus, cut))) cut = nucleus;
  }
  if (!cut) return { ids, weights, count: n };
  // Compact the prefix's members to the front, in id order (the write index never passes the read one).
  let count = 0;
  forEachIn(cut, n, (j) => {
    ids[count] = ids[j]!;
    weights[count++] = weights[j]!;
  });
  return { ids, weights, count };
}

/** Calls `visit` with each j < n whose candidate is in the prefix, in increasing j. */
function forEachIn(cut: Cut, n: number, visit: (j: number) => void): void {
  let ties = 0;
  for (let j = 0; j < n; j++) if (keys[j]! > cut.key || (keys[j] === cut.key && ties++ < cut.ties)) visit(j);
}

/** The candidates of a sampling step (for sample, and for tests against the former sampler). */
export function candidates(logits: Float32Array, plan: SamplingPlan, mask?: LogitsMask): Candidates {
  const vocab = logits.length;
  scratchFor(vocab);
  const n = mask ? allowedIds(vocab, mask) : vocab;
  const k = plan.topK > 0 ? Math.min(plan.topK, n) : n;
  if (k < n && k <= HEAP_TOP_K) return sortedCandidates(logits, heapTop(logits, mask ? ids : undefined, n, k), plan);
  if (!mask) for (let i = 0; i < vocab; i++) ids[i] = i;
  return selectedCandidates(logits, n, k, plan);
}

/** Inverse CDF over the candidates in their order; `u` uniform in [0, 1). */
function draw(pool: Candidates, u: number): number {
  let total = 0;
  for (let i = 0; i < pool.count; i++) total += pool.weights[i]!;
  let x = u * total;
  let lastPositive = 0;
  for (let i = 0; i < pool.count; i++) {
    const w = pool.weights[i]!;
    x -= w;
    if (x <= 0) return pool.ids[i]!;
    if (w > 0) lastPositive = i;
  }
  return pool.ids[lastPositive]!; // rounding left x a hair above 0
}

/** Greedy (exactly the first argmax of the allowed tokens), or temperature / top-k / top-p sampling. */
export function sample(logits: Float32Array, plan: SamplingPlan, mask?: LogitsMask): number {
  // Penalties change the row only while the token is chosen: a caller reading it after (log
  // probabilities) reads the model's own logits, as vLLM reports them by default.
  const restore = plan.penalties?.apply(logits);
  try {
    if (!plan.doSample) return argmax(logits, mask);
    return draw(candidates(logits, plan, mask), (plan.random ?? Math.random)());
  } finally {
    restore?.();
  }
}

/** A small seeded generator (mulberry32): repeatable draws for a request's `seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A request's sampling settings as a plan: a seeded generator, and penalties that count the tokens as they come (`record` each). */
export function samplingPlan(settings: SamplingSettings, promptIds: readonly number[]): SamplingPlan {
  const { doSample, temperature, topK, topP, seed, penalties } = settings;
  return {
    doSample, temperature, topK, topP,
    ...(seed !== undefined ? { random: seededRandom(seed) } : {}),
    ...(penalties ? { penalties: new TokenPenalties(penalties, promptIds) } : {}),
  };
}

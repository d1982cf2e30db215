/**
 * Finding the best tokens of a logits row without sorting the vocabulary (152k entries on Qwen): a
 * full sort on every token, on the thread that decodes the whole batch, slowed every generation of
 * the worker ~30x while one request asked for top_k 0 or a large top_k.
 *
 * The order is the one a stable sort by descending logit gives, which the sampler used before:
 * larger logit first, and among equal logits the lower token id first. Every function here takes the
 * candidates as `ids[0..n)`, token ids in increasing order (the tokens the logits mask allows).
 *
 * Contract: worker thread, synchronous; the histogram buffers are module scratch, reused by every
 * call (safe: nothing here awaits).
 */

/**
 * The `k` best of ids[0..n) (k <= n), best first: a bounded min-heap, O(n log k), fast when k is
 * small. Without `ids`, the candidates are 0..n-1.
 */
export function heapTop(logits: Float32Array, ids: Int32Array | undefined, n: number, k: number): Int32Array {
  const heap = new Int32Array(k);
  // The heap's root is its worst member: lowest logit, then highest id.
  const worse = (a: number, b: number) => logits[a]! < logits[b]! || (logits[a] === logits[b] && a > b);
  const siftDown = (from: number, size: number) => {
    for (let at = from; ;) {
      let child = 2 * at + 1;
      if (child >= size) return;
      if (child + 1 < size && worse(heap[child + 1]!, heap[child]!)) child++;
      if (!worse(heap[child]!, heap[at]!)) return;
      [heap[at], heap[child]] = [heap[child]!, heap[at]!];
      at = child;
    }
  };
  let size = 0;
  let rootLogit = 0;
  for (let j = 0; j < n; j++) {
    const id = ids ? ids[j]! : j;
    if (size < k) {
      heap[size] = id;
      for (let at = size++; at > 0 && worse(heap[at]!, heap[(at - 1) >> 1]!); at = (at - 1) >> 1) {
        [heap[at], heap[(at - 1) >> 1]] = [heap[(at - 1) >> 1]!, heap[at]!];
      }
      rootLogit = logits[heap[0]!]!;
    } else if (logits[id]! > rootLogit) {
      // Ids come in increasing order, so an equal logit never beats the root.
      heap[0] = id;
      siftDown(0, size);
      rootLogit = logits[heap[0]!]!;
    }
  }
  // Heapsort: the worst goes to the end each time, leaving the best first.
  for (let end = size - 1; end > 0; end--) {
    [heap[0], heap[end]] = [heap[end]!, heap[0]!];
    siftDown(0, end);
  }
  return heap;
}

/**
 * A 32-bit key per candidate that orders as its logit does (IEEE 754 bits, sign folded; -0 as +0).
 * keys[j] belongs to ids[j].
 */
export function orderKeys(logits: Float32Array, ids: Int32Array, n: number, keys: Uint32Array): void {
  const bits = new Uint32Array(logits.buffer, logits.byteOffset, logits.length);
  for (let j = 0; j < n; j++) {
    const b = bits[ids[j]!]!;
    keys[j] = b === 0x80000000 ? 0x80000000 : b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
  }
}

/**
 * The end of a prefix of the order: every candidate whose key is above `key`, and the first `ties`
 * (by id) of those whose key equals it.
 */
export interface Cut {
  key: number;
  ties: number;
}

/** True when prefix `a` is shorter than prefix `b`. */
export const shorter = (a: Cut, b: Cut) => a.key > b.key || (a.key === b.key && a.ties < b.ties);

/** Where a prefix ends: after `count` candidates, or once the weights of the prefix add up to `mass`. */
export type Need = { count: number } | { mass: number };

/** Radix levels over the 32-bit keys, high bits first; 2^11 buckets keep the histograms in L1 cache. */
const LEVELS = [{ shift: 21, bits: 11 }, { shift: 10, bits: 11 }, { shift: 0, bits: 10 }];
const counts = new Int32Array(1 << 11);
const masses = new Float64Array(1 << 11);

/** Walks the buckets from the top; the bucket where `need` is met (adding to `before` what came before it), or -1. */
function walk(need: Need, before: { count: number; mass: number }, size: number): number {
  for (let b = size - 1; b >= 0; b--) {
    const c = counts[b]!;
    if (c === 0) continue;
    if ('count' in need ? before.count + c >= need.count : before.mass + masses[b]! >= need.mass) return b;
    before.count += c;
    before.mass += masses[b]!;
  }
  return -1;
}

/**
 * The shortest prefix of the order over ids[0..n) that meets `need`: radix selection on the keys,
 * level by level, then the run of equal keys in id order. O(n) whatever the logits (ties included).
 * Undefined when the need is never met (a mass above the total, by rounding): the whole list.
 */
export function radixCut(keys: Uint32Array, weights: Float64Array, n: number, need: Need): Cut | undefined {
  const before = { count: 0, mass: 0 };
  let prefix = 0;
  // Rounding can leave a bucket's parts a hair short of the mass the bucket had: then all of it is in.
  let whole = false;
  let group = 0;
  for (let level = 0; level < LEVELS.length; level++) {
    const { shift, bits } = LEVELS[level]!;
    const size = 1 << bits;
    counts.fill(0, 0, size);
    masses.fill(0, 0, size);
    for (let j = 0; j < n; j++) {
      const key = keys[j]!;
      if (level > 0 && key >>> (shift + bits) !== prefix) continue;
      const b = (key >>> shift) & (size - 1);
      counts[b]!++;
      masses[b]! += weights[j]!;
    }
    let bucket = whole ? -1 : walk(need, before, size);
    if (bucket < 0) {
      if (level === 0) return undefined;
      whole = true;
      for (bucket = 0; counts[bucket] === 0; ) bucket++;
    }
    prefix = prefix * size + bucket;
    group = counts[bucket]!;
  }
  if (whole) return { key: prefix, ties: group };
  // Equal keys, equal weights: take them in id order until the need is met.
  let ties = 0;
  if ('count' in need) ties = need.count - before.count;
  else for (let mass = before.mass, each = masses[prefix & 0x3ff]! / group; ties < group && mass < need.mass; ties++) mass += each;
  return { key: prefix, ties: Math.max(1, Math.min(ties, group)) };
}

/**
 * The token sequence a prompt with images is known by in the KV store (./kv-store.ts): its ids,
 * with each image's placeholder tokens, and the token before them, replaced by keys drawn from the
 * image's SHA-256. Every placeholder of every image is the same id, so by ids alone two different
 * images of one size would share a cached prefix: a false hit. By these keys a repeated image
 * matches itself (same bytes, same keys) and a different one never matches past the token before it.
 *
 * A key is 2^31 plus 31 bits of the hash (the k-th of its first eight 31-bit words at the k-th
 * keyed position, cycling): above any vocabulary id, and within the uint32 a prompt cache file
 * stores a token as (src/cache/disk-store.ts). Two images that differ share a key at the token
 * before them and at their first placeholder with a chance of 2^-62. The token before an image is
 * keyed too (its KV does not depend on the image, so this costs a prefix one token of reuse at most)
 * so that a false match would need both words alike.
 */
import type { SequenceImage } from '../../sequence.js';

const KEY_BASE = 2 ** 31;

/** The hash's first eight 31-bit words. */
function words(hash: string): number[] {
  const bits = BigInt(`0x${hash.slice(0, 64).padEnd(64, '0')}`);
  return Array.from({ length: 8 }, (_, k) => Number((bits >> BigInt(256 - 31 * (k + 1))) & 0x7fffffffn));
}

/** `ids` as the KV store knows them (the ids themselves when there are no images). */
export function imageKeyedIds(ids: readonly number[], images: readonly SequenceImage[] | undefined): readonly number[] {
  if (!images?.length) return ids;
  const keyed = [...ids];
  for (const image of images) {
    const w = words(image.hash);
    const from = Math.max(0, image.start - 1);
    for (let at = from, k = 0; at < image.start + image.length; at++, k++) keyed[at] = KEY_BASE + w[k % w.length]!;
  }
  return keyed;
}

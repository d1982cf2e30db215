/**
 * The token sequence a prompt with images is known by in the KV store (./kv-store.ts): its ids,
 * with each image's placeholder tokens, and the token before them, replaced by keys drawn from the
 * image's SHA-256 and the grid its processor makes of it. Every placeholder of every image is the
 * same id, so by ids alone two different images of one size would share a cached prefix: a false
 * hit. By these keys a repeated image matches itself (same bytes, same grid, same keys) and a
 * different one never matches past the token before it.
 *
 * The grid is in the key because one image's bytes can be seen at two resolutions (a low-resolution
 * view: src/models/vision.ts LOW_RESOLUTION_PIXELS): two grids are two sets of image features, the
 * first token of each already different. The processor resizes the decoded bytes straight to the
 * grid's size, so bytes and grid fix what the vision encoder sees: a low-resolution view of an image
 * small enough to keep its grid is the same tokens and shares its cache.
 *
 * A key is 2^31 plus 31 bits of SHA-256(hash, grid) (the k-th of its first eight 31-bit words at
 * the k-th keyed position, cycling): above any vocabulary id, and within the uint32 a prompt cache
 * file stores a token as (src/cache/disk-store.ts). Two images that differ share a key at the token
 * before them and at their first placeholder with a chance of 2^-62. The token before an image is
 * keyed too (its KV does not depend on the image, so this costs a prefix one token of reuse at most)
 * so that a false match would need both words alike.
 */
import { createHash } from 'node:crypto';
import type { SequenceImage } from '../../sequence.js';

const KEY_BASE = 2 ** 31;

/** The first eight 31-bit words of SHA-256 over the image's hash and its grid. */
function imageKeyWords(image: Pick<SequenceImage, 'hash' | 'grid'>): number[] {
  const digest = createHash('sha256').update(`${image.hash} ${image.grid.join('x')}`).digest('hex');
  const bits = BigInt(`0x${digest}`);
  return Array.from({ length: 8 }, (_, k) => Number((bits >> BigInt(256 - 31 * (k + 1))) & 0x7fffffffn));
}

/** `ids` as the KV store knows them (the ids themselves when there are no images). */
export function imageKeyedIds(ids: readonly number[], images: readonly SequenceImage[] | undefined): readonly number[] {
  if (!images?.length) return ids;
  const keyed = [...ids];
  for (const image of images) {
    const w = imageKeyWords(image);
    const from = Math.max(0, image.start - 1);
    for (let at = from, k = 0; at < image.start + image.length; at++, k++) keyed[at] = KEY_BASE + w[k % w.length]!;
  }
  return keyed;
}

/**
 * The pure parts of a vision prompt's decoder inputs: the KV store's keys for image tokens
 * (src/engines/onnx/decode/image-keys.ts), Qwen-VL's M-RoPE positions and Gemma 3's 1-D ones
 * (src/engines/onnx/decode/vision-inputs.ts mropePositions, gemmaPositions, chunkFeeds), worked out
 * by hand here; the model tests (test/model/vision-engine.test.ts, vision-gemma3.test.ts) hold them
 * against transformers.js's generate.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { imageKeyedIds } from '../../src/engines/onnx/decode/image-keys.js';
import { gemmaPositions, mropePositions, VisionInputs } from '../../src/engines/onnx/decode/vision-inputs.js';
import type { SequenceImage } from '../../src/engines/sequence.js';

const image = (start: number, grid: [number, number, number], hash: string): SequenceImage => ({ start, length: (grid[0] * grid[1] * grid[2]) / 4, grid, bytes: new Uint8Array(), hash });
const rows = (positions: BigInt64Array) => {
  const n = positions.length / 3;
  return [0, 1, 2].map((r) => Array.from(positions.subarray(r * n, (r + 1) * n), Number));
};

describe('imageKeyedIds', () => {
  const ids = [1, 2, 9, 7, 7, 7, 7, 8, 3];
  it('keys an image\'s tokens and the one before them by its hash and grid, above any vocabulary id, within uint32', () => {
    const keyed = imageKeyedIds(ids, [image(3, [1, 4, 4], 'ab'.repeat(32))]);
    expect(keyed.slice(0, 2)).toEqual([1, 2]);
    expect(keyed.slice(7)).toEqual([8, 3]);
    for (const key of keyed.slice(2, 7)) {
      expect(key).toBeGreaterThanOrEqual(2 ** 31);
      expect(key).toBeLessThan(2 ** 32);
    }
    // SHA-256 of "abab...ab 1x4x4": its first 31-bit word, then its second.
    const digest = createHash('sha256').update(`${'ab'.repeat(32)} 1x4x4`).digest();
    expect(keyed[2]).toBe(2 ** 31 + (digest.readUInt32BE(0) >>> 1));
    expect(keyed[3]).toBe(2 ** 31 + (Number((digest.readBigUInt64BE(0) >> 2n) & 0x7fffffffn)));
  });

  it('the same bytes on another grid (a low-resolution view) differ from the token before them on; on the same grid they match', () => {
    const hash = '5a'.repeat(32);
    const full = imageKeyedIds(ids, [image(3, [1, 4, 4], hash)]);
    const low = imageKeyedIds([1, 2, 9, 7, 8, 3], [image(3, [1, 2, 2], hash)]);
    expect(low.slice(0, 2)).toEqual(full.slice(0, 2));
    expect(low[2]).not.toBe(full[2]);
    expect(low[3]).not.toBe(full[3]);
    // A low-resolution view that kept the grid is the same pixels: the same keys.
    expect(imageKeyedIds(ids, [{ ...image(3, [1, 4, 4], hash), lowResolution: true }])).toEqual(full);
  });

  it('the same bytes, the same keys; another image of the same size differs from the token before it on', () => {
    const a = imageKeyedIds(ids, [image(3, [1, 4, 4], '11'.repeat(32))]);
    expect(imageKeyedIds(ids, [image(3, [1, 4, 4], '11'.repeat(32))])).toEqual(a);
    const b = imageKeyedIds(ids, [image(3, [1, 4, 4], '12'.repeat(32))]);
    expect(b.slice(0, 2)).toEqual(a.slice(0, 2));
    expect(b[2]).not.toBe(a[2]);
    expect(b[3]).not.toBe(a[3]);
  });

  it('a prompt without images is its ids', () => {
    expect(imageKeyedIds(ids, undefined)).toBe(ids);
    expect(imageKeyedIds(ids, [])).toBe(ids);
  });
});

describe('mropePositions', () => {
  it('text alone: 0..n-1 in all three rows, delta 0', () => {
    const { positions, delta } = mropePositions(4, [], 2);
    expect(rows(positions)).toEqual([[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]);
    expect(delta).toBe(0);
  });

  it('an image: t, h, w over its merged grid from one past the text before it; text after from one past its largest', () => {
    // 2 text tokens, an image on a 1 x 4 x 6 patch grid (merged 2x2: 2 rows of 3 tokens), 2 text tokens.
    const { positions, delta } = mropePositions(10, [image(2, [1, 4, 6], 'x')], 2);
    expect(rows(positions)).toEqual([
      [0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
      [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
      [0, 1, 2, 3, 4, 2, 3, 4, 5, 6],
    ]);
    // The next position is 7 at cache length 10.
    expect(delta).toBe(-3);
  });

  it('refuses an image whose tokens are not its grid\'s', () => {
    expect(() => mropePositions(10, [{ ...image(2, [1, 4, 6], 'x'), length: 5 }], 2)).toThrow(/an image of 5 tokens on a 1x4x6 grid/);
  });
});

describe("Gemma 3's positions", () => {
  it('1-D from 1 (transformers.js feeds gemma3 1-indexed positions), images or not; decoded tokens at cache length + 1', () => {
    const { positions, delta } = gemmaPositions(5);
    expect(Array.from(positions, Number)).toEqual([1, 2, 3, 4, 5]);
    expect(delta).toBe(1);
  });

  it('a prefill chunk feeds one row of positions, [1, count], beside its rows of inputs_embeds', () => {
    const hidden = 2;
    const inputs = { embeds: Float32Array.from({ length: 5 * hidden }, (_, i) => i), rows: 1 as const, ...gemmaPositions(5) };
    const feeds = VisionInputs.chunkFeeds(inputs, 1, 4, hidden) as Record<string, { dims: number[]; data: ArrayLike<number | bigint> }>;
    expect(feeds.position_ids!.dims).toEqual([1, 3]);
    expect(Array.from(feeds.position_ids!.data, Number)).toEqual([2, 3, 4]);
    expect(feeds.inputs_embeds!.dims).toEqual([1, 3, hidden]);
    expect(Array.from(feeds.inputs_embeds!.data, Number)).toEqual([2, 3, 4, 5, 6, 7]);
  });
});

/**
 * Passes sized for llama.cpp's tiled CPU flash attention (src/engines/llama/attention-tile.ts): the
 * kept prefix cut to the tile where the estimate says the tile costs less, and prefill chunks that
 * leave no pass shorter than the tile when the prompt allows.
 */
import { describe, expect, it } from 'vitest';
import { ATTENTION_TILE, keepForTile, prefillEnd, type AttentionCost } from '../../src/engines/llama/attention-tile.js';

// The test GGUF, Qwen2.5-0.5B's shape and Qwen2.5-7B's: layers, twice the parameters.
const TINY: AttentionCost = { layers: 2, perToken: 39_092_864 };
const HALF_B: AttentionCost = { layers: 24, perToken: 988_010_240 };
const SEVEN_B: AttentionCost = { layers: 28, perToken: 2 * 7.6e9 };

describe('keepForTile', () => {
  it('cuts a long kept prefix so that a pass of tens of new tokens has the tile (measured faster: see the source)', () => {
    expect(keepForTile(TINY, 18_771, 18_733)).toBe(18_771 - ATTENTION_TILE);
    expect(keepForTile(HALF_B, 4096 + 38, 4096)).toBe(4096 + 38 - ATTENTION_TILE);
    expect(keepForTile(SEVEN_B, 18_733 + 50, 18_733)).toBe(18_733 + 50 - ATTENTION_TILE);
  });

  it('keeps the prefix where the one-row kernel costs less: a short prefix, few new tokens, a large model', () => {
    expect(keepForTile(TINY, 140, 100)).toBe(100);
    expect(keepForTile(HALF_B, 4096 + 30, 4096)).toBe(4096);
    expect(keepForTile(SEVEN_B, 4_040, 4_000)).toBe(4_000);
    expect(keepForTile(SEVEN_B, 18_740, 18_733)).toBe(18_733);
  });

  it('leaves one new token (a decoding step, the prompt repeated), a pass already of the tile, a prompt shorter than it, and a model without the tiled kernel', () => {
    expect(keepForTile(TINY, 18_734, 18_733)).toBe(18_733);
    expect(keepForTile(TINY, 18_733 + ATTENTION_TILE, 18_733)).toBe(18_733);
    expect(keepForTile(TINY, 60, 10)).toBe(10);
    expect(keepForTile(undefined, 18_771, 18_733)).toBe(18_733);
  });
});

describe('prefillEnd', () => {
  /** The passes of a prefill: chunks up to the end, then the last pass. */
  const passes = (length: number, chunk: number) => {
    const end = prefillEnd(length, chunk);
    const out: number[] = [];
    for (let at = 0; at < end; at += chunk) out.push(Math.min(at + chunk, end) - at);
    return [...out, length - end];
  };

  it('whole chunks, the remainder, then a last pass of a whole chunk, as before, when the remainder has the tile', () => {
    expect(passes(18_737, 512)).toEqual([...Array(35).fill(512), 305, 512]);
    expect(passes(300, 512)).toEqual([300]);
    expect(passes(1024, 512)).toEqual([512, 512]);
  });

  it('no pass shorter than the tile when the prompt has two: the remainder takes it from the last pass', () => {
    expect(passes(1044, 512)).toEqual([512, 64, 468]);
    expect(passes(530, 512)).toEqual([64, 466]);
    for (let length = 2 * ATTENTION_TILE; length < 3000; length++) {
      const ps = passes(length, 512);
      expect(ps.reduce((a, b) => a + b, 0)).toBe(length);
      expect(Math.min(...ps), `${length}: ${ps}`).toBeGreaterThanOrEqual(ATTENTION_TILE);
      expect(Math.max(...ps)).toBeLessThanOrEqual(512);
    }
  });
});

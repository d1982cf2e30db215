import { describe, expect, it } from 'vitest';
import { maskBias } from '../../src/engines/llama/mask-bias.js';
import { allows, onlyToken } from '../../src/engines/sequence.js';

describe('a logits mask as llama.cpp logit bias', () => {
  it('lists exactly the tokens the mask disallows, ids past the mask included, each at -inf', () => {
    const vocab = 1000;
    const mask = new Uint32Array(30); // 960 ids: 960..999 lie past its end
    for (const id of [0, 31, 32, 33, 500, 959]) mask[id >>> 5]! |= 1 << (id & 31);
    mask[10] = -1 >>> 0; // a whole word allowed: ids 320..351
    const bias = maskBias(mask, vocab);
    const expected = Array.from({ length: vocab }, (_, id) => id).filter((id) => !allows(mask, id));
    expect([...bias.keys]).toEqual(expected);
    expect(expected).toContain(999);
    expect(expected).not.toContain(351);
    expect(bias.values.length).toBe(bias.keys.length);
    expect([...new Set(bias.values)]).toEqual([-Infinity]);
  });

  it('is made once per mask, and an all-allowing mask gives an empty bias', () => {
    const vocab = 151_936;
    const one = onlyToken(vocab, 151_935);
    expect(maskBias(one, vocab)).toBe(maskBias(one, vocab));
    expect(maskBias(one, vocab).keys.length).toBe(vocab - 1);
    expect(maskBias(new Uint32Array(vocab / 32).fill(-1 >>> 0), vocab).keys.length).toBe(0);
  });
});

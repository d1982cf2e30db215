/**
 * The sampler (src/engines/sampler.ts): the logits mask is obeyed by greedy and by sampling,
 * and the selection without a full sort keeps exactly the candidates (and weights) of the former
 * sampler (test/helpers/former-sampler.ts), ties included, for every kind of plan.
 */
import { describe, expect, it } from 'vitest';
import { HEAP_TOP_K, TokenPenalties, candidates, sample, type SamplingPlan } from '../../src/engines/sampler.js';
import type { LogitsMask } from '../../src/engines/sequence.js';
import { allowed, formerCandidates, formerSample, seededRandom } from '../helpers/former-sampler.js';

function randomLogits(vocab: number, seed: number, kind: 'normal' | 'ties'): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: vocab }, () => {
    if (kind === 'ties') return Math.floor(random() * 6) / 2 - 1; // six values: long runs of equal logits
    return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()) * 3;
  });
}

function maskOf(vocab: number, ids: Iterable<number>): LogitsMask {
  const mask = new Uint32Array(Math.ceil(vocab / 32));
  for (const id of ids) mask[id >>> 5]! |= 1 << (id & 31);
  return mask;
}

function randomMask(vocab: number, seed: number, share: number): LogitsMask {
  const random = seededRandom(seed);
  const ids = Array.from({ length: vocab }, (_, i) => i).filter(() => random() < share);
  return maskOf(vocab, ids.length ? ids : [vocab - 1]);
}

const plan = (overrides: Partial<SamplingPlan>): SamplingPlan => ({ doSample: true, temperature: 1, topK: 0, topP: 1, ...overrides });
const PLANS: SamplingPlan[] = [0.3, 1, 2].flatMap((temperature) =>
  [0, 1, 5, HEAP_TOP_K + 50].flatMap((topK) => [0.2, 0.9, 1].map((topP) => plan({ temperature, topK, topP }))));

describe('greedy', () => {
  it('is the first argmax, without a mask and among the allowed tokens with one', () => {
    const logits = Float32Array.from([1, 5, 2, 5, -1, 4, 4]);
    expect(sample(logits, plan({ doSample: false }))).toBe(1);
    expect(sample(logits, plan({ doSample: false }), maskOf(7, [0, 2, 5, 6]))).toBe(5);
    expect(sample(logits, plan({ doSample: false }), maskOf(7, [4]))).toBe(4);
  });

  it('matches the former sampler on random rows, with and without masks', () => {
    for (let seed = 0; seed < 40; seed++) {
      const logits = randomLogits(3000, seed, seed % 2 ? 'ties' : 'normal');
      const mask = seed % 3 ? randomMask(3000, seed, 0.05) : undefined;
      expect(sample(logits, plan({ doSample: false }), mask)).toBe(formerSample(logits, plan({ doSample: false }), mask));
    }
  });
});

describe('the logits mask', () => {
  it('sampling never picks a disallowed token, at any temperature, top_k or top_p', () => {
    const vocab = 2000;
    for (const p of PLANS) {
      for (let seed = 0; seed < 60; seed++) {
        const logits = randomLogits(vocab, seed, 'normal');
        const mask = randomMask(vocab, 1000 + seed, 0.02);
        const token = sample(logits, { ...p, random: seededRandom(seed) }, mask);
        expect(allowed(mask, token), `token ${token}, plan ${JSON.stringify(p)}, seed ${seed}`).toBeTruthy();
      }
    }
  });

  it('one allowed token is always the one chosen, however unlikely the model finds it', () => {
    const logits = randomLogits(700, 7, 'normal');
    logits[613] = -1e30;
    const mask = maskOf(700, [613]);
    for (const p of [plan({ doSample: false }), ...PLANS, plan({ topP: 0 }), plan({ temperature: 1e-6 })]) {
      for (let seed = 0; seed < 20; seed++) expect(sample(logits, { ...p, random: seededRandom(seed) }, mask)).toBe(613);
    }
  });

  it('counts tokens past its last word as disallowed and ignores bits past the row', () => {
    const logits = new Float32Array(100).fill(0);
    logits[99] = 50;
    const short = maskOf(64, [3, 40]); // two words: tokens 64..99 are not covered
    for (let seed = 0; seed < 50; seed++) expect([3, 40]).toContain(sample(logits, plan({ random: seededRandom(seed) }), short));
    expect(sample(logits, plan({ doSample: false }), short)).toBe(3);
    const beyond = maskOf(160, [10, 130]); // 130 is past the row
    for (let seed = 0; seed < 50; seed++) expect(sample(logits, plan({ random: seededRandom(seed) }), beyond)).toBe(10);
  });

  it('allowing no token of the row is an error with a code, under greedy and sampling', () => {
    const logits = randomLogits(100, 1, 'normal');
    for (const mask of [new Uint32Array(4), new Uint32Array(0), maskOf(160, [120, 150])]) {
      for (const p of [plan({ doSample: false }), plan({}), plan({ topK: 5, topP: 0.5 })]) {
        expect(() => sample(logits, p, mask)).toThrow(expect.objectContaining({ code: 'internal', details: { reason: 'logits_mask_empty' } }));
      }
    }
  });
});

describe('top-k / top-p selection against the former sampler', () => {
  const vocab = 3000;
  const ks = [0, 1, 2, 17, HEAP_TOP_K, HEAP_TOP_K + 1, 1000, vocab - 1, vocab, vocab + 7];
  const ps = [0, 0.01, 0.3, 0.9, 0.999, 1];

  it('keeps the same candidates with the same weights (normal and tied logits, with and without masks)', () => {
    let compared = 0;
    for (let seed = 0; seed < 6; seed++) {
      const logits = randomLogits(vocab, 50 + seed, seed % 2 ? 'ties' : 'normal');
      const mask = seed >= 4 ? randomMask(vocab, seed, 0.5) : undefined;
      for (const topK of ks) {
        for (const topP of ps) {
          for (const temperature of [0.5, 1.5]) {
            const p = plan({ topK, topP, temperature });
            const reference = formerCandidates(logits, p, mask);
            const got = candidates(logits, p, mask);
            const where = `seed ${seed}, top_k ${topK}, top_p ${topP}, temperature ${temperature}`;
            const expected = new Map(reference.order.slice(0, reference.cut).map((id, i) => [id, reference.weights[i]!]));
            const actual = new Map(Array.from(got.ids.subarray(0, got.count), (id, i) => [id, got.weights[i]!]));
            expect(actual.size, where).toBe(expected.size);
            expect(actual, where).toEqual(expected);
            // Up to HEAP_TOP_K the candidates are also in the reference's order.
            if (topK > 0 && topK <= HEAP_TOP_K) expect(Array.from(got.ids.subarray(0, got.count)), where).toEqual(reference.order.slice(0, reference.cut));
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(6 * ks.length * ps.length * 2);
  });

  it('a prefix that ends inside a run of equal logits keeps the lowest ids of the run', () => {
    const logits = new Float32Array(1000).fill(0);
    for (const id of [900, 5, 700]) logits[id] = 3;
    const zeros = Array.from({ length: 1000 }, (_, i) => i).filter((i) => logits[i] === 0);
    for (const topK of [2, 10, HEAP_TOP_K + 10]) {
      const got = candidates(logits, plan({ topK }));
      const expected = [5, 700, 900, ...zeros].slice(0, topK);
      expect(Array.from(got.ids.subarray(0, got.count)).sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
    }
  });

  it('a nucleus that reaches top_p exactly stops there, in id order among equal logits', () => {
    // 64 equal logits: every weight is 1/64, so the sums are exact in both implementations.
    const logits = new Float32Array(64).fill(1.5);
    for (const [topP, kept] of [[0.25, 16], [0.5, 32], [0.75, 48], [1 / 64, 1]] as const) {
      const got = candidates(logits, plan({ topP }));
      expect(Array.from(got.ids.subarray(0, got.count)), `top_p ${topP}`).toEqual(Array.from({ length: kept }, (_, i) => i));
      expect(formerCandidates(logits, plan({ topP })).cut).toBe(kept);
    }
  });

  it('draws each token with the reference probability (swept over [0, 1))', () => {
    const STEPS = 20_000;
    const logits = randomLogits(40, 3, 'ties');
    for (const p of [plan({}), plan({ topK: 3 }), plan({ topP: 0.6 }), plan({ topK: 30, topP: 0.8, temperature: 0.7 })]) {
      const mass = (pick: (random: () => number) => number) => {
        const counts = new Map<number, number>();
        for (let s = 0; s < STEPS; s++) {
          const token = pick(() => (s + 0.5) / STEPS);
          counts.set(token, (counts.get(token) ?? 0) + 1);
        }
        return counts;
      };
      const expected = mass((random) => formerSample(logits, { ...p, random }));
      const actual = mass((random) => sample(logits, { ...p, random }));
      expect([...actual.keys()].sort((a, b) => a - b)).toEqual([...expected.keys()].sort((a, b) => a - b));
      for (const [token, count] of expected) expect(Math.abs(actual.get(token)! - count), `token ${token}`).toBeLessThanOrEqual(2);
    }
  });
});

describe('presence and frequency penalties', () => {
  it('lower each generated token by presence once and frequency per time, only while choosing; the row comes back exactly', () => {
    const logits = Float32Array.from([0.1, 3.3, 3.0, 2.9, -7.77]);
    const original = Float32Array.from(logits);
    const penalties = new TokenPenalties({ presence: 0.5, frequency: 0.25 });
    const plan: SamplingPlan = { doSample: false, temperature: 1, topK: 0, topP: 1, penalties };
    expect(sample(logits, plan)).toBe(1);
    penalties.record(1);
    // 3.3 - 0.5 - 0.25 = 2.55 < 3.0
    expect(sample(logits, plan)).toBe(2);
    penalties.record(2);
    penalties.record(2);
    // 3.0 - 0.5 - 0.5 = 2.0; 2.55 < 2.9
    expect(sample(logits, plan)).toBe(3);
    expect(logits).toEqual(original);
    const restore = penalties.apply(logits);
    expect(Array.from(logits)).toEqual([0.1, 3.3 - 0.75, 3 - 1, 2.9, -7.77].map((v) => Math.fround(v)));
    restore();
    expect(logits).toEqual(original);
    penalties.record(99); // outside the row: ignored
    expect(() => penalties.apply(logits)()).not.toThrow();
  });

  it('the repetition penalty divides positive and multiplies negative logits of prompt and generated tokens, before presence', () => {
    const logits = Float32Array.from([4, -2, 3, 1, 0.5]);
    const original = Float32Array.from(logits);
    const penalties = new TokenPenalties({ repetition: 2, presence: 1 }, [0, 1, 0]);
    penalties.record(3);
    const restore = penalties.apply(logits);
    expect(Array.from(logits)).toEqual([2, -4, 3, 1 / 2 - 1, 0.5]);
    restore();
    expect(logits).toEqual(original);
    expect(sample(logits, { doSample: false, temperature: 1, topK: 0, topP: 1, penalties })).toBe(2);
  });
});

/**
 * The sampler as it was before src/engines/top-tokens.ts, as it was: top k by insertion for
 * k <= 256, else every token sorted (a stable sort by descending logit); the nucleus cut along them;
 * an inverse-CDF draw. The judge of the new selection in test/unit/sampler.test.ts and the baseline
 * of scripts/bench/sampler.ts. A mask is applied first by dropping the disallowed tokens.
 */
import type { LogitsMask } from '../../src/engines/sequence.js';
import type { SamplingPlan } from '../../src/engines/sampler.js';

export const allowed = (mask: LogitsMask | undefined, id: number) => !mask || ((mask[id >>> 5] ?? 0) >>> (id & 31)) & 1;

/** Indices of the k largest values, largest first, in one pass (k small). */
function topIndices(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (best.length === k && v <= values[best[k - 1]!]!) continue;
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && values[best[at - 1]!]! < v) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

/** The candidates in order and their weights; the first `cut` are kept. */
export function formerCandidates(logits: Float32Array, plan: SamplingPlan, mask?: LogitsMask): { order: number[]; weights: number[]; cut: number } {
  const ids = mask ? Array.from(logits.keys()).filter((i) => allowed(mask, i)) : undefined;
  const values = ids ? Float32Array.from(ids, (i) => logits[i]!) : logits;
  const k = plan.topK > 0 ? Math.min(plan.topK, values.length) : values.length;
  const ranked = k <= 256 ? topIndices(values, k) : Array.from(values.keys()).sort((a, b) => values[b]! - values[a]!).slice(0, k);
  const order = ids ? ranked.map((j) => ids[j]!) : ranked;
  const max = logits[order[0]!]!;
  const weights = order.map((i) => Math.exp((logits[i]! - max) / plan.temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  let cut = order.length;
  if (plan.topP < 1) {
    let cumulative = 0;
    for (let i = 0; i < order.length; i++) {
      cumulative += weights[i]! / total;
      if (cumulative >= plan.topP) {
        cut = i + 1;
        break;
      }
    }
  }
  return { order, weights, cut };
}

export function formerSample(logits: Float32Array, plan: SamplingPlan, mask?: LogitsMask): number {
  if (!plan.doSample && !mask) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    return best;
  }
  if (!plan.doSample) {
    let best = -1;
    for (let i = 0; i < logits.length; i++) if (allowed(mask, i) && (best < 0 || logits[i]! > logits[best]!)) best = i;
    return best;
  }
  const { order, weights, cut } = formerCandidates(logits, plan, mask);
  const kept = weights.slice(0, cut);
  let x = (plan.random ?? Math.random)() * kept.reduce((a, b) => a + b, 0);
  for (let i = 0; i < kept.length; i++) {
    x -= kept[i]!;
    if (x <= 0) return order[i]!;
  }
  return order[cut - 1]!;
}

export { seededRandom } from '../../src/engines/sampler.js';

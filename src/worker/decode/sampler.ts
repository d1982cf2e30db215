/**
 * Choosing the next token from one row of logits: greedy (argmax), or temperature / top-k / top-p
 * sampling.
 *
 * Contract: worker thread, synchronous; `logits` is only read.
 */

export interface SamplingPlan {
  doSample: boolean;
  temperature: number;
  topK: number;
  topP: number;
}

/** Greedy, or temperature / top-k / top-p sampling, over one row of logits. */
export function sample(logits: Float32Array, plan: SamplingPlan): number {
  if (!plan.doSample) {
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    return best;
  }
  const k = plan.topK > 0 ? Math.min(plan.topK, logits.length) : logits.length;
  const order = k <= 256 ? topIndices(logits, k) : Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]!).slice(0, k);
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
  const kept = weights.slice(0, cut);
  let x = Math.random() * kept.reduce((a, b) => a + b, 0);
  for (let i = 0; i < kept.length; i++) {
    x -= kept[i]!;
    if (x <= 0) return order[i]!;
  }
  return order[cut - 1]!;
}

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

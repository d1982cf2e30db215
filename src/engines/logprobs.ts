/**
 * Log probabilities of a decoding step, for callers that ask for them: the chosen token's and the
 * `top` most likely tokens', from the model's raw distribution over the whole vocabulary (a log
 * softmax of the logits row before temperature, top-k / top-p and any grammar mask: the values a
 * caller can compare across requests, as vLLM returns by default).
 *
 * Contract: worker thread, synchronous; the row is only read.
 */
import { heapTop } from './top-tokens.js';

export interface StepLogprobs {
  logprob: number;
  /** The `top` most likely tokens, most likely first. */
  top: Array<{ token: number; logprob: number }>;
}

export function stepLogprobs(row: Float32Array, token: number, top: number): StepLogprobs {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i]! > max) max = row[i]!;
  let sum = 0;
  for (let i = 0; i < row.length; i++) sum += Math.exp(row[i]! - max);
  const logZ = max + Math.log(sum);
  const best = top > 0 ? heapTop(row, undefined, row.length, Math.min(top, row.length)) : new Int32Array(0);
  return { logprob: row[token]! - logZ, top: Array.from(best, (id) => ({ token: id, logprob: row[id]! - logZ })) };
}

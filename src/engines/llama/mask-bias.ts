/**
 * A logits mask handed to llama.cpp as its logit bias (-inf on every token the mask disallows),
 * without node-llama-cpp's per-step copy.
 *
 * node-llama-cpp (pinned 3.21.1) turns a TokenBias, a Map, into two typed arrays on every step it
 * samples: for a grammar's mask over Qwen3's 151,669-token vocabulary, building that Map and copying
 * it took about 45 ms of JavaScript per token on 2 AMD EPYC cores, many times a small model's decoding
 * step. Here a mask becomes those typed arrays once (kept per mask: the grammar hands out the same
 * mask for the same state), and each sequence's `_resolveSamplerConfig` (node-llama-cpp's internal
 * step that makes the addon's sampler config) passes them as they are. The addon keeps its sampler
 * when the arrays equal the last step's.
 *
 * End-of-generation tokens are in the arrays like any other (node-llama-cpp's TokenBias.set refuses
 * them; a grammar that is not complete must refuse them too).
 */
import type { LlamaContextSequence } from 'node-llama-cpp';
import type { LogitsMask } from '../sequence.js';

/** The tokens a mask disallows, as the addon's `tokenBiasKeys` and `tokenBiasValues`. */
export class MaskBias {
  constructor(readonly keys: Uint32Array, readonly values: Float32Array) {}
}

const biases = new WeakMap<LogitsMask, MaskBias>();
let minusInfinity = new Float32Array(0);

/** The bias that disallows what `mask` disallows over a vocabulary of `vocab` tokens (ids past the mask's end included); none without a mask. */
export function maskBias(mask: LogitsMask, vocab: number): MaskBias;
export function maskBias(mask: LogitsMask | undefined, vocab: number): MaskBias | undefined;
export function maskBias(mask: LogitsMask | undefined, vocab: number): MaskBias | undefined {
  if (!mask) return undefined;
  const known = biases.get(mask);
  if (known) return known;
  const denied = new Uint32Array(vocab);
  let n = 0;
  for (let word = 0, base = 0; base < vocab; word++, base += 32) {
    const allowed = mask[word] ?? 0;
    if (allowed === -1 >>> 0) continue;
    const end = Math.min(32, vocab - base);
    for (let bit = 0; bit < end; bit++) if (((allowed >>> bit) & 1) === 0) denied[n++] = base + bit;
  }
  if (minusInfinity.length < n) minusInfinity = new Float32Array(vocab).fill(-Infinity);
  const bias = new MaskBias(denied.slice(0, n), minusInfinity.subarray(0, n));
  biases.set(mask, bias);
  return bias;
}

type ResolveSamplerConfig = (options: { tokenBias?: unknown }) => Record<string, unknown>;

/**
 * Lets `sequence` take a MaskBias (or a function that returns one, or nothing) as its `tokenBias`
 * option. Throws on a node-llama-cpp without the internal step this relies on.
 */
export function acceptMaskBias(sequence: LlamaContextSequence): void {
  const target = sequence as unknown as { _resolveSamplerConfig?: ResolveSamplerConfig };
  const resolve = target._resolveSamplerConfig;
  if (typeof resolve !== 'function') {
    throw new Error('node-llama-cpp has no LlamaContextSequence._resolveSamplerConfig: the llama.cpp engine needs the pinned node-llama-cpp 3.21.1');
  }
  target._resolveSamplerConfig = function (this: unknown, options) {
    const bias = typeof options.tokenBias === 'function' ? (options.tokenBias as () => unknown)() : options.tokenBias;
    if (bias != null && !(bias instanceof MaskBias)) return resolve.call(this, options);
    const config = resolve.call(this, { ...options, tokenBias: undefined });
    return bias && bias.keys.length > 0 ? { ...config, tokenBiasKeys: bias.keys, tokenBiasValues: bias.values } : config;
  };
}

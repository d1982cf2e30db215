/**
 * Builds a decoder-only transformer (llama family) in the form onnxruntime-genai's model builder
 * (src/python/py/models/builder.py) exports it, the form of many onnx-community `model_q4.onnx` /
 * `model_q4f16.onnx` files:
 *
 *   inputs:  input_ids [B,S] int64, attention_mask [B,P+S] int64 (no position_ids),
 *            past_key_values.{i}.key / .value [B,KV,P,D] (float32, or float16 for q4f16)
 *   outputs: logits [B,S,V] (float32, or float16 for q4f16), present.{i}.key / .value [B,KV,P+S,D]
 *
 * - attention: one `com.microsoft` GroupQueryAttention per layer with the rotary embedding inside
 *   (do_rotary=1, cos_cache / sin_cache [maxPositions, D/2], half-split rotation as HF's
 *   rotate_half); seqlens_k = ReduceSum(attention_mask) - 1 and total_sequence_length = the mask's
 *   width, so a batch is right-padded (each row's real positions are columns [0, len)) and the
 *   kernel derives each row's rotary positions from its seqlens_k;
 * - linear layers: `com.microsoft` MatMulNBits, blocks of 32 along the input axis, no zero points
 *   (so the default: 8 for 4 bits, 128 for 8 bits, i.e. symmetric), accuracy_level 4 (int8
 *   compute, the builder's CPU default);
 * - norms: SimplifiedLayerNormalization, then SkipSimplifiedLayerNormalization fusing each residual add.
 *
 * The 4-bit blocks are quantized as ggml's Q4_0 is (scale d = m/-8, m the value of largest magnitude
 * with its sign, d rounded to fp16; q = trunc(x/d + 8.5) clamped to 15), so the GGUF written from
 * this graph's dequantized weights (scripts/builders/gguf/from-onnx.ts) holds exactly the same values;
 * 8-bit blocks as Q8_0 (d = max|x|/127 in fp16, q = round(x/d)).
 *
 * Weights are deterministic pseudo-random values (../onnx/causal-lm.ts's generator and scales):
 * the text is noise, the cost of a forward pass is the real model's.
 */
import { fromHalf, toHalf } from '../gguf/gguf-writer.js';
import type { CausalLmShape } from './causal-lm.js';
import { GraphBuilder, SeededRandom, type ElemType } from './graph-builder.js';

export type ModelBuilderDtype = 'q4' | 'q4f16' | 'q8';

export interface ModelBuilderLmOptions {
  shape: CausalLmShape;
  seed: number;
  dtype: ModelBuilderDtype;
  /** Token ids whose logits get a large negative bias (control tokens a chat model never emits mid-reply). */
  suppressedTokenIds?: number[];
  /** Standard deviation of the logits; large values keep greedy argmax far from ties. */
  logitStd?: number;
  onProgress?: (message: string) => void;
}

export const BLOCK = 32;
const MS = 'com.microsoft';

/** Bits per weight of a dtype's MatMulNBits, and whether activations / KV are float16. */
export const dtypeTraits = (dtype: ModelBuilderDtype) => ({ bits: dtype === 'q8' ? 8 : 4, half: dtype === 'q4f16' });

/**
 * Quantizes a [K, N] (input x output) matrix into MatMulNBits' layout: packed [N, K/32, 32*bits/8]
 * uint8 (4 bits: element k of a block in byte k/2, low nibble first) and one scale per block [N * K/32].
 */
export function quantizeBlocks(weights: Float32Array, K: number, N: number, bits: number): { packed: Uint8Array; scales: Float32Array } {
  if (K % BLOCK !== 0) throw new Error(`input size ${K} is not a multiple of ${BLOCK}`);
  const blocks = K / BLOCK;
  const blob = (BLOCK * bits) / 8;
  const packed = new Uint8Array(N * blocks * blob);
  const scales = new Float32Array(N * blocks);
  const column = new Float32Array(BLOCK);
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < blocks; b++) {
      for (let j = 0; j < BLOCK; j++) column[j] = weights[(b * BLOCK + j) * N + n]!;
      const at = (n * blocks + b) * blob;
      if (bits === 4) {
        let max = 0;
        for (const v of column) if (Math.abs(v) > Math.abs(max)) max = v;
        const d = fromHalf(toHalf(max / -8));
        const id = d ? 1 / d : 0;
        for (let j = 0; j < BLOCK; j++) {
          const q = Math.max(0, Math.min(15, Math.trunc(column[j]! * id + 8.5)));
          packed[at + (j >> 1)]! |= j & 1 ? q << 4 : q;
        }
        scales[n * blocks + b] = d;
      } else {
        let amax = 0;
        for (const v of column) amax = Math.max(amax, Math.abs(v));
        const d = fromHalf(toHalf(amax / 127));
        const id = d ? 1 / d : 0;
        for (let j = 0; j < BLOCK; j++) packed[at + j] = Math.max(-128, Math.min(127, Math.round(column[j]! * id))) + 128;
        scales[n * blocks + b] = d;
      }
    }
  }
  return { packed, scales };
}

/** The [K, N] float32 matrix MatMulNBits computes with (the inverse of quantizeBlocks, zero point 8 or 128). */
export function dequantizeBlocks(packed: Uint8Array, scales: ArrayLike<number>, K: number, N: number, bits: number): Float32Array {
  const blocks = K / BLOCK;
  const blob = (BLOCK * bits) / 8;
  const out = new Float32Array(K * N);
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < blocks; b++) {
      const at = (n * blocks + b) * blob;
      const d = scales[n * blocks + b]!;
      for (let j = 0; j < BLOCK; j++) {
        const q = bits === 4 ? (packed[at + (j >> 1)]! >> (j & 1 ? 4 : 0)) & 15 : packed[at + j]!;
        out[(b * BLOCK + j) * N + n] = (q - (bits === 4 ? 8 : 128)) * d;
      }
    }
  }
  return out;
}

function halfBits(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = toHalf(values[i]!);
  return out;
}

export function buildModelBuilderLm(options: ModelBuilderLmOptions): Uint8Array {
  const { shape: s, seed, dtype } = options;
  const { bits, half } = dtypeTraits(dtype);
  const io: ElemType = half ? 'float16' : 'float32';
  const g = new GraphBuilder();
  const rng = new SeededRandom(seed);
  const progress = options.onProgress ?? (() => {});
  const D = s.headDim;
  /** A float initializer in the graph's activation type. */
  const tensor = (name: string, dims: number[], values: Float32Array) => (half ? g.halfs(name, dims, halfBits(values)) : g.weight(name, dims, values));

  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  const past = Array.from({ length: s.numLayers }, (_, i) => ({
    key: g.input(`past_key_values.${i}.key`, io, ['batch_size', s.numKvHeads, 'past_sequence_length', D]),
    value: g.input(`past_key_values.${i}.value`, io, ['batch_size', s.numKvHeads, 'past_sequence_length', D]),
  }));

  // The builder's attention-mask reformatting for GroupQueryAttention (right padding).
  const seqlensK = g.op1('Cast', [g.op1('Sub', [g.op1('ReduceSum', [attentionMask, g.int64s([1])], { keepdims: 0 }), g.int64s([1], [])])], { to: 6 });
  const totalLength = g.op1('Cast', [g.op1('Gather', [g.op1('Shape', [attentionMask]), g.int64s([1], [])], { axis: 0 })], { to: 6 });

  progress('embeddings');
  const embed = tensor('model.embed_tokens.weight', [s.vocabSize, s.hiddenSize], rng.normals(s.vocabSize * s.hiddenSize, 1));
  let residual = g.op1('Gather', [embed, inputIds], { axis: 0 });

  const halfDim = D / 2;
  const cos = new Float32Array(s.maxPositions * halfDim);
  const sin = new Float32Array(s.maxPositions * halfDim);
  for (let p = 0; p < s.maxPositions; p++) {
    for (let j = 0; j < halfDim; j++) {
      const angle = p / Math.pow(s.ropeTheta, (2 * j) / D);
      cos[p * halfDim + j] = Math.cos(angle);
      sin[p * halfDim + j] = Math.sin(angle);
    }
  }
  const cosCache = tensor('cos_cache', [s.maxPositions, halfDim], cos);
  const sinCache = tensor('sin_cache', [s.maxPositions, halfDim], sin);

  const normWeight = (name: string) => tensor(name, [s.hiddenSize], new Float32Array(s.hiddenSize).fill(1));
  const norm = (value: string, name: string) => g.op1('SimplifiedLayerNormalization', [value, normWeight(name)], { axis: -1, epsilon: { float: s.rmsNormEps }, stash_type: 1 });
  /** SkipSimplifiedLayerNormalization: the norm of `value + skip`, and that sum (the next residual). */
  const skipNorm = (value: string, skip: string, name: string): [string, string] => {
    const out = g.name('skip_norm');
    const sum = g.name('residual');
    g.opTo('SkipSimplifiedLayerNormalization', { inputs: [value, skip, normWeight(name)], outputs: [out, '', '', sum], attrs: { epsilon: { float: s.rmsNormEps } }, domain: MS });
    return [out, sum];
  };
  const matmul = (value: string, name: string, K: number, N: number, weights: Float32Array) => {
    const { packed, scales } = quantizeBlocks(weights, K, N, bits);
    const blocks = K / BLOCK;
    const B = g.bytes(`${name}.MatMulNBits.qweight`, 'uint8', [N, blocks, (BLOCK * bits) / 8], packed);
    const S = tensor(`${name}.MatMulNBits.scales`, [N * blocks], scales);
    const out = g.name('matmulnbits');
    g.opTo('MatMulNBits', { inputs: [value, B, S], outputs: [out], attrs: { K, N, bits, block_size: BLOCK, accuracy_level: 4 }, domain: MS });
    return out;
  };
  const linear = (value: string, name: string, K: number, N: number) => matmul(value, name, K, N, rng.normals(K * N, 1 / Math.sqrt(K)));

  let h = norm(residual, 'model.layers.0.input_layernorm.weight');
  let delta = '';
  for (let layer = 0; layer < s.numLayers; layer++) {
    progress(`layer ${layer + 1}/${s.numLayers}`);
    const p = `model.layers.${layer}`;
    if (layer > 0) [h, residual] = skipNorm(delta, residual, `${p}.input_layernorm.weight`);
    const q = linear(h, `${p}.self_attn.q_proj.weight`, s.hiddenSize, s.numHeads * D);
    const k = linear(h, `${p}.self_attn.k_proj.weight`, s.hiddenSize, s.numKvHeads * D);
    const v = linear(h, `${p}.self_attn.v_proj.weight`, s.hiddenSize, s.numKvHeads * D);
    const attn = g.name('attn');
    g.opTo('GroupQueryAttention', {
      inputs: [q, k, v, past[layer]!.key, past[layer]!.value, seqlensK, totalLength, cosCache, sinCache],
      outputs: [attn, `present.${layer}.key`, `present.${layer}.value`],
      attrs: { num_heads: s.numHeads, kv_num_heads: s.numKvHeads, scale: { float: 1 / Math.sqrt(D) }, do_rotary: 1, rotary_interleaved: 0, local_window_size: -1 },
      domain: MS,
    });
    g.output(`present.${layer}.key`, io, ['batch_size', s.numKvHeads, 'total_sequence_length', D]);
    g.output(`present.${layer}.value`, io, ['batch_size', s.numKvHeads, 'total_sequence_length', D]);
    const attnOut = linear(attn, `${p}.self_attn.o_proj.weight`, s.numHeads * D, s.hiddenSize);
    const [h2, afterAttn] = skipNorm(attnOut, residual, `${p}.post_attention_layernorm.weight`);
    residual = afterAttn;
    const gate = linear(h2, `${p}.mlp.gate_proj.weight`, s.hiddenSize, s.intermediateSize);
    const up = linear(h2, `${p}.mlp.up_proj.weight`, s.hiddenSize, s.intermediateSize);
    const act = g.op1('Mul', [g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]), up]);
    delta = linear(act, `${p}.mlp.down_proj.weight`, s.intermediateSize, s.hiddenSize);
  }

  progress('lm head');
  const [final] = skipNorm(delta, residual, 'model.norm.weight');
  const logitStd = options.logitStd ?? 8;
  let logits = matmul(final, 'lm_head.weight', s.hiddenSize, s.vocabSize, rng.normals(s.hiddenSize * s.vocabSize, logitStd / Math.sqrt(s.hiddenSize)));
  if (options.suppressedTokenIds?.length) {
    const bias = new Float32Array(s.vocabSize);
    for (const id of options.suppressedTokenIds) bias[id] = -1e4;
    logits = g.op1('Add', [logits, tensor('lm_head.bias', [s.vocabSize], bias)]);
  }
  g.alias(logits, 'logits');
  g.output('logits', io, ['batch_size', 'sequence_length', s.vocabSize]);
  progress('serialising');
  return g.encode('local-inference-server model-builder-form builder');
}

/**
 * Builds a decoder-only transformer (llama/qwen family: RMSNorm, rotary positions, grouped-query
 * attention, SwiGLU MLP) as an ONNX graph with the exact input/output signature of a Hugging Face
 * `optimum` export with KV cache:
 *
 *   inputs:  input_ids [B,S] int64, attention_mask [B,P+S] int64, position_ids [B,S] int64,
 *            past_key_values.{i}.key / .value [B,KV,P,D] float32
 *   outputs: logits [B,S,V] float32, present.{i}.key / .value [B,KV,P+S,D] float32
 *
 * Weights are deterministic pseudo-random values: the text is noise, but the cost of a forward
 * pass, the cache handling and every token count are those of a real model of this shape.
 */
import { GraphBuilder, SeededRandom } from './graph-builder.js';

export interface CausalLmShape {
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  maxPositions: number;
  ropeTheta: number;
  rmsNormEps: number;
}

export interface CausalLmBuildOptions {
  shape: CausalLmShape;
  seed: number;
  /** Token ids whose logits get a large negative bias (e.g. control tokens a chat model never emits mid-reply). */
  suppressedTokenIds?: number[];
  /** Standard deviation of the logits; large values keep greedy argmax far from ties. */
  logitStd?: number;
  /**
   * `q8`: every linear layer (and the output head) as ONNX dynamic quantization does it: int8
   * weights with a per-tensor scale, activations quantized at run time (DynamicQuantizeLinear +
   * MatMulInteger), the layout of the `model_quantized.onnx` files of Hugging Face exports.
   */
  quantize?: 'q8';
  /**
   * The decoder of a split vision-language export (`decoder_model_merged.onnx`): fed
   * `inputs_embeds` [B,S,H] (text embeddings with the image features merged in) instead of
   * input_ids, and with `mropeSection` Qwen-VL multimodal rotary positions, `position_ids` [3,B,S]
   * (temporal, height, width rows), each rotary frequency taking its angle from one row; without
   * it (Gemma 3) plain `position_ids` [B,S].
   */
  vision?: VisionDecoderOptions;
  onProgress?: (message: string) => void;
}

export interface VisionDecoderOptions {
  /** Frequencies per row (temporal, height, width); they sum to headDim / 2. Absent: 1-D positions. */
  mropeSection?: [number, number, number];
  /** Qwen3-VL's layout (frequency j takes row j % 3 while that row's section lasts); Qwen2-VL's is contiguous blocks. */
  interleaved?: boolean;
  /**
   * The output head as the sum of a [H, block] matrix tiled across the vocabulary and a [H, V/block]
   * one repeated within each block: every token's column differs, and a 151,936-row vocabulary
   * costs kilobytes instead of megabytes. The embedding graph (vision-lm.ts) is factored alike.
   */
  vocabBlock: number;
}

/** Which position row (0 temporal, 1 height, 2 width) each of the headDim / 2 rotary frequencies reads. */
export function mropeRows(v: { mropeSection: [number, number, number]; interleaved?: boolean }): number[] {
  const [t, h, w] = v.mropeSection;
  const half = t + h + w;
  if (!v.interleaved) return Array.from({ length: half }, (_, j) => (j < t ? 0 : j < t + h ? 1 : 2));
  // transformers' apply_interleaved_mrope: height at 1, 4, 7, ... up to 3*h, width at 2, 5, 8, ... up to 3*w.
  return Array.from({ length: half }, (_, j) => (j % 3 === 1 && j < 3 * h ? 1 : j % 3 === 2 && j < 3 * w ? 2 : 0));
}

export function buildCausalLm(options: CausalLmBuildOptions): Uint8Array {
  return causalLmGraph(options).encode('local-inference-server causal-lm builder');
}

/** The same model with its weights in `dataFile` and its numbered chunks (the `model.onnx` + `model.onnx_data` layout). */
export function buildCausalLmExternal(options: CausalLmBuildOptions, dataFile: string, maxChunkBytes?: number): ReturnType<GraphBuilder['encodeWithExternalData']> {
  return causalLmGraph(options).encodeWithExternalData('local-inference-server causal-lm builder', dataFile, maxChunkBytes);
}

function causalLmGraph(options: CausalLmBuildOptions): GraphBuilder {
  const { shape: s, seed } = options;
  const g = new GraphBuilder();
  const rng = new SeededRandom(seed);
  const progress = options.onProgress ?? (() => {});
  const D = s.headDim;
  if (D % 2 !== 0) throw new Error('headDim must be even for rotary embeddings');
  if (s.numHeads % s.numKvHeads !== 0) throw new Error('numHeads must be a multiple of numKvHeads');

  const vision = options.vision;
  const inputIds = vision ? g.input('inputs_embeds', 'float32', ['batch_size', 'sequence_length', s.hiddenSize]) : g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  const mrope = vision?.mropeSection ? { mropeSection: vision.mropeSection, interleaved: vision.interleaved } : undefined;
  const positionIds = g.input('position_ids', 'int64', mrope ? [3, 'batch_size', 'sequence_length'] : ['batch_size', 'sequence_length']);
  const pastNames = Array.from({ length: s.numLayers }, (_, i) => ({
    key: g.input(`past_key_values.${i}.key`, 'float32', ['batch_size', s.numKvHeads, 'past_sequence_length', D]),
    value: g.input(`past_key_values.${i}.value`, 'float32', ['batch_size', s.numKvHeads, 'past_sequence_length', D]),
  }));

  progress('embeddings');
  let x = vision ? inputIds : g.op1('Gather', [g.weight('model.embed_tokens.weight', [s.vocabSize, s.hiddenSize], rng.normals(s.vocabSize * s.hiddenSize, 1)), inputIds], { axis: 0 });

  // Rotary tables, gathered by position id: [B,S,D] -> [B,1,S,D] to broadcast over heads.
  const half = D / 2;
  const axis1 = g.int64s([1]);
  let cos: string;
  let sin: string;
  if (mrope) {
    // M-RoPE: angles computed from all three rows ([3,B,S,D]; no tables, so a long context costs
    // nothing in the file), each frequency keeping the row it reads (a one-hot mask over the rows,
    // both rotary halves alike), the rows then summed away.
    const rows = mropeRows(mrope);
    if (rows.length !== half) throw new Error(`mropeSection sums to ${rows.length}, headDim / 2 is ${half}`);
    const invFreq = new Float32Array(D);
    const rowMask = new Float32Array(3 * D);
    rows.forEach((row, j) => {
      invFreq[j] = invFreq[j + half] = 1 / Math.pow(s.ropeTheta, (2 * j) / D);
      rowMask[row * D + j] = rowMask[row * D + j + half] = 1;
    });
    const angles = g.op1('Mul', [g.op1('Unsqueeze', [g.op1('Cast', [positionIds], { to: 1 }), g.int64s([-1])]), g.weight('rope.inv_freq', [D], invFreq)]);
    const mask = g.weight('rope.mrope_rows', [3, 1, 1, D], rowMask);
    const pick = (trig: string) => g.op1('Unsqueeze', [g.op1('ReduceSum', [g.op1('Mul', [g.op1(trig, [angles]), mask]), g.int64s([0])], { keepdims: 0 }), axis1]);
    cos = pick('Cos');
    sin = pick('Sin');
  } else if (vision) {
    // 1-D positions, angles computed as above ([B,S,D], no tables).
    const invFreq = new Float32Array(D);
    for (let j = 0; j < half; j++) invFreq[j] = invFreq[j + half] = 1 / Math.pow(s.ropeTheta, (2 * j) / D);
    const angles = g.op1('Mul', [g.op1('Unsqueeze', [g.op1('Cast', [positionIds], { to: 1 }), g.int64s([-1])]), g.weight('rope.inv_freq', [D], invFreq)]);
    cos = g.op1('Unsqueeze', [g.op1('Cos', [angles]), axis1]);
    sin = g.op1('Unsqueeze', [g.op1('Sin', [angles]), axis1]);
  } else {
    const cosTable = new Float32Array(s.maxPositions * D);
    const sinTable = new Float32Array(s.maxPositions * D);
    for (let p = 0; p < s.maxPositions; p++) {
      for (let j = 0; j < half; j++) {
        const angle = p / Math.pow(s.ropeTheta, (2 * j) / D);
        cosTable[p * D + j] = cosTable[p * D + j + half] = Math.cos(angle);
        sinTable[p * D + j] = sinTable[p * D + j + half] = Math.sin(angle);
      }
    }
    cos = g.op1('Unsqueeze', [g.op1('Gather', [g.weight('rope.cos', [s.maxPositions, D], cosTable), positionIds], { axis: 0 }), axis1]);
    sin = g.op1('Unsqueeze', [g.op1('Gather', [g.weight('rope.sin', [s.maxPositions, D], sinTable), positionIds], { axis: 0 }), axis1]);
  }

  // Additive attention mask [B,1,S,T]: causal (key position <= query position) and not padding.
  const pastLen = g.op1('Shape', [pastNames[0]!.key], { start: 2, end: 3 });
  const seqLen = g.op1('Shape', [inputIds], { start: 1, end: 2 });
  const totalLen = g.op1('Add', [pastLen, seqLen]);
  const axis0 = g.int64s([0]);
  const pastScalar = g.op1('Squeeze', [pastLen, axis0]);
  const totalScalar = g.op1('Squeeze', [totalLen, axis0]);
  const one = g.int64s([1], []);
  const zero = g.int64s([0], []);
  const queryPos = g.op1('Unsqueeze', [g.op1('Range', [pastScalar, totalScalar, one]), axis1]);
  const keyPos = g.op1('Range', [zero, totalScalar, one]);
  const causal = g.op1('LessOrEqual', [keyPos, queryPos]);
  const notPadding = g.op1('Unsqueeze', [g.op1('Cast', [attentionMask], { to: 9 }), g.int64s([1, 2])]);
  const allowed = g.op1('And', [causal, notPadding]);
  const maskAdd = g.op1('Where', [allowed, g.floats([0], []), g.floats([-1e9], [])]);

  const rmsNorm = (value: string, weightName: string): string => {
    const w = g.weight(weightName, [s.hiddenSize], new Float32Array(s.hiddenSize).fill(1));
    const meanSq = g.op1('ReduceMean', [g.op1('Mul', [value, value])], { axes: [-1], keepdims: 1 });
    const inv = g.op1('Reciprocal', [g.op1('Sqrt', [g.op1('Add', [meanSq, g.floats([s.rmsNormEps], [])])])]);
    return g.op1('Mul', [g.op1('Mul', [value, inv]), w]);
  };
  const matmul = (value: string, name: string, inDim: number, outDim: number, weights: Float32Array): string => {
    if (options.quantize !== 'q8') return g.op1('MatMul', [value, g.weight(name, [inDim, outDim], weights)]);
    let max = 0;
    for (const w of weights) max = Math.max(max, Math.abs(w));
    const scale = max / 127 || 1;
    const q = new Int8Array(weights.length);
    for (let i = 0; i < weights.length; i++) q[i] = Math.max(-127, Math.min(127, Math.round(weights[i]! / scale)));
    const [xq, xScale, xZero] = g.op('DynamicQuantizeLinear', [value], {}, 3) as [string, string, string];
    const product = g.op1('MatMulInteger', [xq, g.bytes(`${name}_quantized`, 'int8', [inDim, outDim], q), xZero, g.bytes(`${name}_zero_point`, 'int8', [], new Int8Array(1))]);
    return g.op1('Mul', [g.op1('Cast', [product], { to: 1 }), g.op1('Mul', [xScale, g.floats([scale], [])])]);
  };
  const linear = (value: string, name: string, inDim: number, outDim: number): string =>
    matmul(value, name, inDim, outDim, rng.normals(inDim * outDim, 1 / Math.sqrt(inDim)));
  const splitHeads = (value: string, heads: number): string =>
    g.op1('Transpose', [g.op1('Reshape', [value, g.int64s([0, 0, heads, D])])], { perm: [0, 2, 1, 3] });
  const halfSplit = g.int64s([half, half]);
  const rotary = (value: string): string => {
    const [x1, x2] = g.op('Split', [value, halfSplit], { axis: -1 }, 2) as [string, string];
    const rotated = g.op1('Concat', [g.op1('Neg', [x2]), x1], { axis: -1 });
    return g.op1('Add', [g.op1('Mul', [value, cos]), g.op1('Mul', [rotated, sin])]);
  };
  const groups = s.numHeads / s.numKvHeads;
  const repeatKv = (value: string): string => {
    if (groups === 1) return value;
    const expanded = g.op1('Expand', [g.op1('Unsqueeze', [value, g.int64s([2])]), g.int64s([1, 1, groups, 1, 1])]);
    return g.op1('Reshape', [expanded, g.int64s([0, s.numHeads, -1, D])]);
  };
  const scale = g.floats([1 / Math.sqrt(D)], []);

  for (let layer = 0; layer < s.numLayers; layer++) {
    progress(`layer ${layer + 1}/${s.numLayers}`);
    const p = `model.layers.${layer}`;
    const h = rmsNorm(x, `${p}.input_layernorm.weight`);
    const q = rotary(splitHeads(linear(h, `${p}.self_attn.q_proj.weight`, s.hiddenSize, s.numHeads * D), s.numHeads));
    const k = rotary(splitHeads(linear(h, `${p}.self_attn.k_proj.weight`, s.hiddenSize, s.numKvHeads * D), s.numKvHeads));
    const v = splitHeads(linear(h, `${p}.self_attn.v_proj.weight`, s.hiddenSize, s.numKvHeads * D), s.numKvHeads);
    const past = pastNames[layer]!;
    const keys = g.op1('Concat', [past.key, k], { axis: 2 });
    const values = g.op1('Concat', [past.value, v], { axis: 2 });
    g.alias(keys, `present.${layer}.key`);
    g.alias(values, `present.${layer}.value`);
    g.output(`present.${layer}.key`, 'float32', ['batch_size', s.numKvHeads, 'total_sequence_length', D]);
    g.output(`present.${layer}.value`, 'float32', ['batch_size', s.numKvHeads, 'total_sequence_length', D]);

    const keysT = g.op1('Transpose', [repeatKv(keys)], { perm: [0, 1, 3, 2] });
    const scores = g.op1('Add', [g.op1('Mul', [g.op1('MatMul', [q, keysT]), scale]), maskAdd]);
    const attn = g.op1('MatMul', [g.op1('Softmax', [scores], { axis: -1 }), repeatKv(values)]);
    const merged = g.op1('Reshape', [g.op1('Transpose', [attn], { perm: [0, 2, 1, 3] }), g.int64s([0, 0, s.numHeads * D])]);
    x = g.op1('Add', [x, linear(merged, `${p}.self_attn.o_proj.weight`, s.numHeads * D, s.hiddenSize)]);

    const h2 = rmsNorm(x, `${p}.post_attention_layernorm.weight`);
    const gate = linear(h2, `${p}.mlp.gate_proj.weight`, s.hiddenSize, s.intermediateSize);
    const up = linear(h2, `${p}.mlp.up_proj.weight`, s.hiddenSize, s.intermediateSize);
    const act = g.op1('Mul', [g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]), up]);
    x = g.op1('Add', [x, linear(act, `${p}.mlp.down_proj.weight`, s.intermediateSize, s.hiddenSize)]);
  }

  progress('lm head');
  const final = rmsNorm(x, 'model.norm.weight');
  const logitStd = options.logitStd ?? 8;
  const headStd = logitStd / Math.sqrt(s.hiddenSize);
  let logits = vision
    ? g.op1('MatMul', [final, factoredVocabMatrix(g, rng, 'lm_head.weight', s.hiddenSize, s.vocabSize, vision.vocabBlock, headStd, 'columns')])
    : matmul(final, 'lm_head.weight', s.hiddenSize, s.vocabSize, rng.normals(s.hiddenSize * s.vocabSize, headStd));
  if (options.suppressedTokenIds?.length) {
    const bias = new Float32Array(s.vocabSize);
    for (const id of options.suppressedTokenIds) bias[id] = -1e4;
    logits = g.op1('Add', [logits, g.weight('lm_head.bias', [s.vocabSize], bias)]);
  }
  g.alias(logits, 'logits');
  g.output('logits', 'float32', ['batch_size', 'sequence_length', s.vocabSize]);
  progress('serialising');
  return g;
}

/**
 * A [V,H] ('rows', an embedding table) or [H,V] ('columns', an output head) matrix as the sum of a
 * block-periodic part and a part constant within each block (see VisionDecoderOptions.vocabBlock):
 * token t's vector is A[t % block] + B[floor(t / block)], distinct for every t. ONNX Runtime folds
 * the Tile/Expand into one constant at load; the file holds only A and B. Each part has std/sqrt(2),
 * so the sum has the std asked for.
 */
export function factoredVocabMatrix(g: GraphBuilder, rng: SeededRandom, name: string, hidden: number, vocab: number, block: number, std: number, layout: 'rows' | 'columns'): string {
  if (vocab % block !== 0) throw new Error(`vocabBlock ${block} does not divide the vocabulary size ${vocab}`);
  const blocks = vocab / block;
  const part = std / Math.SQRT2;
  const periodic = g.weight(`${name}.periodic`, [block, hidden], rng.normals(block * hidden, part));
  const perBlock = g.weight(`${name}.per_block`, [blocks, 1, hidden], rng.normals(blocks * hidden, part));
  const tiled = g.op1('Tile', [periodic, g.int64s([blocks, 1])]); // row t: periodic[t % block]
  const repeated = g.op1('Reshape', [g.op1('Expand', [perBlock, g.int64s([blocks, block, hidden])]), g.int64s([vocab, hidden])]); // row t: perBlock[floor(t / block)]
  const rows = g.op1('Add', [tiled, repeated]);
  return layout === 'rows' ? rows : g.op1('Transpose', [rows], { perm: [1, 0] });
}

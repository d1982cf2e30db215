/**
 * Builds a BERT encoder (post-LayerNorm, GELU, absolute positions, token types) as an ONNX graph with
 * the signature of a Hugging Face feature-extraction export:
 *
 *   inputs:  input_ids, attention_mask, token_type_ids [B,S] int64
 *   outputs: last_hidden_state [B,S,H] float32
 *
 * Weights are deterministic pseudo-random values (BERT's N(0, 0.02) init): a forward pass costs what
 * the trained model of the same shape costs, which is what benchmarks need.
 */
import { GraphBuilder, SeededRandom } from './graph-builder.js';

export interface BertShape {
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  maxPositions: number;
  typeVocabSize: number;
  layerNormEps: number;
}

/** sentence-transformers/all-MiniLM-L6-v2. */
export const MINILM_L6_SHAPE: BertShape = {
  vocabSize: 30522, hiddenSize: 384, numLayers: 6, numHeads: 12, intermediateSize: 1536,
  maxPositions: 512, typeVocabSize: 2, layerNormEps: 1e-12,
};

/** The config.json fields of a BERT of this shape (a folder's architecture and labels come on top). */
export function bertConfig(shape: BertShape) {
  return {
    vocab_size: shape.vocabSize,
    hidden_size: shape.hiddenSize,
    num_hidden_layers: shape.numLayers,
    num_attention_heads: shape.numHeads,
    intermediate_size: shape.intermediateSize,
    max_position_embeddings: shape.maxPositions,
    type_vocab_size: shape.typeVocabSize,
    layer_norm_eps: shape.layerNormEps,
    pad_token_id: 0,
  };
}

/**
 * `head`: `hidden` outputs last_hidden_state (a feature-extraction export); `classifier` adds BERT's
 * pooler (the [CLS] row through a tanh dense layer) and a one-label classifier, and outputs `logits`
 * [B,1], as a cross-encoder's text-classification export does.
 */
export function buildBertEncoder(shape: BertShape, seed: number, head: 'hidden' | 'classifier' = 'hidden'): Uint8Array {
  const s = shape;
  const g = new GraphBuilder();
  const rng = new SeededRandom(seed);
  const H = s.hiddenSize;
  const D = H / s.numHeads;
  const init = (n: number) => rng.normals(n, 0.02);

  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'sequence_length']);
  const types = g.input('token_type_ids', 'int64', ['batch_size', 'sequence_length']);

  const seqLen = g.op1('Squeeze', [g.op1('Shape', [inputIds], { start: 1, end: 2 }), g.int64s([0])]);
  const positions = g.op1('Range', [g.int64s([0], []), seqLen, g.int64s([1], [])]);
  const words = g.op1('Gather', [g.weight('embeddings.word_embeddings.weight', [s.vocabSize, H], init(s.vocabSize * H)), inputIds], { axis: 0 });
  const pos = g.op1('Gather', [g.weight('embeddings.position_embeddings.weight', [s.maxPositions, H], init(s.maxPositions * H)), positions], { axis: 0 });
  const typ = g.op1('Gather', [g.weight('embeddings.token_type_embeddings.weight', [s.typeVocabSize, H], init(s.typeVocabSize * H)), types], { axis: 0 });

  const layerNorm = (x: string, name: string) =>
    g.op1('LayerNormalization', [x, g.weight(`${name}.weight`, [H], new Float32Array(H).fill(1)), g.weight(`${name}.bias`, [H], new Float32Array(H))], {
      axis: -1,
      epsilon: { float: s.layerNormEps },
    });
  const dense = (x: string, name: string, inDim: number, outDim: number) =>
    g.op1('Add', [g.op1('MatMul', [x, g.weight(`${name}.weight`, [inDim, outDim], init(inDim * outDim))]), g.weight(`${name}.bias`, [outDim], new Float32Array(outDim))]);

  let x = layerNorm(g.op1('Add', [g.op1('Add', [words, pos]), typ]), 'embeddings.LayerNorm');
  // Additive mask [B,1,1,S]: 0 for tokens, -1e9 for padding.
  const maskF = g.op1('Cast', [g.op1('Unsqueeze', [mask, g.int64s([1, 2])])], { to: 1 });
  const maskAdd = g.op1('Mul', [g.op1('Sub', [g.floats([1], []), maskF]), g.floats([-1e9], [])]);
  const heads = (v: string, perm: number[]) => g.op1('Transpose', [g.op1('Reshape', [v, g.int64s([0, 0, s.numHeads, D])])], { perm });
  const scale = g.floats([1 / Math.sqrt(D)], []);
  const sqrtHalf = g.floats([Math.SQRT1_2], []);

  for (let l = 0; l < s.numLayers; l++) {
    const p = `encoder.layer.${l}`;
    const q = heads(dense(x, `${p}.attention.self.query`, H, H), [0, 2, 1, 3]);
    const k = heads(dense(x, `${p}.attention.self.key`, H, H), [0, 2, 3, 1]);
    const v = heads(dense(x, `${p}.attention.self.value`, H, H), [0, 2, 1, 3]);
    const scores = g.op1('Add', [g.op1('Mul', [g.op1('MatMul', [q, k]), scale]), maskAdd]);
    const context = g.op1('MatMul', [g.op1('Softmax', [scores], { axis: -1 }), v]);
    const merged = g.op1('Reshape', [g.op1('Transpose', [context], { perm: [0, 2, 1, 3] }), g.int64s([0, 0, H])]);
    x = layerNorm(g.op1('Add', [x, dense(merged, `${p}.attention.output.dense`, H, H)]), `${p}.attention.output.LayerNorm`);
    const inner = dense(x, `${p}.intermediate.dense`, H, s.intermediateSize);
    // Exact GELU: 0.5 x (1 + erf(x / sqrt 2)).
    const gelu = g.op1('Mul', [g.op1('Mul', [inner, g.floats([0.5], [])]), g.op1('Add', [g.floats([1], []), g.op1('Erf', [g.op1('Mul', [inner, sqrtHalf])])])]);
    x = layerNorm(g.op1('Add', [x, dense(gelu, `${p}.output.dense`, s.intermediateSize, H)]), `${p}.output.LayerNorm`);
  }
  if (head === 'classifier') {
    // The head's weights are N(0, 1), not BERT's 0.02: with random weights the [CLS] row varies
    // little between inputs, and a small head would score every pair alike.
    const wide = (v: string, name: string, inDim: number, outDim: number) =>
      g.op1('Add', [g.op1('MatMul', [v, g.weight(`${name}.weight`, [inDim, outDim], rng.normals(inDim * outDim, 1))]), g.weight(`${name}.bias`, [outDim], new Float32Array(outDim))]);
    const cls = g.op1('Gather', [x, g.int64s([0], [])], { axis: 1 });
    const pooled = g.op1('Tanh', [wide(cls, 'pooler.dense', H, H)]);
    g.alias(wide(pooled, 'classifier', H, 1), 'logits');
    g.output('logits', 'float32', ['batch_size', 1]);
  } else {
    g.alias(x, 'last_hidden_state');
    g.output('last_hidden_state', 'float32', ['batch_size', 'sequence_length', H]);
  }
  return g.encode('local-inference-server bert-encoder builder');
}

/**
 * The two graphs a split Qwen-VL ONNX export has besides its decoder (causal-lm.ts with `vision`),
 * with the input and output names transformers.js's Qwen2VLForConditionalGeneration runs them by:
 *
 *   embed_tokens:   input_ids [B,S] int64 -> inputs_embeds [B,S,H] float32
 *   vision_encoder: pixel_values [P, C*T*p*p] float32, image_grid_thw [N,3] int64
 *                   -> image_features [P / merge², H] float32
 *
 * The vision encoder is the patch merger alone: each merge² consecutive patches (the image
 * processor orders them so that one merge window's patches are adjacent) concatenated, normalised
 * and projected to the text width through a GELU MLP, with deterministic pseudo-random weights. A
 * real encoder's transformer blocks before the merger change what the features mean, not how many
 * there are or how they reach the decoder, which is what the server's code is tested on.
 */
import { GraphBuilder, SeededRandom } from './graph-builder.js';
import { factoredVocabMatrix } from './causal-lm.js';

export interface VisionShape {
  /** Values per patch row of pixel_values: channels × temporal_patch_size × patch_size². */
  patchDim: number;
  mergeSize: number;
  /** Width of the merger's hidden layer. */
  mergerHidden: number;
  /** Text hidden size: the width of image_features. */
  outHidden: number;
}

const PRODUCER = 'local-inference-server vision-lm builder';

/** The token embedding graph, factored like the decoder's head (causal-lm.ts factoredVocabMatrix). */
export function buildEmbedTokens(options: { vocabSize: number; hiddenSize: number; vocabBlock: number; seed: number }): Uint8Array {
  const g = new GraphBuilder();
  const rng = new SeededRandom(options.seed);
  const ids = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const table = factoredVocabMatrix(g, rng, 'model.embed_tokens.weight', options.hiddenSize, options.vocabSize, options.vocabBlock, 1, 'rows');
  g.alias(g.op1('Gather', [table, ids], { axis: 0 }), 'inputs_embeds');
  g.output('inputs_embeds', 'float32', ['batch_size', 'sequence_length', options.hiddenSize]);
  return g.encode(PRODUCER);
}

export function buildVisionEncoder(shape: VisionShape, seed: number): Uint8Array {
  const g = new GraphBuilder();
  const rng = new SeededRandom(seed);
  const pixels = g.input('pixel_values', 'float32', ['num_patches', shape.patchDim]);
  // Read by the processor's placement of the features; the merger itself needs only the patch order.
  g.input('image_grid_thw', 'int64', ['num_images', 3]);
  const merged = shape.patchDim * shape.mergeSize ** 2;
  const windows = g.op1('Reshape', [pixels, g.int64s([-1, merged])]);
  const mean = g.op1('ReduceMean', [windows], { axes: [-1], keepdims: 1 });
  const centred = g.op1('Sub', [windows, mean]);
  const variance = g.op1('ReduceMean', [g.op1('Mul', [centred, centred])], { axes: [-1], keepdims: 1 });
  const normed = g.op1('Div', [centred, g.op1('Sqrt', [g.op1('Add', [variance, g.floats([1e-6], [])])])]);
  const fc1 = g.weight('visual.merger.mlp.0.weight', [merged, shape.mergerHidden], rng.normals(merged * shape.mergerHidden, 1 / Math.sqrt(merged)));
  const hidden = g.op1('MatMul', [normed, fc1]);
  // GELU, tanh form.
  const cube = g.op1('Mul', [g.op1('Mul', [hidden, hidden]), hidden]);
  const inner = g.op1('Mul', [g.op1('Add', [hidden, g.op1('Mul', [cube, g.floats([0.044715], [])])]), g.floats([Math.sqrt(2 / Math.PI)], [])]);
  const gelu = g.op1('Mul', [g.op1('Mul', [hidden, g.floats([0.5], [])]), g.op1('Add', [g.op1('Tanh', [inner]), g.floats([1], [])])]);
  const fc2 = g.weight('visual.merger.mlp.2.weight', [shape.mergerHidden, shape.outHidden], rng.normals(shape.mergerHidden * shape.outHidden, 1 / Math.sqrt(shape.mergerHidden)));
  g.alias(g.op1('MatMul', [gelu, fc2]), 'image_features');
  g.output('image_features', 'float32', ['num_image_tokens', shape.outHidden]);
  return g.encode(PRODUCER);
}

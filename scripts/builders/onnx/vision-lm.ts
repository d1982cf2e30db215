/**
 * The two graphs a split vision-language ONNX export has besides its decoder (causal-lm.ts with
 * `vision`), with the input and output names transformers.js's Qwen2VLForConditionalGeneration and
 * Gemma3ForConditionalGeneration run them by:
 *
 *   embed_tokens:   input_ids [B,S] int64 -> inputs_embeds [B,S,H] float32
 *   vision_encoder (Qwen-VL): pixel_values [P, C*T*p*p] float32, image_grid_thw [N,3] int64
 *                   -> image_features [P / merge², H] float32
 *   vision_encoder (Gemma 3): pixel_values [N, C, size, size] float32
 *                   -> image_features [N, (size / patch)², H] float32
 *
 * The vision encoder is the patch merger alone: each merge² consecutive patches (the image
 * processor orders them so that one merge window's patches are adjacent) concatenated, normalised
 * and projected to the text width through a GELU MLP, with deterministic pseudo-random weights. A
 * real encoder's transformer blocks before the merger change what the features mean, not how many
 * there are or how they reach the decoder, which is what the server's code is tested on. Gemma 3's
 * is the same projection over non-overlapping patches of its fixed-size image (a real one's SigLIP
 * tower, 4x4 average pooling and multimodal projector make 256 rows of a 896x896 image).
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
  g.alias(projection(g, rng, windows, merged, shape.mergerHidden, shape.outHidden, 'visual.merger.mlp'), 'image_features');
  g.output('image_features', 'float32', ['num_image_tokens', shape.outHidden]);
  return g.encode(PRODUCER);
}

export interface GemmaVisionShape {
  /** The side every image is resized to (preprocessor_config.json's size). */
  imageSize: number;
  /** Side of the square patches that each become one image token: (imageSize / patchSize)² tokens. */
  patchSize: number;
  projectorHidden: number;
  /** Text hidden size: the width of image_features. */
  outHidden: number;
}

export function buildGemmaVisionEncoder(shape: GemmaVisionShape, seed: number): Uint8Array {
  const g = new GraphBuilder();
  const rng = new SeededRandom(seed);
  const { imageSize: size, patchSize: p } = shape;
  if (size % p !== 0) throw new Error(`patch size ${p} does not divide the image size ${size}`);
  const side = size / p;
  const patchDim = 3 * p * p;
  const pixels = g.input('pixel_values', 'float32', ['batch_size', 3, size, size]);
  // [N,3,side,p,side,p] -> [N,side,side,3,p,p] -> [N, side², 3p²]: patches in row-major order.
  const grid = g.op1('Reshape', [pixels, g.int64s([-1, 3, side, p, side, p])]);
  const patches = g.op1('Reshape', [g.op1('Transpose', [grid], { perm: [0, 2, 4, 1, 3, 5] }), g.int64s([-1, side * side, patchDim])]);
  g.alias(projection(g, rng, patches, patchDim, shape.projectorHidden, shape.outHidden, 'multi_modal_projector.mlp'), 'image_features');
  g.output('image_features', 'float32', ['batch_size', side * side, shape.outHidden]);
  return g.encode(PRODUCER);
}

/** Each row of `rows` ([..., inDim]) normalised and projected to `outHidden` through a GELU MLP of width `width` (weights `name`.0 and `name`.2). */
function projection(g: GraphBuilder, rng: SeededRandom, rows: string, inDim: number, width: number, outHidden: number, name: string): string {
  const mean = g.op1('ReduceMean', [rows], { axes: [-1], keepdims: 1 });
  const centred = g.op1('Sub', [rows, mean]);
  const variance = g.op1('ReduceMean', [g.op1('Mul', [centred, centred])], { axes: [-1], keepdims: 1 });
  const normed = g.op1('Div', [centred, g.op1('Sqrt', [g.op1('Add', [variance, g.floats([1e-6], [])])])]);
  const fc1 = g.weight(`${name}.0.weight`, [inDim, width], rng.normals(inDim * width, 1 / Math.sqrt(inDim)));
  const hidden = g.op1('MatMul', [normed, fc1]);
  // GELU, tanh form.
  const cube = g.op1('Mul', [g.op1('Mul', [hidden, hidden]), hidden]);
  const inner = g.op1('Mul', [g.op1('Add', [hidden, g.op1('Mul', [cube, g.floats([0.044715], [])])]), g.floats([Math.sqrt(2 / Math.PI)], [])]);
  const gelu = g.op1('Mul', [g.op1('Mul', [hidden, g.floats([0.5], [])]), g.op1('Add', [g.op1('Tanh', [inner]), g.floats([1], [])])]);
  const fc2 = g.weight(`${name}.2.weight`, [width, outHidden], rng.normals(width * outHidden, 1 / Math.sqrt(width)));
  return g.op1('MatMul', [gelu, fc2]);
}

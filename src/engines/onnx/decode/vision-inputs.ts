/**
 * What the decoder of a split vision-language export is fed in place of token ids: `inputs_embeds`
 * (the embed_tokens graph's rows for the tokens, with each image's placeholder rows replaced by the
 * vision encoder's features for that image) and `position_ids`: 3-row M-RoPE positions (temporal,
 * height, width) for Qwen-VL, one row for Gemma 3. The same computation as transformers.js 4.3.1's
 * Qwen2VLForConditionalGeneration (its encode_image, default_merge_input_ids_with_image_features
 * and get_rope_index) and Gemma3ForConditionalGeneration (LlavaForConditionalGeneration's merge,
 * decoder_forward's positions), done per sequence so that the batch decoder can prefill it in
 * chunks and decode it in a batch with others.
 *
 * Qwen-VL:
 *
 * - each image goes through the image processor alone (Qwen2VLImageProcessor stacks a list of images
 *   along the temporal axis), and its grid must be the one the prompt was rendered with (the chat
 *   layer counts an image from its header: src/models/vision.ts);
 * - text tokens take one position each, all three rows alike, from one past the largest position
 *   before them; an image's tokens, from one past the text before it, take t, h, w offsets over its
 *   merged grid; after the prompt, a decoded token at cache length n sits at n + `delta`, where
 *   delta = (largest prompt position + 1) - prompt length (0 for a text prompt; negative after an image).
 *
 * Gemma 3:
 * - every image is resized to one size, and the vision encoder gives image_seq_length rows for it;
 * - positions are 1-D and 1-indexed, as transformers.js makes them for gemma3 (decoder_forward's
 *   start_index 1, following Python's Gemma3, whose positions are cache_position + 1): token i of the
 *   prompt at i + 1, a decoded token at cache length n at n + 1 (delta 1, images or not). Rotary
 *   attention sees only differences of positions, so the 1 matters only in being the same for the
 *   prompt and the tokens decoded after it;
 * - attention is causal throughout, an image's soft tokens included. Python transformers' Gemma 3
 *   lets one image's tokens attend to each other both ways in prefill (its token_type_ids mask), but
 *   the ONNX exports transformers.js runs take no token_type_ids (decoder_model_merged: inputs_embeds,
 *   attention_mask, position_ids, past KV, with the causal mask built inside), and transformers.js
 *   feeds none: we match what that decoder does, which also keeps an image's KV a prefix like any
 *   text's (a prefill cut inside an image, or a cached prefix ending in one, reads the same values).
 *
 * Contract: worker thread; one per loaded vision model, used by its decoder between forward passes.
 */
import { RawImage, Tensor, type ImageProcessor } from '@huggingface/transformers';
import type { SequenceImage } from '../../sequence.js';
import { lowResolutionMaxPixels, type VisionSpec } from '../../../models/vision.js';
import { f32, i64, i64Data, type OrtSession, type OrtTensor } from '../tensors.js';
import { imageUnreadable } from '../../../core/errors.js';

export interface VisionModel {
  spec: VisionSpec;
  /** The model's image processor (preprocessor_config.json). */
  processor: ImageProcessor;
  /**
   * The same with max_pixels lowered for low-resolution images (src/models/vision.ts
   * lowResolutionMaxPixels); absent where a low resolution changes nothing (Gemma 3's fixed size).
   */
  lowProcessor?: ImageProcessor;
  /** input_ids -> inputs_embeds. */
  embed: OrtSession;
  /** pixel_values, image_grid_thw -> image_features. */
  encoder: OrtSession;
  /** The text model's width: inputs_embeds' last dimension. */
  hiddenSize: number;
}

/** A prompt's decoder inputs: its rows of inputs_embeds, its rows of positions, and the offset of the positions after it. */
export interface PromptInputs {
  /** [n, hidden] row-major. */
  embeds: Float32Array;
  /** [rows, n] row-major: Qwen-VL's three (temporal, height, width), Gemma 3's one. */
  positions: BigInt64Array;
  rows: 1 | 3;
  delta: number;
}

/**
 * The processor for low-resolution images (VisionModel.lowProcessor): the same class on the same
 * config with max_pixels lowered (src/models/vision.ts lowResolutionMaxPixels), which
 * Qwen2VLImageProcessor's constructor reads ahead of size.longest_edge; undefined where a low
 * resolution changes nothing.
 */
export function lowResolutionProcessor(processor: ImageProcessor, spec: VisionSpec): ImageProcessor | undefined {
  const maxPixels = lowResolutionMaxPixels(spec);
  if (maxPixels === undefined) return undefined;
  return new (processor.constructor as new (config: object) => ImageProcessor)({ ...processor.config, max_pixels: maxPixels });
}

const ortTensor = (tensor: Tensor) => (tensor as unknown as { ort_tensor: unknown }).ort_tensor;

/** What the image processor makes of one image: the vision encoder's inputs. */
export interface ProcessedImage {
  pixel_values: Tensor;
  /** Qwen-VL's; Gemma 3's processor makes no grid. */
  image_grid_thw?: Tensor;
}

/** One processed image through the vision encoder: its image_features, [tokens x hidden] (also timed by scripts/bench/vision.ts). */
export async function runVisionEncoder(encoder: OrtSession, processed: ProcessedImage): Promise<Float32Array> {
  // Qwen2-VL's exports name the grid input grid_thw, Qwen2.5-VL's and Qwen3-VL's image_grid_thw
  // (transformers.js image_grid_thw_name); Gemma 3's takes pixel_values alone.
  const gridName = ['grid_thw', 'image_grid_thw'].find((name) => encoder.inputNames.includes(name));
  const out = await encoder.run({
    pixel_values: ortTensor(processed.pixel_values),
    ...(gridName ? { [gridName]: i64Data(processed.image_grid_thw!.data as BigInt64Array, [1, 3]) } : {}),
  });
  return out.image_features!.data as Float32Array;
}

/** Gemma 3's positions: 1-D, from 1 (see the module comment). */
export function gemmaPositions(n: number): { positions: BigInt64Array; delta: number } {
  return { positions: BigInt64Array.from({ length: n }, (_, i) => BigInt(i + 1)), delta: 1 };
}

/** The 3 x n M-RoPE positions of a prompt and its delta (see the module comment). */
export function mropePositions(n: number, images: readonly SequenceImage[], mergeSize: number): { positions: BigInt64Array; delta: number } {
  const positions = new BigInt64Array(3 * n);
  let next = 0;
  let at = 0;
  const text = (to: number) => {
    for (; at < to; at++, next++) positions[at] = positions[n + at] = positions[2 * n + at] = BigInt(next);
  };
  for (const image of [...images].sort((a, b) => a.start - b.start)) {
    text(image.start);
    const [t, h, w] = [image.grid[0], image.grid[1] / mergeSize, image.grid[2] / mergeSize];
    if (t * h * w !== image.length) throw new Error(`an image of ${image.length} tokens on a ${image.grid.join('x')} grid`);
    let largest = next - 1;
    for (let i = 0; i < image.length; i++, at++) {
      const p = [next + Math.floor(i / (h * w)), next + (Math.floor(i / w) % h), next + (i % w)];
      positions[at] = BigInt(p[0]!);
      positions[n + at] = BigInt(p[1]!);
      positions[2 * n + at] = BigInt(p[2]!);
      largest = Math.max(largest, ...p);
    }
    next = largest + 1;
  }
  text(n);
  return { positions, delta: next - n };
}

/** Decoded images kept from `check` for the prefill that follows it (each about width x height x 3 bytes). */
const DECODED_KEPT = 4;

export class VisionInputs {
  /** Images `check` decoded, by hash, until their sequence's prefill takes them (the oldest dropped past DECODED_KEPT). */
  private readonly decoded = new Map<string, RawImage>();

  /** `modelId`: named by the error for an image that does not decode. */
  constructor(private readonly model: VisionModel, private readonly modelId: string) {}

  /**
   * Decodes each image (refused, image_unreadable, when it does not), before its sequence starts;
   * the prefill then takes the decoded image instead of decoding it again.
   */
  async check(images: readonly SequenceImage[]): Promise<void> {
    for (const [index, image] of images.entries()) {
      if (this.decoded.has(image.hash)) continue;
      this.decoded.set(image.hash, await this.decode(image, index));
      if (this.decoded.size > DECODED_KEPT) this.decoded.delete(this.decoded.keys().next().value!);
    }
  }

  private async decode(image: SequenceImage, index: number): Promise<RawImage> {
    try {
      return await RawImage.fromBlob(new Blob([image.bytes as Uint8Array<ArrayBuffer>]));
    } catch (error) {
      throw unreadable(this.modelId, index, error);
    }
  }

  /** Rows of inputs_embeds for `ids` ([rows of ids.length] x hidden). */
  async embed(ids: readonly number[]): Promise<Float32Array> {
    const out = await this.model.embed.run({ input_ids: i64(ids, [1, ids.length]) });
    return out.inputs_embeds!.data as Float32Array;
  }

  /**
   * A prompt's inputs. Images whose tokens all lie before `from` (a cached prefix holds them) are
   * not encoded: their rows are never fed.
   */
  async prompt(ids: readonly number[], images: readonly SequenceImage[], from = 0): Promise<PromptInputs> {
    const { hiddenSize, spec } = this.model;
    const embeds = await this.embed(ids);
    for (const [index, image] of images.entries()) {
      if (image.start + image.length <= from) continue;
      const features = await this.encode(image, index);
      if (features.length !== image.length * hiddenSize) throw new Error(`the vision encoder gave ${features.length / hiddenSize} rows for an image of ${image.length} tokens`);
      embeds.set(features, image.start * hiddenSize);
    }
    return spec.family === 'gemma3' ? { embeds, rows: 1, ...gemmaPositions(ids.length) } : { embeds, rows: 3, ...mropePositions(ids.length, images, spec.mergeSize) };
  }

  /**
   * One image (the prompt's `index`-th) through the processor and the vision encoder: its
   * image_features, [tokens x hidden]. Bytes whose header passed the edge's checks but whose pixels
   * do not decode are the client's image_unreadable, not an internal error.
   */
  private async encode(image: SequenceImage, index: number): Promise<Float32Array> {
    const raw = this.decoded.get(image.hash) ?? (await this.decode(image, index));
    this.decoded.delete(image.hash);
    let processed: ProcessedImage;
    try {
      const processor = image.lowResolution ? (this.model.lowProcessor ?? this.model.processor) : this.model.processor;
      processed = await processor(raw) as unknown as ProcessedImage;
    } catch (error) {
      throw unreadable(this.modelId, index, error);
    }
    const spec = this.model.spec;
    if (spec.family === 'gemma3') {
      const dims = processed.pixel_values.dims.join('x');
      if (dims !== `1x3x${spec.height}x${spec.width}`) throw new Error(`the image processor made ${dims} pixel_values where the prompt counted a ${spec.height}x${spec.width} image`);
    } else {
      const grid = Array.from(processed.image_grid_thw!.data as BigInt64Array, Number);
      if (grid.join() !== image.grid.join()) throw new Error(`the image processor made a ${grid.join('x')} grid of an image the prompt counted as ${image.grid.join('x')}`);
    }
    return runVisionEncoder(this.model.encoder, processed);
  }

  /** Feeds for a prefill pass over rows [from, to) of a prompt's inputs. */
  static chunkFeeds(inputs: PromptInputs, from: number, to: number, hiddenSize: number): Record<string, unknown> {
    const { rows } = inputs;
    const n = inputs.positions.length / rows;
    const count = to - from;
    const positions = new BigInt64Array(rows * count);
    for (let r = 0; r < rows; r++) positions.set(inputs.positions.subarray(r * n + from, r * n + to), r * count);
    return {
      inputs_embeds: f32(inputs.embeds.slice(from * hiddenSize, to * hiddenSize), [1, count, hiddenSize]),
      position_ids: i64Data(positions, rows === 3 ? [3, 1, count] : [1, count]),
    };
  }

  /** Feeds for a decoding step: each row's last token embedded, at its cache length plus its delta. */
  async stepFeeds(tokens: readonly number[], at: readonly number[]): Promise<Record<string, unknown>> {
    const B = tokens.length;
    const embeds = await this.embed(tokens);
    const rows = this.model.spec.family === 'gemma3' ? 1 : 3;
    const positions = new BigInt64Array(rows * B);
    for (let r = 0; r < rows; r++) for (let b = 0; b < B; b++) positions[r * B + b] = BigInt(at[b]!);
    return {
      inputs_embeds: f32(embeds, [B, 1, this.model.hiddenSize]),
      position_ids: i64Data(positions, rows === 3 ? [3, B, 1] : [B, 1]),
    };
  }
}

/** The client's image_unreadable for an image whose decoding or processing threw. */
function unreadable(modelId: string, index: number, error: unknown) {
  const detail = String((error as Error)?.message ?? error).split('\n')[0]!.slice(0, 200);
  return imageUnreadable(modelId, index, `its bytes do not decode (${detail})`);
}

export type { OrtTensor };

/**
 * A low-resolution view of an image (OpenAI's `detail: low`, the core's ChatImage.lowResolution):
 * src/models/vision.ts lowResolutionMaxPixels and imageGrid, whose grids the chat layer counts a
 * prompt by, worked out here by hand from each processor's settings; and the processor the engine
 * runs for such an image (src/engines/onnx/decode/vision-inputs.ts lowResolutionProcessor), built
 * from the bundled model's preprocessor_config.json, making the same grids of real pixels.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AutoImageProcessor, RawImage, type ImageProcessor, type Tensor } from '@huggingface/transformers';
import { imageGrid, LOW_RESOLUTION_PIXELS, lowResolutionMaxPixels, readVisionSpec, type QwenVlSpec, type VisionSpec } from '../../src/models/vision.js';
import { lowResolutionProcessor } from '../../src/engines/onnx/decode/vision-inputs.js';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { GEMMA_VISION_MODEL, MODELS_DIR, VISION_MODEL } from '../helpers/paths.js';

const json = (model: string, file: string) => JSON.parse(fs.readFileSync(path.join(MODELS_DIR, model, file), 'utf8')) as Record<string, any>;
const specOf = (model: string, files: string[] = []): VisionSpec => {
  const [processor, tokenizerConfig] = files.map((file) => json(model, file));
  const spec = readVisionSpec({ config: json(model, 'config.json'), preprocessor: json(model, 'preprocessor_config.json'), processor, tokenizerConfig });
  if (typeof spec === 'string') throw new Error(spec);
  return spec;
};
/** The bundled Qwen3-VL-shaped model's spec, from its files. */
const qwen3 = () => specOf(VISION_MODEL) as QwenVlSpec;
/** Qwen2.5-VL's published preprocessor settings: 14-pixel patches merged 2x2, 3,136 to 12,845,056 pixels. */
const qwen25: QwenVlSpec = { family: 'qwen-vl', modelType: 'qwen2_5_vl', imageTokenId: 1, visionStartTokenId: 2, patchSize: 14, mergeSize: 2, temporalPatchSize: 2, minPixels: 3136, maxPixels: 12845056 };

describe('the resize rule of a low-resolution image', () => {
  it('the bundled model has the settings the hand counts assume', () => {
    expect(qwen3()).toMatchObject({ patchSize: 16, mergeSize: 2, temporalPatchSize: 2, minPixels: 65536, maxPixels: 16777216 });
    expect(LOW_RESOLUTION_PIXELS).toBe(512 * 512);
  });

  it('Qwen3-VL (the bundled model): a 1000x700 image is 682 tokens by default and 247 at low resolution', () => {
    // Default, by hand: one token per 32x32 pixels (16-pixel patches merged 2x2). round(1000 / 32) = 31
    // -> 992 wide, round(700 / 32) = 22 -> 704 high; 992 * 704 = 698,368 pixels, within
    // [65,536, 16,777,216]: a 44 x 62 patch grid, 2,728 / 4 = 682 tokens.
    expect(imageGrid(qwen3(), 1000, 700)).toEqual({ thw: [1, 44, 62], tokens: 682 });
    expect(imageGrid(qwen3(), 1000, 700, { lowResolution: false })).toEqual({ thw: [1, 44, 62], tokens: 682 });
    // Low, by hand: max_pixels becomes 512 * 512 = 262,144; 698,368 is over it, so both sides shrink by
    // beta = sqrt(1000 * 700 / 262,144) = 1.6341 and round down to 32: 1000 / 1.6341 = 611.96 -> 19 * 32
    // = 608 wide, 700 / 1.6341 = 428.37 -> 13 * 32 = 416 high (252,928 pixels): a 26 x 38 patch grid,
    // 988 / 4 = 247 tokens.
    expect(lowResolutionMaxPixels(qwen3())).toBe(262144);
    expect(imageGrid(qwen3(), 1000, 700, { lowResolution: true })).toEqual({ thw: [1, 26, 38], tokens: 247 });
  });

  it('Qwen2.5-VL: a 1000x700 image is 900 tokens by default and 315 at low resolution', () => {
    // One token per 28x28 pixels. Default: round(1000 / 28) = 36 -> 1008, round(700 / 28) = 25 -> 700;
    // 705,600 pixels, within bounds: 50 x 72 patches, 900 tokens. Low: beta 1.6341 as above,
    // 611.96 / 28 = 21.86 -> 588 wide, 428.37 / 28 = 15.30 -> 420 high: 30 x 42 patches, 315 tokens.
    expect(imageGrid(qwen25, 1000, 700)).toEqual({ thw: [1, 50, 72], tokens: 900 });
    expect(imageGrid(qwen25, 1000, 700, { lowResolution: true })).toEqual({ thw: [1, 30, 42], tokens: 315 });
  });

  it('an image already within the budget is the same grid at low resolution', () => {
    // 300x200 on the bundled model: under its 65,536-pixel minimum, scaled up to 320x224 (70 tokens), far under 512².
    expect(imageGrid(qwen3(), 300, 200, { lowResolution: true })).toEqual(imageGrid(qwen3(), 300, 200));
    expect(imageGrid(qwen3(), 300, 200, { lowResolution: true }).tokens).toBe(70);
  });

  it('the budget never goes under the processor\'s min_pixels, and a model already within it keeps its own max_pixels', () => {
    expect(lowResolutionMaxPixels({ ...qwen25, minPixels: 300_000 })).toBe(300_000);
    const small = { ...qwen25, maxPixels: 200_704 };
    expect(lowResolutionMaxPixels(small)).toBeUndefined();
    expect(imageGrid(small, 1000, 700, { lowResolution: true })).toEqual(imageGrid(small, 1000, 700));
  });

  it('Gemma 3 (fixed size): a low resolution changes nothing, every image is image_seq_length tokens', () => {
    const gemma = specOf(GEMMA_VISION_MODEL, ['processor_config.json', 'tokenizer_config.json']);
    expect(lowResolutionMaxPixels(gemma)).toBeUndefined();
    expect(imageGrid(gemma, 1000, 700, { lowResolution: true })).toEqual({ thw: [1, 1, 16], tokens: 16 });
    expect(imageGrid(gemma, 1000, 700)).toEqual({ thw: [1, 1, 16], tokens: 16 });
  });
});

describe('the processor the engine runs for a low-resolution image', () => {
  let processor: ImageProcessor;
  beforeAll(async () => {
    useLocalModels(MODELS_DIR);
    processor = await AutoImageProcessor.from_pretrained(VISION_MODEL, { local_files_only: true });
  });

  /** A width x height RGB image (a gradient, so resizing has something to interpolate). */
  const image = (width: number, height: number) => {
    const data = new Uint8ClampedArray(width * height * 3);
    for (let i = 0; i < width * height; i++) data.set([(i % width) % 256, Math.floor(i / width) % 256, 128], i * 3);
    return new RawImage(data, width, height, 3);
  };
  const gridOf = async (p: ImageProcessor, raw: RawImage) => Array.from(((await p(raw)) as unknown as { image_grid_thw: Tensor }).image_grid_thw.data as BigInt64Array, Number);

  it('makes the hand-counted grids of a 1000x700 image: 26 x 38 at low resolution, 44 x 62 by the model\'s own', async () => {
    const low = lowResolutionProcessor(processor, qwen3())!;
    expect(low).toBeDefined();
    const raw = image(1000, 700);
    expect(await gridOf(low, raw)).toEqual([1, 26, 38]);
    expect(await gridOf(processor, raw)).toEqual([1, 44, 62]);
  });

  it('none for Gemma 3', async () => {
    const gemma = specOf(GEMMA_VISION_MODEL, ['processor_config.json', 'tokenizer_config.json']);
    expect(lowResolutionProcessor(processor, gemma)).toBeUndefined();
  });
});

/**
 * The bundled vision-language model (scripts/builders/bundled/vision-model.ts) on transformers.js's
 * own classes: AutoProcessor (Qwen3VLProcessor over Qwen2VLImageProcessor) reads its
 * preprocessor_config.json and chat template, Qwen3VLForConditionalGeneration loads the three
 * graphs of the split export and generates with an image. The image token counts are worked out
 * here by hand from preprocessor_config.json, not by the processor's own resize function, and
 * checked against src/models/vision.ts imageGrid, which the chat layer counts a prompt's images by.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { AutoProcessor, Qwen3VLForConditionalGeneration, RawImage, type Processor, type Tensor } from '@huggingface/transformers';
import { useLocalModels } from '../../src/tokenize/local-models.js';
import { scanModels } from '../../src/models/registry.js';
import { imageGrid, type VisionSpec } from '../../src/models/vision.js';
import { modelFileBytes, modelSignature } from '../../src/models/signature.js';
import { MODELS_DIR, VISION_MODEL } from '../helpers/paths.js';

const config = JSON.parse(fs.readFileSync(path.join(MODELS_DIR, VISION_MODEL, 'config.json'), 'utf8')) as { image_token_id: number; vision_start_token_id: number; vision_end_token_id: number };
const preprocessor = JSON.parse(fs.readFileSync(path.join(MODELS_DIR, VISION_MODEL, 'preprocessor_config.json'), 'utf8')) as {
  patch_size: number;
  merge_size: number;
  temporal_patch_size: number;
  size: { shortest_edge: number; longest_edge: number };
};

/** A width x height PNG (a gradient, so resizing has something to interpolate), decoded as the server's intake would hand it on. */
async function png(width: number, height: number): Promise<RawImage> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) raw.set([(i % width) % 256, Math.floor(i / width) % 256, 128], i * 3);
  const bytes = await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
  return RawImage.fromBlob(new Blob([new Uint8Array(bytes)]));
}

let processor: Processor;
const spec = () => scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === VISION_MODEL)!.vision as VisionSpec;
beforeAll(async () => {
  useLocalModels(MODELS_DIR);
  processor = await AutoProcessor.from_pretrained(VISION_MODEL, { local_files_only: true });
});

const MESSAGES = [{ role: 'user', content: [{ type: 'image' }, { type: 'text', text: 'What is in the picture?' }] }];
const prompt = () => processor.apply_chat_template(MESSAGES as never, { add_generation_prompt: true }) as unknown as string;
const ids = (tensor: Tensor) => (tensor.tolist() as bigint[][])[0]!.map(Number);

describe('the bundled vision model (tiny-qwen3-vl-random)', () => {
  it('has the settings the hand counts below assume', () => {
    // 16-pixel patches merged 2x2 into one token: one token per 32x32 pixels; at least 65,536 pixels.
    expect(preprocessor).toMatchObject({ patch_size: 16, merge_size: 2, temporal_patch_size: 2, size: { shortest_edge: 65536, longest_edge: 16777216 } });
  });

  it('renders an image part as one <|image_pad|> between the vision markers, and the processor widens it to the image\'s token count', async () => {
    const text = prompt();
    expect(text).toBe('<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What is in the picture?<|im_end|>\n<|im_start|>assistant\n');

    // 300x200, by hand: rounded to multiples of 32 it is 288x192 = 55,296 pixels, under the 65,536
    // minimum, so both sides scale by sqrt(65536 / (300 * 200)) = 1.0451 and round up to 32:
    // ceil(313.5 / 32) * 32 = 320 wide, ceil(209.0 / 32) * 32 = 224 high. That is a grid of
    // 320/16 = 20 by 224/16 = 14 patches (280, each 3 x 2 x 16 x 16 = 1,536 values), merged 2x2:
    // 280 / 4 = 70 image tokens.
    const small = await processor(text, await png(300, 200));
    expect((small.image_grid_thw as Tensor).tolist()).toEqual([[1n, 14n, 20n]]);
    expect((small.pixel_values as Tensor).dims).toEqual([280, 1536]);
    expect(ids(small.input_ids as Tensor).filter((id) => id === config.image_token_id)).toHaveLength(70);
    expect(imageGrid(spec(), 300, 200)).toEqual({ thw: [1, 14, 20], tokens: 70 });

    // 500x333, by hand: round(500 / 32) = 16 -> 512 wide, round(333 / 32) = 10 -> 320 high;
    // 512 * 320 = 163,840 pixels, within [65,536, 16,777,216], so no scaling: a 32 x 20 grid of
    // patches, 640 / 4 = 160 image tokens.
    const wide = await processor(text, await png(500, 333));
    expect((wide.image_grid_thw as Tensor).tolist()).toEqual([[1n, 20n, 32n]]);
    expect(imageGrid(spec(), 500, 333)).toEqual({ thw: [1, 20, 32], tokens: 160 });
    const tokens = ids(wide.input_ids as Tensor);
    expect(tokens.filter((id) => id === config.image_token_id)).toHaveLength(160);
    // The placeholders sit, contiguous, between the markers.
    const start = tokens.indexOf(config.vision_start_token_id);
    expect(tokens[start + 161]).toBe(config.vision_end_token_id);
    // Everything but the image is the text prompt's tokens: the count grows by exactly the image's tokens.
    const textOnly = ids((await processor(text)).input_ids as Tensor);
    expect(tokens.length).toBe(textOnly.length - 1 + 160);
  });

  it('renders several images across a conversation in order (a tool result\'s included); the image processor counts each alone', async () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'Compare' }, { type: 'image' }] },
      { role: 'assistant', content: 'Taking a screenshot.' },
      { role: 'tool', content: [{ type: 'image' }] },
    ];
    const text = processor.apply_chat_template(messages as never, { add_generation_prompt: true }) as unknown as string;
    expect(text.split('<|vision_start|><|image_pad|><|vision_end|>')).toHaveLength(3);
    expect(text).toContain('<tool_response>\n<|vision_start|><|image_pad|><|vision_end|>\n</tool_response>');
    // transformers.js 4.3.1's Qwen2VLImageProcessor takes one image per call: a list is stacked along
    // the temporal axis (two 300x200 images come back as ONE 1x14x20 grid, 70 tokens), and images of
    // different sizes do not stack at all. So each image goes through it alone; the grids, by hand
    // as above, are 14x20 (70 tokens) and 20x32 (160).
    const imageProcessor = processor.image_processor!;
    const grids = await Promise.all([png(300, 200), png(500, 333)].map(async (image) => ((await imageProcessor(await image)).image_grid_thw as Tensor).tolist()));
    expect(grids).toEqual([[[1n, 14n, 20n]], [[1n, 20n, 32n]]]);
    const stacked = await imageProcessor([await png(300, 200), await png(300, 200)]);
    expect((stacked.image_grid_thw as Tensor).tolist()).toEqual([[1n, 14n, 20n]]);
  });

  it('loads the split export (embed_tokens, vision_encoder, decoder_model_merged) and generates greedily with the image', async () => {
    const model = await Qwen3VLForConditionalGeneration.from_pretrained(VISION_MODEL, { dtype: 'fp32', local_files_only: true });
    try {
      const inputs = await processor(prompt(), await png(300, 200));
      const out = ids((await model.generate({ ...inputs, max_new_tokens: 4, do_sample: false } as never)) as Tensor);
      const promptLength = (inputs.input_ids as Tensor).dims[1]!;
      expect(out.slice(0, promptLength)).toEqual(ids(inputs.input_ids as Tensor));
      const generated = out.slice(promptLength);
      expect(generated.length).toBeGreaterThan(0);
      expect(generated.length).toBeLessThanOrEqual(4);
      // The image reaches the decoder: another image (the same token count, other pixels and grid) changes the logits.
      const other = await processor(prompt(), await png(200, 300));
      expect((other.input_ids as Tensor).dims[1]).toBe(promptLength);
      const logits = async (x: Record<string, unknown>) => Array.from(((await model(x)) as { logits: Tensor }).logits.data as Float32Array).slice(-8);
      expect(await logits(other)).not.toEqual(await logits(inputs));
    } finally {
      await model.dispose();
    }
  });

  it('is served by the scanner as a split Qwen-VL export: its decoder, the text model\'s context, its image settings', () => {
    const scan = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 });
    expect(scan.notServedYet).toBeUndefined();
    expect(scan.models.find((m) => m.id === VISION_MODEL)).toMatchObject({
      task: 'chat', dtype: 'fp32', onnxFile: 'onnx/decoder_model_merged.onnx', contextLength: 32768, imageInput: true,
      vision: { modelType: 'qwen3_vl', imageTokenId: config.image_token_id, visionStartTokenId: config.vision_start_token_id, patchSize: 16, mergeSize: 2, temporalPatchSize: 2, minPixels: 65536, maxPixels: 16777216 },
    });
    // Its weights are its three graphs', and a change to any of them (or to its image settings) changes its signature.
    const info = scan.models.find((m) => m.id === VISION_MODEL)!;
    const graphs = ['decoder_model_merged', 'embed_tokens', 'vision_encoder'].map((g) => fs.statSync(path.join(MODELS_DIR, VISION_MODEL, 'onnx', `${g}.onnx`)).size);
    expect(modelFileBytes(info)).toBe(graphs.reduce((a, b) => a + b, 0));
    const signed = JSON.parse(modelSignature(info)).files as string[];
    expect(signed.filter((f) => /^onnx\/|preprocessor/.test(f)).map((f) => f.split(':')[0])).toEqual(['onnx/decoder_model_merged.onnx', 'onnx/embed_tokens.onnx', 'onnx/vision_encoder.onnx', 'preprocessor_config.json']);
  });
});

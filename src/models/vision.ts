/**
 * What a split vision-language export says about its images, read once at the scan from its
 * config.json, preprocessor_config.json (and, for Gemma 3, processor_config.json and
 * tokenizer_config.json) (plain data: crosses threads with the model's info), and the number of
 * tokens an image of a given size becomes, which the chat layer needs to render and count a prompt
 * without decoding the image.
 *
 * Served:
 * - the Qwen-VL family (qwen2_vl, qwen2_5_vl, qwen3_vl), whose processor is transformers.js's
 *   Qwen2VLImageProcessor (an image's tokens depend on its size) and whose decoder takes 3-row
 *   M-RoPE positions;
 * - Gemma 3 (gemma3), whose processor resizes every image to one fixed size and whose prompt holds
 *   each image as `\n\n<start_of_image>` + image_seq_length soft tokens + `<end_of_image>\n\n`
 *   (transformers.js's Gemma3Processor), fed to a decoder with plain 1-D positions.
 * Other vision-language exports (SmolVLM, LFM2-VL, ...) are recognised and held back by the scanner
 * (./registry.ts).
 */

/** The model types whose split export the ONNX engine serves, by family. */
export const QWEN_VL_TYPES = ['qwen2_vl', 'qwen2_5_vl', 'qwen3_vl'] as const;
export const GEMMA3_TYPES = ['gemma3'] as const;
export const VISION_TYPES: readonly string[] = [...QWEN_VL_TYPES, ...GEMMA3_TYPES];

interface VisionSpecBase {
  /** config.json model_type. */
  modelType: string;
  /** The placeholder one image token is (Qwen-VL's `<|image_pad|>`, Gemma 3's `<image_soft_token>`). */
  imageTokenId: number;
  /** The marker just before an image's tokens (`<|vision_start|>`, `<start_of_image>`). */
  visionStartTokenId: number;
}

export interface QwenVlSpec extends VisionSpecBase {
  family: 'qwen-vl';
  /** Qwen2VLImageProcessor's settings (preprocessor_config.json). */
  patchSize: number;
  mergeSize: number;
  temporalPatchSize: number;
  minPixels: number;
  maxPixels: number;
}

export interface Gemma3Spec extends VisionSpecBase {
  family: 'gemma3';
  /** Soft tokens per image, whatever its size (processor_config.json's image_seq_length). */
  imageSeqLength: number;
  /** The size every image is resized to (preprocessor_config.json's size). */
  height: number;
  width: number;
  /**
   * The text the template renders for an image (tokenizer_config.json's boi_token) and what
   * Gemma3Processor replaces it with before tokenizing, with one soft token (the chat layer widens
   * it to imageSeqLength): `\n\n` + boi + image_token + eoi + `\n\n`.
   */
  boiToken: string;
  imageSequence: string;
}

export type VisionSpec = QwenVlSpec | Gemma3Spec;

/** The image's size as the processor resizes it, and its grid of merged tokens. */
export interface ImageGrid {
  /** Temporal, height and width patches (image_grid_thw); a Gemma 3 image's tokens as one row, [1, 1, image_seq_length]. */
  thw: [number, number, number];
  /** Image tokens: t * h * w / merge². */
  tokens: number;
}

const positiveInt = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0;

/** The files readVisionSpec reads (undefined where absent). */
export interface VisionFiles {
  config: Record<string, any>;
  preprocessor?: Record<string, any>;
  processor?: Record<string, any>;
  tokenizerConfig?: Record<string, any>;
}

/** The vision spec of a Qwen-VL or Gemma 3 export, or why it cannot be served (a missing or odd setting). */
export function readVisionSpec(files: VisionFiles): VisionSpec | string {
  const { config, preprocessor } = files;
  if (!preprocessor) return 'no preprocessor_config.json';
  const modelType = String(config.model_type);
  const spec = (GEMMA3_TYPES as readonly string[]).includes(modelType)
    ? {
        family: 'gemma3',
        modelType,
        imageTokenId: config.image_token_index ?? config.image_token_id,
        visionStartTokenId: config.boi_token_index,
        // Gemma3Processor reads it from processor_config.json (uses_processor_config); exports also repeat it in preprocessor_config.json.
        imageSeqLength: files.processor?.image_seq_length ?? preprocessor.image_seq_length,
        height: preprocessor.size?.height,
        width: preprocessor.size?.width,
      }
    : {
        family: 'qwen-vl',
        modelType,
        imageTokenId: config.image_token_id ?? config.image_token_index,
        visionStartTokenId: config.vision_start_token_id,
        patchSize: preprocessor.patch_size,
        mergeSize: preprocessor.merge_size,
        temporalPatchSize: preprocessor.temporal_patch_size,
        minPixels: preprocessor.min_pixels ?? preprocessor.size?.shortest_edge,
        maxPixels: preprocessor.max_pixels ?? preprocessor.size?.longest_edge,
      };
  const odd = Object.entries(spec).filter(([key, value]) => key !== 'modelType' && key !== 'family' && !positiveInt(value)).map(([key]) => key);
  if (odd.length > 0) return `config.json or preprocessor_config.json lacks ${odd.join(', ')}`;
  if (spec.family === 'qwen-vl') return spec as QwenVlSpec;
  const tokens = files.tokenizerConfig ?? {};
  const [boi, image, eoi] = [tokens.boi_token, tokens.image_token, tokens.eoi_token];
  if (![boi, image, eoi].every((t) => typeof t === 'string' && t !== '')) return 'tokenizer_config.json lacks boi_token, image_token or eoi_token';
  return { ...spec, boiToken: boi, imageSequence: `\n\n${boi}${image}${eoi}\n\n` } as Gemma3Spec;
}

/**
 * The pixel budget of a low-resolution image: OpenAI's `detail: low` gives the model "a low-res
 * 512px x 512px version of the image" (platform.openai.com/docs/guides/images-vision). A Qwen-VL
 * processor's own knob for an image's resolution is its max_pixels (Qwen2-VL's model card sets
 * min_pixels and max_pixels to trade detail for speed and memory), so a low-resolution image is
 * processed with max_pixels lowered to 512 x 512 rather than shrunk to fit 512x512 first and then
 * resized by the processor: one resampling instead of two, the processor's own rule (aspect ratio kept, sides in
 * multiples of patch x merge, min_pixels honoured) decides the grid, and what the vision encoder sees
 * depends on the bytes and the grid alone, so the grid is all the prefix cache must key on beside
 * the bytes (src/engines/onnx/decode/image-keys.ts). At most 512² / (patch x merge)² tokens: 256
 * for Qwen3-VL's 16-pixel patches, 334 for Qwen2-VL's and Qwen2.5-VL's 14-pixel ones.
 */
export const LOW_RESOLUTION_PIXELS = 512 * 512;

/**
 * The max_pixels a low-resolution image is processed with, or undefined where asking for one
 * changes nothing: Gemma 3 resizes every image to one fixed size (its processor has no pixel budget;
 * each image is imageSeqLength tokens whatever is asked, which is as close to OpenAI's `low` as the
 * model allows), and a Qwen-VL model whose own max_pixels is already within the budget. Never under
 * the processor's min_pixels, which smart_resize would otherwise contradict.
 */
export function lowResolutionMaxPixels(spec: VisionSpec): number | undefined {
  if (spec.family === 'gemma3') return undefined;
  const budget = Math.max(spec.minPixels, LOW_RESOLUTION_PIXELS);
  return budget < spec.maxPixels ? budget : undefined;
}

/** How an image is to be seen: `lowResolution`, within LOW_RESOLUTION_PIXELS (see there); else the processor's own settings. */
export interface ImageView {
  lowResolution?: boolean;
}

/** Thrown for an image the processor cannot take (an aspect ratio over 200). */
export class ImageShapeError extends Error {}

/**
 * The grid Qwen2VLImageProcessor makes of a still image of `width` x `height` pixels: its
 * smart_resize (transformers.js src/image_processors_utils.js, restated so that a prompt is counted
 * from the image's header, without decoding it), each side a multiple of patch x merge within
 * [minPixels, maxPixels] (maxPixels lowered for a low-resolution view: lowResolutionMaxPixels), then
 * patches of patch x patch, two frames of one image making one temporal patch. The engine checks the
 * processor's own grid against it (src/engines/onnx/decode/vision-inputs.ts).
 */
export function imageGrid(spec: VisionSpec, width: number, height: number, view: ImageView = {}): ImageGrid {
  // Gemma 3: every image is resized to one size and becomes imageSeqLength tokens, in one row; a
  // low-resolution view is the same (lowResolutionMaxPixels).
  if (spec.family === 'gemma3') return { thw: [1, 1, spec.imageSeqLength], tokens: spec.imageSeqLength };
  const factor = spec.patchSize * spec.mergeSize;
  const maxPixels = (view.lowResolution ? lowResolutionMaxPixels(spec) : undefined) ?? spec.maxPixels;
  let h = height;
  let w = width;
  if (h < factor || w < factor) {
    const scale = Math.max(factor / h, factor / w);
    h = Math.round(h * scale);
    w = Math.round(w * scale);
  }
  if (Math.max(h, w) / Math.min(h, w) > 200) throw new ImageShapeError(`an aspect ratio of ${(Math.max(h, w) / Math.min(h, w)).toFixed(0)}:1 (the model's image processor takes at most 200:1)`);
  let hBar = Math.round(h / factor) * factor;
  let wBar = Math.round(w / factor) * factor;
  if (hBar * wBar > maxPixels) {
    const beta = Math.sqrt((h * w) / maxPixels);
    hBar = Math.max(factor, Math.floor(h / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(w / beta / factor) * factor);
  } else if (hBar * wBar < spec.minPixels) {
    const beta = Math.sqrt(spec.minPixels / (h * w));
    hBar = Math.ceil((h * beta) / factor) * factor;
    wBar = Math.ceil((w * beta) / factor) * factor;
  }
  const thw: [number, number, number] = [1, hBar / spec.patchSize, wBar / spec.patchSize];
  return { thw, tokens: (thw[0] * thw[1] * thw[2]) / spec.mergeSize ** 2 };
}

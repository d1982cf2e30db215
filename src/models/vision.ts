/**
 * What a split vision-language export says about its images, read once at the scan from its
 * config.json and preprocessor_config.json (plain data: crosses threads with the model's info), and
 * the number of tokens an image of a given size becomes, which the chat layer needs to render and
 * count a prompt without decoding the image.
 *
 * Served: the Qwen-VL family (qwen2_vl, qwen2_5_vl, qwen3_vl), whose processor is transformers.js's
 * Qwen2VLImageProcessor and whose decoder takes 3-row M-RoPE positions. Other vision-language exports
 * (Gemma 3, SmolVLM, ...) are recognised and held back by the scanner (./registry.ts).
 */

/** The model types whose split export the ONNX engine serves. */
export const QWEN_VL_TYPES = ['qwen2_vl', 'qwen2_5_vl', 'qwen3_vl'] as const;

export interface VisionSpec {
  /** config.json model_type (one of QWEN_VL_TYPES). */
  modelType: string;
  /** The placeholder one image token is (`<|image_pad|>`), and the marker before an image. */
  imageTokenId: number;
  visionStartTokenId: number;
  /** Qwen2VLImageProcessor's settings (preprocessor_config.json). */
  patchSize: number;
  mergeSize: number;
  temporalPatchSize: number;
  minPixels: number;
  maxPixels: number;
}

/** The image's size as the processor resizes it, and its grid of merged tokens. */
export interface ImageGrid {
  /** Temporal, height and width patches (image_grid_thw). */
  thw: [number, number, number];
  /** Image tokens: t * h * w / merge². */
  tokens: number;
}

const positiveInt = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value > 0;

/** The vision spec of a Qwen-VL export, or why it cannot be served (a missing or odd setting). */
export function readVisionSpec(config: Record<string, any>, preprocessor: Record<string, any> | undefined): VisionSpec | string {
  if (!preprocessor) return 'no preprocessor_config.json';
  const spec = {
    modelType: String(config.model_type),
    imageTokenId: config.image_token_id ?? config.image_token_index,
    visionStartTokenId: config.vision_start_token_id,
    patchSize: preprocessor.patch_size,
    mergeSize: preprocessor.merge_size,
    temporalPatchSize: preprocessor.temporal_patch_size,
    minPixels: preprocessor.min_pixels ?? preprocessor.size?.shortest_edge,
    maxPixels: preprocessor.max_pixels ?? preprocessor.size?.longest_edge,
  };
  const odd = Object.entries(spec).filter(([key, value]) => key !== 'modelType' && !positiveInt(value)).map(([key]) => key);
  if (odd.length > 0) return `config.json or preprocessor_config.json lacks ${odd.join(', ')}`;
  return spec as VisionSpec;
}

/** Thrown for an image the processor cannot take (an aspect ratio over 200). */
export class ImageShapeError extends Error {}

/**
 * The grid Qwen2VLImageProcessor makes of a still image of `width` x `height` pixels: its
 * smart_resize (transformers.js src/image_processors_utils.js, restated so that a prompt is counted
 * from the image's header, without decoding it), each side a multiple of patch x merge within
 * [minPixels, maxPixels], then patches of patch x patch, two frames of one image making one temporal
 * patch. The engine checks the processor's own grid against it (src/engines/onnx/decode/vision-inputs.ts).
 */
export function imageGrid(spec: VisionSpec, width: number, height: number): ImageGrid {
  const factor = spec.patchSize * spec.mergeSize;
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
  if (hBar * wBar > spec.maxPixels) {
    const beta = Math.sqrt((h * w) / spec.maxPixels);
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

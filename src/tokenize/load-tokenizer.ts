/**
 * Loading a GGUF model's tokenizer (its worker and its tokenizer-only pool): from its metadata, or a
 * tokenizer.json beside it (../engines/llama/load.ts), into a PlainTokenizer (./text-tokenizer.ts:
 * the tokenizer library transformers.js bundles, without importing transformers.js, which a GGUF
 * model's process never does). An ONNX model's is transformers.js's own
 * (../engines/onnx/tokenizer.ts). Either way the chat layer renders, counts and parses with one code
 * path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ggufString, readGgufMetadata, type GgufMetadata } from '../models/gguf.js';
import type { ModelInfo } from '../models/registry.js';
import { dropTokenizerSource } from './drop-source.js';
import { tokenizerFromGguf } from './gguf-tokenizer.js';
import { PlainTokenizer, type TextTokenizer } from './text-tokenizer.js';

export interface LoadedTokenizer<T extends TextTokenizer = TextTokenizer> {
  info: ModelInfo;
  tokenizer: T;
}

/**
 * The tokenizer without its source (./drop-source.ts), with the folder's chat_template.jinja: newer
 * exports keep the template there (beside, or instead of, the one in tokenizer_config.json), which
 * transformers.js does not read from a local folder. The file wins, as in Python transformers.
 */
export function withFolderTemplate<T extends TextTokenizer>(dir: string, tokenizer: T): T {
  dropTokenizerSource(tokenizer);
  const jinja = path.join(dir, 'chat_template.jinja');
  if (fs.existsSync(jinja)) setTemplate(tokenizer, fs.readFileSync(jinja, 'utf8'));
  return tokenizer;
}

/** A folder's tokenizer.json and tokenizer_config.json (none: no settings) as a PlainTokenizer. */
function plainTokenizerOf(dir: string): TextTokenizer {
  const json = (file: string) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Record<string, unknown>;
  const config = fs.existsSync(path.join(dir, 'tokenizer_config.json')) ? json('tokenizer_config.json') : {};
  return withFolderTemplate(dir, new PlainTokenizer(json('tokenizer.json'), config));
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
  const tokenizer = plainTokenizerOf(info.dir);
  const template = ggufString(metadata ?? readGgufMetadata(file, { maxArray: 0 }), 'tokenizer.chat_template');
  if (template !== undefined) setTemplate(tokenizer, template);
  return { info, tokenizer };
}

const setTemplate = (tokenizer: TextTokenizer, template: string) => void ((tokenizer as unknown as { chat_template: string }).chat_template = template);

/**
 * An ONNX model's tokenizer: transformers.js's, from the folder's tokenizer.json and
 * tokenizer_config.json (./load.ts builds the model on it; the worker of its tokenizer-only pool loads
 * it alone), with the folder's chat_template.jinja (../../tokenize/load-tokenizer.ts).
 */
import path from 'node:path';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import type { ModelInfo } from '../../models/registry.js';
import { withFolderTemplate, type LoadedTokenizer } from '../../tokenize/load-tokenizer.js';
import { useLocalModels } from '../../tokenize/local-models.js';

/** The tokenizer of a model folder; also points transformers.js at the folder's parent, offline. */
export async function loadTokenizer(info: ModelInfo): Promise<LoadedTokenizer<PreTrainedTokenizer>> {
  useLocalModels(path.dirname(info.dir));
  const tokenizer = await AutoTokenizer.from_pretrained(path.basename(info.dir), { local_files_only: true });
  return { info, tokenizer: withFolderTemplate(info.dir, tokenizer) };
}

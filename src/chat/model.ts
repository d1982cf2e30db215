/**
 * A model as the chat layer sees it, whatever engine runs it: its tokenizer (to render and count
 * prompts, and to read the text of tokens) and what its configuration says about generation. An
 * engine's loaded model satisfies it as it is (src/engines/onnx/loaded-model.ts); the chat layer
 * imports no engine.
 */
import type { TextTokenizer } from '../tokenize/text-tokenizer.js';
import type { GenerationDefaults } from '../engines/sequence.js';
import type { ModelInfo } from '../models/registry.js';

export type { GenerationDefaults } from '../engines/sequence.js';

export interface ChatTokenizer {
  info: ModelInfo;
  tokenizer: TextTokenizer;
}

export interface ChatModel extends ChatTokenizer {
  /** End-of-sequence ids from generation_config.json (may be several) or config.json. */
  eosTokenIds: number[];
  generationDefaults: GenerationDefaults;
  /** Rows of the logits: the size of a logits mask. */
  vocabSize: number;
}

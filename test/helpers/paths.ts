import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MODELS_DIR = path.join(ROOT, 'models');
export const CHAT_MODEL = 'tiny-qwen3-random';
export const EMBED_MODEL = 'glove-sif-100d';
/** The GGUF test model's models folder (built by global-setup: scripts/builders/gguf/test-model.ts). */
export const GGUF_MODELS_DIR = path.join(ROOT, 'test-artifacts', 'models-gguf');
export const GGUF_CHAT_MODEL = 'tiny-qwen3-gguf';

import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The bundled models (npm install builds them). */
export const MODELS_DIR = path.join(ROOT, 'models');
export const EMBED_MODEL = 'glove-sif-100d';
/** The bundled cross-encoder (random weights, a real WordPiece tokenizer): task rerank. */
export const RERANK_MODEL = 'tiny-bert-reranker-random';
/** The bundled chat model (ONNX). */
export const ONNX_CHAT_MODEL = 'tiny-qwen3-random';
/**
 * The GGUF test model's models folder (built by global-setup: scripts/builders/gguf/test-model.ts),
 * with the bundled embedding model and cross-encoder linked in, so a server on it serves every route as on models/.
 */
export const GGUF_MODELS_DIR = path.join(ROOT, 'test-artifacts', 'models-gguf');
export const GGUF_CHAT_MODEL = 'tiny-qwen3-gguf';
/** The GGUF embedding test model's folder (apart: the client tests' servers on GGUF_MODELS_DIR serve what they did). */
export const GGUF_EMBED_MODELS_DIR = path.join(ROOT, 'test-artifacts', 'models-gguf-embed');
export const GGUF_EMBED_MODEL = 'tiny-qwen3-embed-gguf';

/**
 * The engine the suite's chat model runs on. The client tests run twice (README's test command):
 * on the bundled ONNX model, then with TEST_CHAT_ENGINE=llama on its GGUF on llama.cpp.
 */
export const CHAT_ENGINE: 'onnx' | 'llama' = process.env.TEST_CHAT_ENGINE === 'llama' ? 'llama' : 'onnx';
/** The chat model the tests serve on that engine. */
export const CHAT_MODEL = CHAT_ENGINE === 'llama' ? GGUF_CHAT_MODEL : ONNX_CHAT_MODEL;
/** The models folder a test server serves by default on that engine. */
export const SERVED_MODELS_DIR = CHAT_ENGINE === 'llama' ? GGUF_MODELS_DIR : MODELS_DIR;

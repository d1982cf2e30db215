import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The bundled models (npm install builds them). */
export const MODELS_DIR = path.join(ROOT, 'models');
export const EMBED_MODEL = 'glove-sif-100d';
/** The bundled cross-encoder (random weights, a real WordPiece tokenizer): task rerank. */
export const RERANK_MODEL = 'tiny-bert-reranker-random';
/** The bundled vision-language models: split Qwen3-VL-shaped and Gemma 3-shaped ONNX exports. */
export const VISION_MODEL = 'tiny-qwen3-vl-random';
export const GEMMA_VISION_MODEL = 'tiny-gemma3-vl-random';
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

/** The two engines the client tests run the chat model on: the bundled ONNX model, and its GGUF on llama.cpp. */
type ChatEngine = 'onnx' | 'llama';

/**
 * What differs between the two engines, one row each: a test reads its engine's row instead of
 * branching on the engine (TEST_CHAT_ENGINE is read here and nowhere else).
 */
interface EngineRow {
  /** The chat model the tests serve. */
  chatModel: string;
  /** The models folder a test server serves by default. */
  modelsDir: string;
  /** What `models list` says in DTYPE for the chat model (a GGUF model's is its quantization). */
  listedDtype: string;
  /** The chat model is one file that holds its tokenizer: its folder's size is its weights'. */
  oneFile: boolean;
  /** The bundled models the server's start-up check names as missing from modelsDir. */
  missingBundled: string[];
  /**
   * The model's sequences step in one shared batch (llama.cpp's context), so a fault that blocks one
   * sequence's prefill holds every other sequence's step too; ONNX runs a prefill on its own.
   */
  prefillHoldsOthers: boolean;
}

const ENGINES: Record<ChatEngine, EngineRow> = {
  onnx: { chatModel: ONNX_CHAT_MODEL, modelsDir: MODELS_DIR, listedDtype: 'fp32', oneFile: false, missingBundled: [], prefillHoldsOthers: false },
  // The GGUF test folder holds the bundled embedder and reranker but, by design, not the bundled ONNX chat model.
  llama: { chatModel: GGUF_CHAT_MODEL, modelsDir: GGUF_MODELS_DIR, listedDtype: 'F32', oneFile: true, missingBundled: [ONNX_CHAT_MODEL, VISION_MODEL, GEMMA_VISION_MODEL], prefillHoldsOthers: true },
};

/**
 * The engine the suite's chat model runs on: ONNX in `vitest run`, llama.cpp in the llama.cpp pass
 * (npm run test:llama, vitest.llama.config.ts), which runs again every client test that imports
 * CHAT_MODEL, SERVED_MODELS_DIR or ENGINE from here (ENGINE_DEPENDENT).
 */
export const ENGINE: EngineRow = ENGINES[process.env.TEST_CHAT_ENGINE === 'llama' ? 'llama' : 'onnx'];
/** The chat model the tests serve on that engine. */
export const CHAT_MODEL = ENGINE.chatModel;
/** The models folder a test server serves by default on that engine. */
export const SERVED_MODELS_DIR = ENGINE.modelsDir;
/** The names whose import makes a client test one of the llama.cpp pass's (vitest.llama.config.ts). */
export const ENGINE_DEPENDENT = ['CHAT_MODEL', 'SERVED_MODELS_DIR', 'ENGINE'] as const;

/**
 * The ONNX engine as a worker uses it, in one module that only an ONNX model's worker imports
 * (./onnx-entry.ts): these import transformers.js, which a GGUF model's worker never loads.
 */
export { loadModel } from '../engines/onnx/load.js';
export { loadTokenizer } from '../engines/onnx/tokenizer.js';
export { flushPromptCache, onnxEngine } from '../engines/onnx/runner.js';
export { onnxEmbedder } from '../engines/onnx/embed.js';
export { rerankPairs } from '../engines/onnx/rerank.js';

/** The entry of a worker that runs a GGUF model on llama.cpp, or its tokenizer: without the ONNX engine (./entry.ts serveWorker). */
import { serveWorker } from './entry.js';

export default serveWorker();

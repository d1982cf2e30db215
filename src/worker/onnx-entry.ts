/** The entry of a worker that runs an ONNX model, or an ONNX model's tokenizer (./entry.ts serveWorker). */
import * as onnx from './onnx-engine.js';
import { serveWorker } from './entry.js';

export default serveWorker(onnx);

/**
 * What identifies the files of a model folder as they are now (for noticing a replaced model without
 * a restart), and how many bytes of weights it holds.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelInfo } from './registry.js';

/** The files that make the model: the ONNX graph and its external data (or the GGUF and its parts), config, tokenizer, manifest. */
function modelFiles(info: ModelInfo): string[] {
  if (info.gguf) return [...info.gguf.parts, ...['tokenizer.json', 'tokenizer_config.json', 'manifest.json'].map((f) => path.join(info.dir, f))];
  const onnx = path.join(info.dir, info.onnxFile);
  const data = Array.from({ length: info.externalDataChunks }, (_, i) => `${onnx}_data${i === 0 ? '' : `_${i}`}`);
  return [onnx, ...data, ...['config.json', 'tokenizer.json', 'tokenizer_config.json', 'manifest.json', 'chat_template.jinja'].map((f) => path.join(info.dir, f))];
}

const stat = (file: string) => {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
};

/** Changes when the model's description or any of its files (size or modification time) does. */
export function modelSignature(info: ModelInfo): string {
  const files = modelFiles(info).map((file) => {
    const s = stat(file);
    return s ? `${path.relative(info.dir, file)}:${s.size}:${s.mtimeMs}` : '';
  });
  return JSON.stringify({ ...info, files });
}

/** Bytes of the graph and its weights on disk (what loading the model reads). */
export function modelFileBytes(info: ModelInfo): number {
  return modelFiles(info).slice(0, info.gguf ? info.gguf.parts.length : 1 + info.externalDataChunks).reduce((n, file) => n + (stat(file)?.size ?? 0), 0);
}

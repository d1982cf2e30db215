/**
 * What identifies the files of a model folder as they are now (for noticing a replaced model without
 * a restart), and how many bytes of weights it holds.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelInfo } from './registry.js';

/**
 * The graph files: the ONNX graph and its external data (a split vision-language export: its decoder,
 * embedding and vision graphs, each with the external data files beside it), or the GGUF and its parts.
 */
function graphFiles(info: ModelInfo): string[] {
  if (info.gguf) return info.gguf.parts;
  const onnx = path.join(info.dir, info.onnxFile);
  if (info.vision) {
    return ['decoder_model_merged', 'embed_tokens', 'vision_encoder'].flatMap((graph) => {
      const file = onnx.replace(/decoder_model_merged(?=[^/\\]*$)/, graph);
      const data: string[] = [];
      for (let i = 0; stat(`${file}_data${i === 0 ? '' : `_${i}`}`); i++) data.push(`${file}_data${i === 0 ? '' : `_${i}`}`);
      return [file, ...data];
    });
  }
  return [onnx, ...Array.from({ length: info.externalDataChunks }, (_, i) => `${onnx}_data${i === 0 ? '' : `_${i}`}`)];
}

/** The files that make the model: its graph files, config, tokenizer, manifest (and a vision model's image processor settings; Gemma 3's soft tokens per image are processor_config.json's). */
function modelFiles(info: ModelInfo): string[] {
  const own = info.gguf ? ['tokenizer.json', 'tokenizer_config.json', 'manifest.json'] : ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'manifest.json', 'chat_template.jinja', ...(info.vision ? ['preprocessor_config.json'] : []), ...(info.vision?.family === 'gemma3' ? ['processor_config.json'] : [])];
  return [...graphFiles(info), ...own.map((f) => path.join(info.dir, f))];
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
  return graphFiles(info).reduce((n, file) => n + (stat(file)?.size ?? 0), 0);
}

/**
 * Models of the models folder as the models tool names them (`rm`, `pack`, `list`): by the id or an
 * alias the server serves them under, as the scan finds them. An ONNX export is its folder; a GGUF
 * model is its own files, since a folder may hold several quantizations (`<folder>:Q4_K_M`,
 * `<folder>:Q8_0`) and a loose GGUF file lies in the models folder itself, which no command may take
 * as a model's folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MODEL_ID_PATTERN } from '../manifest.js';
import type { ModelInfo } from '../model-info.js';
import { isDirectory, scanModels } from '../registry.js';

/** Files beside GGUF parts that describe the model (the same ones signature.ts watches for it). */
const GGUF_COMPANIONS = ['manifest.json', 'tokenizer.json', 'tokenizer_config.json'];

/** The model of `modelsDir` that answers to `name` (its id or an alias), if the scan serves one. */
export function findModel(modelsDir: string, name: string): ModelInfo | undefined {
  return scanModels({ modelsDir, defaultPoolSize: 1 }).models.find((m) => m.id === name || m.aliases.includes(name));
}

/** True for a GGUF file lying in the models folder itself (not in a folder of its own). */
export function isLooseGguf(model: ModelInfo, modelsDir: string): boolean {
  return model.gguf !== undefined && model.dir === path.resolve(modelsDir);
}

/**
 * A GGUF model's files, absolute: its parts, then the companions present beside them (none for a
 * loose file: the models folder's own files are no model's).
 */
export function ggufFiles(model: ModelInfo, modelsDir: string): string[] {
  if (!model.gguf) throw new Error(`${model.id} is not a GGUF model`);
  if (isLooseGguf(model, modelsDir)) return model.gguf.parts;
  return [...model.gguf.parts, ...GGUF_COMPANIONS.map((name) => path.join(model.dir, name)).filter((file) => fs.existsSync(file))];
}

/**
 * Removes the model `name` from `modelsDir`: a GGUF model's parts (and its folder when nothing but
 * companions is left in it), an ONNX model's folder, or else the folder of that name (one the scan
 * skips, or a folder of several GGUF quantizations, all of them). Returns the paths removed;
 * undefined when there is no such model or folder.
 */
export function removeModel(modelsDir: string, name: string): string[] | undefined {
  const model = findModel(modelsDir, name);
  if (model?.gguf) {
    for (const part of model.gguf.parts) fs.rmSync(part, { force: true });
    if (isLooseGguf(model, modelsDir) || fs.readdirSync(model.dir).some((left) => !GGUF_COMPANIONS.includes(left))) return model.gguf.parts;
    fs.rmSync(model.dir, { recursive: true, force: true });
    return [...model.gguf.parts, model.dir];
  }
  const dir = model ? model.dir : path.join(modelsDir, name);
  if (!model && (!MODEL_ID_PATTERN.test(name) || !isDirectory(dir))) return undefined;
  fs.rmSync(dir, { recursive: true, force: true });
  return [dir];
}

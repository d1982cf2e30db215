/**
 * Finds the model folders under models/: the bundled ones and any Hugging Face ONNX export a user
 * drops in. A folder is described by its manifest.json where present and by its Hugging Face files
 * otherwise; a folder that cannot be served is skipped with the reason, never half-loaded.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelTask } from '../core/model.js';
import type { ModelInfo } from './model-info.js';
import { chatFormat, templateFeatures } from './template-features.js';
import { groupGgufFiles, quantOf, type GgufModelFiles } from './gguf.js';
import type { GgufKvSettings } from './gguf-kv.js';
import { describeGguf } from './gguf-model.js';
import { DTYPES, DTYPE_SUFFIX, manifestSchema, MODEL_ID_PATTERN, type Dtype, type ModelManifest } from './manifest.js';
import { VISION_TYPES, readVisionSpec, type VisionSpec } from './vision.js';

export type { ModelTask };

export type { ModelInfo };

export interface SkippedFolder {
  folder: string;
  reason: string;
}

export interface ScanResult {
  models: ModelInfo[];
  skipped: SkippedFolder[];
  /**
   * Folders of a kind the server recognises and does not serve yet (a split vision-language export
   * of a family other than Qwen-VL), with what they are; present only when there is one. Unlike a skipped
   * folder nothing in them is wrong, so they are reported apart.
   */
  notServedYet?: SkippedFolder[];
}

/** Thrown by describeModel for a folder of a recognised kind the engines do not serve yet. */
export class NotServedYet extends Error {}

/** The graphs of a split vision-language ONNX export (onnx-community's Qwen-VL, Gemma 3, SmolVLM, ... layout). */
const VISION_EXPORT_GRAPHS = ['embed_tokens', 'vision_encoder', 'decoder_model_merged'];

export interface ScanOptions {
  modelsDir: string;
  defaultPoolSize: number;
  /** GGUF chat models: the KV budget and cache type their context is sized by (./gguf-kv.ts); absent: the defaults. */
  kv?: GgufKvSettings;
}

const DEFAULT_CONTEXT = 2048;

/**
 * Scans folders in name order, then the GGUF files lying in the models folder itself (each served
 * under its name, split parts as one); when two claim the same id or alias, the first one wins and
 * the other is skipped.
 */
export function scanModels(options: ScanOptions): ScanResult {
  const result: ScanResult = { models: [], skipped: [] };
  if (!fs.existsSync(options.modelsDir)) return result;
  // statSync follows symlinks: a linked model folder is a model folder.
  const entries = fs.readdirSync(options.modelsDir, { withFileTypes: true }).filter((e) => !e.name.startsWith('.'));
  const folders = entries
    .filter((e) => e.isDirectory() || (e.isSymbolicLink() && isDirectory(path.join(options.modelsDir, e.name))))
    .sort((a, b) => a.name.localeCompare(b.name));
  const seen = new Map<string, string>();
  for (const entry of folders) {
    const dir = path.join(options.modelsDir, entry.name);
    const gguf = ggufModelsIn(dir);
    if (gguf.length === 0) admit(result, seen, entry.name, () => describeModel(dir, options.defaultPoolSize));
    for (const files of gguf) admit(result, seen, path.join(entry.name, path.basename(files.parts[0]!)), () => describeGgufIn(dir, files, gguf.length, options.defaultPoolSize, kvOf(options)));
  }
  const loose = groupGgufFiles(path.resolve(options.modelsDir), entries.filter((e) => !folders.includes(e)).map((e) => e.name));
  for (const files of loose) {
    admit(result, seen, path.basename(files.parts[0]!), () => {
      if (!MODEL_ID_PATTERN.test(files.stem)) throw new Error(`file name "${files.stem}" is not a usable model id; put it in a folder with a manifest.json that sets "id"`);
      return describeGguf(files, { id: files.stem, manifest: {}, defaultPoolSize: options.defaultPoolSize, ...kvOf(options) });
    });
  }
  return result;
}

/** The `kv` option as it is passed on: absent when absent (exactOptionalPropertyTypes). */
export const kvOf = (options: { kv?: GgufKvSettings }) => (options.kv ? { kv: options.kv } : {});

/** The GGUF models of a folder that is not an ONNX export (no config.json, no onnx/): none for an ONNX folder. */
export function ggufModelsIn(dir: string): GgufModelFiles[] {
  if (fs.existsSync(path.join(dir, 'config.json')) || isDirectory(path.join(dir, 'onnx'))) return [];
  return groupGgufFiles(path.resolve(dir), fs.readdirSync(dir));
}

/**
 * One GGUF model of a folder holding `count`: named by the folder (or its manifest's id) when it is
 * the only one, else `<name>:<quantization>` (Ollama's and llama-server's spelling), the file's stem
 * when its name gives no quantization.
 */
export function describeGgufIn(dir: string, files: GgufModelFiles, count: number, defaultPoolSize: number, options: { id?: string; kv?: GgufKvSettings } = {}): ModelInfo {
  const manifest = readManifest(dir);
  const base = options.id ?? manifest.id ?? path.basename(dir);
  const id = count === 1 ? base : `${base}:${quantOf(files.stem) ?? files.stem}`;
  if (!MODEL_ID_PATTERN.test(id) && options.id === undefined) throw new Error(`"${id}" is not a usable model id; set "id" in manifest.json`);
  const quant = quantOf(files.stem);
  // The only model of its folder answers to `<name>:<quantization>` too.
  const aliases = count === 1 ? [...(manifest.aliases ?? []), ...(quant ? [`${base}:${quant}`] : [])] : [];
  return describeGguf(files, { id, manifest: { ...manifest, aliases }, defaultPoolSize, ...kvOf(options) });
}

/**
 * Adds the model `describe` reads to a scan's result, or the folder to its skipped ones with the
 * reason (unreadable, or an id or alias another folder of the scan already has). `seen`: names taken.
 */
export function admit(result: ScanResult, seen: Map<string, string>, folder: string, describe: () => ModelInfo): void {
  try {
    const info = describe();
    for (const name of [info.id, ...info.aliases]) {
      const other = seen.get(name);
      if (other) throw new Error(`model id or alias "${name}" is already used by ${other}`);
    }
    for (const name of [info.id, ...info.aliases]) seen.set(name, folder);
    result.models.push(info);
  } catch (error) {
    if (error instanceof NotServedYet) (result.notServedYet ??= []).push({ folder, reason: error.message });
    else result.skipped.push({ folder, reason: (error as Error).message });
  }
}

export function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function readJson(file: string): Record<string, any> | undefined {
  if (!fs.existsSync(file)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;
  } catch (error) {
    throw new Error(`${path.basename(file)} is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * Reads one model folder; throws with a readable reason when it cannot be served. `options.id`
 * fixes the id (a Hugging Face cache snapshot is named by its repository, `org/name`, whatever its
 * folder or a manifest says).
 */
export function describeModel(dir: string, defaultPoolSize: number, options: { id?: string } = {}): ModelInfo {
  const folder = path.basename(dir);
  const manifest = readManifest(dir);
  const config = readJson(path.join(dir, 'config.json'));
  if (!config) throw new Error('no config.json');
  if (!fs.existsSync(path.join(dir, 'tokenizer.json'))) throw new Error('no tokenizer.json');
  const tokenizerConfig = readJson(path.join(dir, 'tokenizer_config.json')) ?? {};

  const id = options.id ?? manifest.id ?? folder;
  if (options.id === undefined && !MODEL_ID_PATTERN.test(id)) throw new Error(`folder name "${folder}" is not a usable model id; set "id" in manifest.json`);

  const architectures: string[] = Array.isArray(config.architectures) ? config.architectures : [];
  const task: ModelTask = manifest.task ?? (architectures.some((a) => /ForCausalLM$|LMHeadModel$|ForConditionalGeneration$/.test(a)) ? 'chat' : crossEncoder(architectures, config) ? 'rerank' : 'embedding');
  const template = task === 'chat' ? chatTemplate(dir, tokenizerConfig) : undefined;
  if (task === 'chat' && !template) {
    throw new Error('chat model without a chat template (tokenizer_config.json chat_template or chat_template.jinja)');
  }

  const vision = visionExport(dir, config, tokenizerConfig);
  const base = vision ? 'decoder_model_merged' : 'model';
  const dtype = chooseDtype(dir, manifest.dtype ?? configDtype(config), base);
  const onnxFile = `onnx/${base}${DTYPE_SUFFIX[dtype]}.onnx`;
  // A vision-language config nests the text model's sizes under text_config.
  const contextLength = manifest.contextLength ?? contextFromConfig(vision ? { ...config, ...config.text_config } : config, tokenizerConfig);
  const externalDataChunks = countExternalData(path.join(dir, onnxFile));
  const declared = declaredExternalData(config, onnxFile);
  if (declared > externalDataChunks) {
    const missing = Array.from({ length: declared - externalDataChunks }, (_, i) => externalDataName(onnxFile, externalDataChunks + i));
    throw new Error(`config.json declares ${declared} external data file(s) for ${onnxFile}; ${missing.join(', ')} missing (a download that has not finished?)`);
  }
  return {
    id,
    task,
    engine: 'onnx',
    dir: path.resolve(dir),
    dtype,
    onnxFile,
    externalDataChunks,
    contextLength,
    maxOutputTokens: Math.min(manifest.maxOutputTokens ?? contextLength, contextLength),
    // The same reading of the template the chat layer makes (src/chat/prompt.ts featuresOf).
    thinking: template !== undefined && templateFeatures(template).thinkingSwitch,
    ...(template !== undefined ? { chatFormat: chatFormat(template), chatTemplate: template } : {}),
    poolSize: manifest.poolSize ?? defaultPoolSize,
    pooling: manifest.pooling ?? 'mean',
    normalize: manifest.normalize ?? true,
    matryoshka: manifest.matryoshka ?? false,
    prefix: manifest.prefix ?? '',
    aliases: manifest.aliases ?? [],
    displayName: manifest.displayName ?? id,
    ...(manifest.randomWeights ? { randomWeights: true } : {}),
    ...(vision ? { vision, imageInput: true } : {}),
    created: Math.floor(fs.statSync(dir).mtimeMs / 1000),
  };
}

function readManifest(dir: string): ModelManifest {
  const parsed = manifestSchema.safeParse(readJson(path.join(dir, 'manifest.json')) ?? {});
  if (!parsed.success) {
    throw new Error(`manifest.json is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** The chat template's source: chat_template.jinja wins over tokenizer_config.json, as in Python transformers. */
function chatTemplate(dir: string, tokenizerConfig: Record<string, any>): string | undefined {
  const jinja = path.join(dir, 'chat_template.jinja');
  if (fs.existsSync(jinja)) return fs.readFileSync(jinja, 'utf8');
  const value = tokenizerConfig.chat_template;
  if (typeof value === 'string') return value;
  // A list of named templates (some exports): the default one.
  if (Array.isArray(value)) return value.find((t: { name?: string }) => t?.name === 'default')?.template ?? value[0]?.template;
  return undefined;
}

function configDtype(config: Record<string, any>): Dtype | undefined {
  const value = config['transformers.js_config']?.dtype;
  return typeof value === 'string' && (DTYPES as string[]).includes(value) ? (value as Dtype) : undefined;
}

/**
 * The requested dtype if its file exists; otherwise the first present file in transformers.js's
 * preference order. `base`: the graph's name (`model`; a vision export's `decoder_model_merged`,
 * whose embed_tokens and vision_encoder graphs must then be there in that dtype too).
 */
function chooseDtype(dir: string, wanted: Dtype | undefined, base = 'model'): Dtype {
  const graphs = base === 'model' ? [base] : VISION_EXPORT_GRAPHS;
  const missing = (d: Dtype) => graphs.filter((g) => !fs.existsSync(path.join(dir, 'onnx', `${g}${DTYPE_SUFFIX[d]}.onnx`)));
  if (wanted) {
    const absent = missing(wanted);
    if (absent.length === 0) return wanted;
    throw new Error(`dtype ${wanted} selected but ${absent.map((g) => `onnx/${g}${DTYPE_SUFFIX[wanted]}.onnx`).join(', ')} ${absent.length > 1 ? 'are' : 'is'} missing`);
  }
  const found = DTYPES.find((d) => missing(d).length === 0);
  if (!found) throw new Error(`no onnx/${base}*.onnx file${base === 'model' ? '' : ' with its embed_tokens and vision_encoder of the same dtype'}`);
  return found;
}

/**
 * A split vision-language export (the three graphs, no onnx/model*.onnx): its vision spec when it
 * is of a family the engine serves (Qwen-VL, Gemma 3); held back (NotServedYet) when of another
 * family; undefined when the folder is not such an export.
 */
function visionExport(dir: string, config: Record<string, any>, tokenizerConfig: Record<string, any>): VisionSpec | undefined {
  const visionGraphs = VISION_EXPORT_GRAPHS.filter((name) => onnxGraphExists(dir, name));
  if (visionGraphs.length < VISION_EXPORT_GRAPHS.length || DTYPES.some((d) => fs.existsSync(path.join(dir, 'onnx', `model${DTYPE_SUFFIX[d]}.onnx`)))) return undefined;
  const kind = typeof config.model_type === 'string' ? config.model_type : '';
  if (!VISION_TYPES.includes(kind)) {
    throw new NotServedYet(`a split ${kind ? `${kind} ` : ''}vision-language export (onnx/${VISION_EXPORT_GRAPHS.join(', onnx/')}); the ONNX engine serves the Qwen-VL family's and Gemma 3's (${VISION_TYPES.join(', ')}) only`);
  }
  const spec = readVisionSpec({
    config,
    preprocessor: readJson(path.join(dir, 'preprocessor_config.json')),
    processor: readJson(path.join(dir, 'processor_config.json')),
    tokenizerConfig,
  });
  if (typeof spec === 'string') throw new Error(`a split ${kind} vision-language export: ${spec}`);
  return spec;
}

/** onnx/<name>.onnx in any dtype (embed_tokens.onnx, embed_tokens_q4.onnx, ...). */
function onnxGraphExists(dir: string, name: string): boolean {
  return DTYPES.some((d) => fs.existsSync(path.join(dir, 'onnx', `${name}${DTYPE_SUFFIX[d]}.onnx`)));
}

function contextFromConfig(config: Record<string, any>, tokenizerConfig: Record<string, any>): number {
  for (const value of [config.max_position_embeddings, config.n_positions, config.max_seq_len, tokenizerConfig.model_max_length]) {
    // tokenizer_config uses 1e30 for "no limit"
    if (typeof value === 'number' && Number.isInteger(value) && value > 0 && value < 1e7) return value;
  }
  return DEFAULT_CONTEXT;
}

/**
 * External data files that config.json's `transformers.js_config.use_external_data_format` says this
 * very graph has (an object keyed by its file name, as onnx-community exports write it: true is one,
 * a number that many). Checked because a snapshot another tool is still downloading into can hold
 * the graph before its weights. A value for every file at once (`true`, a number) is not taken at its
 * word: exports write it for their default dtype, and the other dtypes' graphs may be inline, which
 * the worker handles by counting the files present.
 */
function declaredExternalData(config: Record<string, any>, onnxFile: string): number {
  const value = config['transformers.js_config']?.use_external_data_format;
  if (value === null || typeof value !== 'object') return 0;
  const count = Number(value[path.basename(onnxFile)] ?? 0);
  return Number.isInteger(count) && count > 0 ? count : 0;
}

function externalDataName(onnxFile: string, index: number): string {
  return `${onnxFile}_data${index === 0 ? '' : `_${index}`}`;
}

function countExternalData(onnxPath: string): number {
  if (!fs.existsSync(`${onnxPath}_data`)) return 0;
  let chunks = 1;
  while (fs.existsSync(`${onnxPath}_data_${chunks}`)) chunks++;
  return chunks;
}

/** A cross-encoder: a sequence classifier with one label (its logit is the pair's relevance). */
function crossEncoder(architectures: string[], config: Record<string, unknown>): boolean {
  if (!architectures.some((a) => /ForSequenceClassification$/.test(a))) return false;
  const labels = typeof config.num_labels === 'number' ? config.num_labels : config.id2label && typeof config.id2label === 'object' ? Object.keys(config.id2label).length : 2;
  return labels === 1;
}

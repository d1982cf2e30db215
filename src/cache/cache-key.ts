/**
 * What a prompt-cache file is keyed by, and where the cache lives by default. The model is named by
 * a hash of its signature (src/models/signature.ts: its description and its files' sizes and
 * modification times, a few stat calls), never by hashing a multi-GB weights file; a model replaced
 * under the same name has another signature, so its old files are never handed to it (they age out
 * of the disk budget). The engine's version is part of the key: a state is not carried from one
 * onnxruntime or llama.cpp build to another.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ModelInfo } from '../models/registry.js';
import { modelSignature } from '../models/signature.js';
import type { CacheKey } from './state-file.js';

/** The cache under the user's cache folder, not beside the model (which may be read-only, or in the Hugging Face cache). */
export function defaultPromptCacheDir(environment: Record<string, string | undefined>, home: string): string {
  return path.join(environment.XDG_CACHE_HOME || path.join(home, '.cache'), 'local-inference-server', 'prompt-cache');
}

const require = createRequire(import.meta.url);
const versions = new Map<string, string>();

/** An installed package's version, from the package.json above its entry point (its exports may hide the file itself). */
export function packageVersion(name: string): string {
  let version = versions.get(name);
  if (version !== undefined) return version;
  version = 'unknown';
  try {
    for (let dir = path.dirname(require.resolve(name)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) {
        version = pkg.version;
        break;
      }
    }
  } catch {
    // Not resolvable: every file of this engine then shares the key 'unknown', still per model.
  }
  versions.set(name, version);
  return version;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The key of a model's files on one engine; `variant` names what else shapes the state's bytes. */
export function cacheKeyOf(options: { engine: 'onnx' | 'llama'; info: ModelInfo; variant: Record<string, unknown> }): CacheKey {
  const engineVersion = packageVersion(options.engine === 'onnx' ? 'onnxruntime-node' : 'node-llama-cpp');
  return { engine: options.engine, engineVersion, model: sha256(modelSignature(options.info)).slice(0, 32), variant: JSON.stringify(options.variant) };
}

/** The folder of one key's files inside the cache directory. */
export const keyFolder = (key: CacheKey) => sha256(JSON.stringify([key.engine, key.engineVersion, key.model, key.variant])).slice(0, 24);

/** The file name of one prefix (its token ids) inside its key's folder. */
export function prefixFileName(tokens: ArrayLike<number>): string {
  const ids = Uint32Array.from(tokens as ArrayLike<number>);
  return `${createHash('sha256').update(new Uint8Array(ids.buffer)).digest('hex').slice(0, 32)}.lspc`;
}

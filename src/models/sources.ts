/**
 * Every model the server can serve, from both places it looks: the models folder and the Hugging
 * Face cache (read in place). What main.ts scans at start and what a rescan calls again.
 */
import path from 'node:path';
import { scanHuggingFaceCache } from './hf-cache.js';
import type { GgufKvSettings } from './gguf-kv.js';
import { kvOf, scanModels, type ScanResult } from './registry.js';

export interface ModelSourcesOptions {
  modelsDir: string;
  /** The Hugging Face hub cache folder; null: do not read it. */
  hfCacheDir: string | null;
  defaultPoolSize: number;
  /** GGUF chat models: the KV budget and cache type their context is sized by (./gguf-kv.ts). */
  kv?: GgufKvSettings;
}

/**
 * models/ first, then the cache. On an id or alias clash the models/ folder wins and the cache's
 * repository is skipped with the reason: a folder the user put in models/ is the deliberate choice.
 * Every skipped `folder` is an absolute path, so a log line can say which place it is in.
 */
export function scanModelSources(options: ModelSourcesOptions): ScanResult {
  const local = scanModels({ modelsDir: options.modelsDir, defaultPoolSize: options.defaultPoolSize, ...kvOf(options) });
  const result: ScanResult = {
    models: [...local.models],
    skipped: local.skipped.map((s) => ({ ...s, folder: path.join(path.resolve(options.modelsDir), s.folder) })),
    ...(local.notServedYet ? { notServedYet: local.notServedYet.map((s) => ({ ...s, folder: path.join(path.resolve(options.modelsDir), s.folder) })) } : {}),
  };
  if (options.hfCacheDir === null) return result;
  const owner = new Map<string, string>();
  for (const model of local.models) for (const name of [model.id, ...model.aliases]) owner.set(name, model.dir);
  const cached = scanHuggingFaceCache({ cacheDir: options.hfCacheDir, defaultPoolSize: options.defaultPoolSize, ...kvOf(options) });
  for (const model of cached.models) {
    const clash = [model.id, ...model.aliases].find((name) => owner.has(name));
    if (clash !== undefined) {
      result.skipped.push({ folder: path.dirname(path.dirname(model.dir)), reason: `model id or alias "${clash}" is already used by ${owner.get(clash)} (the models folder wins)` });
      continue;
    }
    result.models.push(model);
  }
  result.skipped.push(...cached.skipped);
  if (cached.notServedYet) (result.notServedYet ??= []).push(...cached.notServedYet);
  return result;
}

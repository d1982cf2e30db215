/**
 * The Hugging Face cache, read in place: the folder every Python tool (transformers,
 * huggingface_hub, sentence-transformers) and `models pull --hf-cache` download into.
 *
 *   <cache>/models--<org>--<name>/
 *     refs/main                 the commit the branch `main` pointed at when last downloaded
 *     snapshots/<commit>/...    the repository's files at that commit, as symlinks into blobs/
 *     blobs/<sha256 or git sha1> the file contents, named by their hash
 *
 * (huggingface_hub `file_download.py`, `_CACHED_NO_EXIST`; the JavaScript `@huggingface/hub`
 * `cache-management.ts` reads the same layout.) The snapshot refs/main names is served as the model
 * `org/name`; its folder is what describeModel reads, symlinks and all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { admit, describeGgufIn, describeModel, ggufModelsIn, isDirectory, kvOf, type ScanResult } from './registry.js';
import type { GgufKvSettings } from './gguf-kv.js';
import type { GgufModelFiles } from './gguf.js';

/** A Hugging Face repository id as the cache names it: `name` or `org/name`. */
export const HUB_REPO_PATTERN = /^[A-Za-z0-9][\w.-]{0,95}(\/[A-Za-z0-9][\w.-]{0,95})?$/;

const COMMIT_PATTERN = /^[0-9a-f]{40}$/;

export interface HubCacheScanOptions {
  /** The hub cache folder (HF_HUB_CACHE; default ~/.cache/huggingface/hub). */
  cacheDir: string;
  defaultPoolSize: number;
  /** GGUF chat models: the KV budget and cache type their context is sized by (./gguf-kv.ts). */
  kv?: GgufKvSettings;
  /** The ref under refs/ that names the snapshot to serve. */
  revision?: string;
}

/**
 * Where the Hugging Face tools keep the cache, resolved as huggingface_hub (`constants.py`) and
 * `@huggingface/hub` do: HF_HUB_CACHE, else the older HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. Takes the environment as an
 * argument: only the entry points read process.env.
 */
export function defaultHubCacheDir(environment: Record<string, string | undefined>, home: string): string {
  const set = (name: string) => (environment[name] ? environment[name] : undefined);
  return set('HF_HUB_CACHE')
    ?? set('HUGGINGFACE_HUB_CACHE')
    ?? path.join(set('HF_HOME') ?? path.join(set('XDG_CACHE_HOME') ?? path.join(home, '.cache'), 'huggingface'), 'hub');
}

/** `org/name` -> `models--org--name` (huggingface_hub `repo_folder_name`). */
export function repoFolderName(repo: string): string {
  return ['models', ...repo.split('/')].join('--');
}

/** `models--org--name` -> `org/name`; undefined for datasets, spaces and anything else. */
export function repoOfFolder(folder: string): string | undefined {
  if (!folder.startsWith('models--')) return undefined;
  const repo = folder.slice('models--'.length).split('--').join('/');
  return HUB_REPO_PATTERN.test(repo) ? repo : undefined;
}

/**
 * The snapshot folder of a cached repository that `revision` names: refs/<revision> holds its
 * commit. A repository downloaded by commit (no ref written) is served when it has exactly one
 * snapshot. Throws with a readable reason otherwise.
 */
export function snapshotFolder(repoDir: string, revision = 'main'): string {
  const snapshots = path.join(repoDir, 'snapshots');
  const refFile = path.join(repoDir, 'refs', revision);
  if (fs.existsSync(refFile)) {
    const commit = fs.readFileSync(refFile, 'utf8').trim();
    if (!COMMIT_PATTERN.test(commit)) throw new Error(`refs/${revision} does not hold a commit hash`);
    const dir = path.join(snapshots, commit);
    if (!isDirectory(dir)) throw new Error(`refs/${revision} names snapshot ${commit}, which is not in snapshots/`);
    return dir;
  }
  const present = listDirectories(snapshots);
  if (present.length === 1) return path.join(snapshots, present[0]!);
  if (present.length === 0) throw new Error('no snapshot');
  throw new Error(`no refs/${revision} and ${present.length} snapshots; cannot tell which to serve`);
}

/**
 * Every ONNX model in the cache, named `org/name`, and every GGUF model, named `org/name:<quantization>`
 * (and `org/name` too when it is the repository's only one). A repository with neither an `onnx/`
 * folder nor a GGUF file in any snapshot (PyTorch or safetensors weights for Python tools, datasets, spaces) is not a candidate
 * and is passed over silently; a candidate that cannot be served is skipped with the reason, and
 * `folder` is then the repository's absolute path.
 */
export function scanHuggingFaceCache(options: HubCacheScanOptions): ScanResult {
  const result: ScanResult = { models: [], skipped: [] };
  const seen = new Map<string, string>();
  for (const folder of listDirectories(options.cacheDir).sort((a, b) => a.localeCompare(b))) {
    const repo = repoOfFolder(folder);
    if (!repo) continue;
    const repoDir = path.join(options.cacheDir, folder);
    const snapshots = listDirectories(path.join(repoDir, 'snapshots')).map((commit) => path.join(repoDir, 'snapshots', commit));
    if (snapshots.some((dir) => isDirectory(path.join(dir, 'onnx')))) {
      admit(result, seen, repoDir, () => describeModel(snapshotFolder(repoDir, options.revision), options.defaultPoolSize, { id: repo, ...kvOf(options) }));
    } else if (snapshots.some((dir) => ggufFilesOf(dir).length > 0)) {
      let snapshot: string;
      try {
        snapshot = snapshotFolder(repoDir, options.revision);
      } catch (error) {
        result.skipped.push({ folder: repoDir, reason: (error as Error).message });
        continue;
      }
      const models = ggufFilesOf(snapshot);
      for (const files of models) admit(result, seen, files.parts[0]!, () => describeGgufIn(path.dirname(files.parts[0]!), files, models.length, options.defaultPoolSize, { id: repo, ...kvOf(options) }));
    }
  }
  return result;
}

/**
 * The GGUF models of a snapshot: at its top and one folder down (repositories of large models keep
 * each quantization's split parts in a folder named after it).
 */
function ggufFilesOf(snapshot: string): GgufModelFiles[] {
  return [snapshot, ...listDirectories(snapshot).map((d) => path.join(snapshot, d))].flatMap((dir) => ggufModelsIn(dir));
}

/** Names of the directories (or links to directories) in `dir`; none when it does not exist. */
function listDirectories(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((name) => !name.startsWith('.') && isDirectory(path.join(dir, name)));
}

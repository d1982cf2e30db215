/**
 * `models pull` of one quantization of a GGUF repository: `owner/name:Q4_K_M` (llama-server's `-hf`,
 * Ollama's `hf.co/owner/name:Q4_K_M`) or `owner/name --quant Q4_K_M`. The repository's GGUF models
 * are read from its file list where the scanner looks for them in a cached snapshot (the top and one
 * folder down; split parts `name-00001-of-00003.gguf` as one model, `mmproj` projectors left out),
 * and a model's quantization is the one its file name gives (quantOf), which is how the scanner
 * names it. Every part is fetched, resumed and checked against the sha256 the hub lists as for an
 * ONNX export (hub-repo.ts).
 *
 * models/: the parts are fetched into models/.pull-<id>/, checked to be servable there, then moved
 * into models/<id>/ (flat: the scanner reads a folder's top), beside any quantization already there,
 * so a folder with two serves `<id>:Q4_K_M` and `<id>:Q8_0`. No manifest.json is written: the files
 * describe themselves, and a second quantization would otherwise have to edit the first one's.
 * The cache: blobs and snapshot links under the repository's own paths (pull-store.ts), refs/<revision>
 * written once the snapshot is checked to be servable.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelInfo } from '../model-info.js';
import { groupGgufFiles, quantOf, type GgufModelFiles } from '../gguf.js';
import { describeGguf } from '../gguf-model.js';
import { repoFolderName } from '../hf-cache.js';
import { describeGgufIn, ggufModelsIn, isDirectory } from '../registry.js';
import type { FileSums } from './checksums.js';
import { expectedOf, fetchFile, PullError, servable, type HubRepo, type PullDestination, type PullOptions, type PullResult } from './hub-repo.js';
import { cacheStore, folderStore, type Expected } from './pull-store.js';

export interface GgufPullOptions extends PullOptions {
  hubRepo: HubRepo;
  /** The quantization asked for; none: the repository's only GGUF model. */
  quant?: string;
  destination: PullDestination;
}

/** What the scanner serves from the pulled files, and the other models it serves beside them. */
interface Served {
  model: ModelInfo;
  others: string[];
}

/** Fetches the quantization asked for, checks the scanner serves it, and says under which names (the log's last line). */
export async function pullGguf(options: GgufPullOptions): Promise<PullResult> {
  const { hubRepo, destination: { id, target, toCache } } = options;
  const log = options.log ?? (() => {});
  const model = pickGguf(hubRepo, options.quant);
  const parts = model.parts.map((rel) => expectedOf(hubRepo, rel)!);
  if (!toCache) refuseClash(target, parts);
  const store = toCache
    ? cacheStore(path.join(options.hfCacheDir!, repoFolderName(hubRepo.repo)), hubRepo.commit)
    : folderStore(path.join(options.modelsDir, `.pull-${id}`));
  log(`pulling ${hubRepo.where} (commit ${hubRepo.commit.slice(0, 12)}) ${labelOf(model)}: ${model.parts.join(', ')} into ${toCache ? options.hfCacheDir : target}`);
  const files: FileSums = {};
  for (const file of parts) files[file.rel] = await fetchFile({ repo: hubRepo, file, store, onProgress: options.onProgress });
  const dir = store.finish({ files: parts });
  const served = toCache ? servedFromSnapshot(dir, model, hubRepo.repo) : moveIntoFolder(dir, target, model);
  if (toCache) store.publish(options.revision);
  const names = [served.model.id, ...served.model.aliases].join(', ');
  log(`done: ${toCache ? `${hubRepo.repo} in the Hugging Face cache (${dir})` : target} serves ${names}${served.others.length ? `; beside it: ${served.others.join(', ')}` : ''}`);
  return { id: served.model.id, aliases: served.model.aliases, dir: toCache ? dir : target, commit: hubRepo.commit, files };
}

/**
 * The GGUF models among a repository's files (paths relative to it), where the scanner looks in a
 * snapshot: at the top and one folder down. Parts are repository paths.
 */
export function listedGgufModels(paths: string[]): GgufModelFiles[] {
  const byFolder = new Map<string, string[]>();
  for (const rel of paths) {
    const folder = path.posix.dirname(rel);
    if (folder.includes('/')) continue;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), path.posix.basename(rel)]);
  }
  return [...byFolder].flatMap(([folder, names]) => groupGgufFiles(folder === '.' ? '' : folder, names));
}

/** A GGUF model's quantization as its file name gives it (the scanner's `:<QUANT>`), else its stem. */
const labelOf = (model: GgufModelFiles) => quantOf(model.stem) ?? model.stem;

/** The GGUF model of the repository whose quantization is `quant` (any case), with every split part listed. */
function pickGguf(hubRepo: HubRepo, quant: string | undefined): GgufModelFiles {
  const models = listedGgufModels([...hubRepo.files.keys()]);
  const available = [...new Set(models.map(labelOf))].sort().join(', ');
  if (models.length === 0) throw new PullError(`${hubRepo.where} has no GGUF file${quant ? ` (asked for ${quant})` : ''}`);
  if (quant === undefined && models.length > 1) {
    throw new PullError(`${hubRepo.where} holds ${models.length} GGUF models; name one, as ${hubRepo.repo}:<QUANT> or with --quant (its quantizations: ${available})`);
  }
  const matches = quant === undefined ? models : models.filter((m) => labelOf(m).toUpperCase() === quant.toUpperCase());
  if (matches.length === 0) throw new PullError(`${hubRepo.where} has no ${quant} GGUF file; its quantizations: ${available}`);
  if (matches.length > 1) throw new PullError(`${hubRepo.where} holds ${matches.length} GGUF models of quantization ${quant}: ${matches.map((m) => m.parts[0]).join(', ')}`);
  const model = matches[0]!;
  if (model.missing.length > 0) throw new PullError(`${hubRepo.where} lists only some parts of ${model.stem}: ${model.missing.join(', ')} missing`);
  return model;
}

/** A models/ folder takes GGUF files beside other GGUF models, never into an ONNX export nor over a file. */
function refuseClash(target: string, parts: Expected[]): void {
  if (!fs.existsSync(target)) return;
  if (!isDirectory(target) || fs.existsSync(path.join(target, 'config.json')) || isDirectory(path.join(target, 'onnx'))) {
    throw new PullError(`${target} already exists and is not a GGUF folder; pull with --id`);
  }
  for (const file of parts) {
    const name = path.join(target, path.posix.basename(file.rel));
    if (fs.existsSync(name)) throw new PullError(`${name} already exists; remove it first (models rm) or pull with --id`);
  }
}

/** Checks the staged parts are servable, moves them into `target` and says what the folder now serves. */
function moveIntoFolder(staging: string, target: string, model: GgufModelFiles): Served {
  const staged = model.parts.map((rel) => path.join(staging, rel));
  servable(() => describeGguf({ stem: model.stem, parts: staged, missing: [] }, { id: path.basename(target), manifest: {}, defaultPoolSize: 1 }));
  fs.mkdirSync(target, { recursive: true });
  for (const file of staged) fs.renameSync(file, path.join(target, path.basename(file)));
  removeEmptyFolders(staging);
  const groups = ggufModelsIn(target);
  return servedAmong(groups, path.resolve(target, path.basename(staged[0]!)), (files) => describeGgufIn(target, files, groups.length, 1));
}

/** What the scanner makes of a snapshot's GGUF models (hf-cache.ts: its top and one folder down, named by the repository). */
function servedFromSnapshot(snapshot: string, model: GgufModelFiles, repo: string): Served {
  const folders = [snapshot, ...fs.readdirSync(snapshot).filter((name) => !name.startsWith('.')).map((name) => path.join(snapshot, name)).filter(isDirectory)];
  const groups = folders.flatMap((dir) => ggufModelsIn(dir));
  return servedAmong(groups, path.resolve(snapshot, model.parts[0]!), (files) => describeGgufIn(path.dirname(files.parts[0]!), files, groups.length, 1, { id: repo }));
}

/** The pulled model (the group whose first part is `first`), described; the others beside it by their ids (those that describe). */
function servedAmong(groups: GgufModelFiles[], first: string, describe: (files: GgufModelFiles) => ModelInfo): Served {
  const ours = groups.find((files) => files.parts[0] === first);
  if (!ours) throw new PullError(`the files were fetched but the scanner finds no model in ${first}`);
  const model = servable(() => describe(ours));
  const others = groups.filter((files) => files !== ours).flatMap((files) => {
    try {
      return [describe(files).id];
    } catch {
      return [];
    }
  });
  return { model, others };
}

/** Removes `dir` and the folders in it when they hold no file (a staging folder another pull may still be using is left). */
function removeEmptyFolders(dir: string): void {
  for (const name of fs.readdirSync(dir)) if (isDirectory(path.join(dir, name))) removeEmptyFolders(path.join(dir, name));
  if (fs.readdirSync(dir).length === 0) fs.rmdirSync(dir);
}

/**
 * `models pack` / `models unpack`: move model folders between machines as one tar archive.
 *
 * The archive holds CHECKSUMS.json (size and sha256 of every file of every model) followed by the
 * model folders: a folder named whole, or what one model the server serves needs (a GGUF model: its
 * parts and its manifest and tokenizer files, not the other quantizations beside it; a loose GGUF
 * file becomes a folder of its own, which serves it under the same id). `unpack` extracts into a dot
 * folder the registry ignores, verifies every file against the list (and refuses files that are not
 * on it), and only then moves the models into place, so a corrupted or tampered archive never
 * produces a loadable folder. A GGUF quantization unpacked over a folder that holds another joins it
 * (as `models pull` of a second quantization does), its shared files (manifest, tokenizer) equal.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { MODEL_ID_PATTERN } from '../manifest.js';
import { isDirectory } from '../registry.js';
import { checksumFiles, listFiles, verifyFolder, type FileSums } from './checksums.js';
import { findModel, ggufFiles, isLooseGguf } from './local-models.js';

export const CHECKSUMS_FILE = 'CHECKSUMS.json';

export class ArchiveError extends Error {}

export interface PackOptions {
  modelsDir: string;
  /** Folder names in models/, or ids or aliases of the models it serves. */
  ids: string[];
  output: string;
  log?: (line: string) => void;
}

export async function pack(options: PackOptions): Promise<Record<string, FileSums>> {
  const entries = new Map<string, PackEntry>();
  for (const name of options.ids) {
    const entry = packEntry(options.modelsDir, name);
    const same = entries.get(entry.folder);
    if (same && same.dir !== entry.dir) throw new ArchiveError(`${name} would be packed as ${entry.folder}, which another name already is`);
    entries.set(entry.folder, { ...entry, files: [...new Set([...(same?.files ?? []), ...entry.files])].sort() });
  }
  const sums: Record<string, FileSums> = {};
  for (const { folder, dir, files } of entries.values()) {
    options.log?.(`checksumming ${folder}`);
    sums[folder] = await checksumFiles(dir, files);
  }
  // CHECKSUMS.json goes in first, written beside the models in a temporary folder that links to them.
  const work = fs.mkdtempSync(path.join(options.modelsDir, '.pack-'));
  try {
    fs.writeFileSync(path.join(work, CHECKSUMS_FILE), JSON.stringify(sums, null, 2) + '\n');
    for (const { folder, dir } of entries.values()) fs.symlinkSync(path.resolve(dir), path.join(work, folder));
    options.log?.(`writing ${options.output}`);
    const paths = [...entries.values()].flatMap(({ folder, files }) => files.map((rel) => `${folder}/${rel}`));
    await tar.c({ file: options.output, cwd: work, follow: true, portable: true }, [CHECKSUMS_FILE, ...paths]);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return sums;
}

/** One folder of the archive: its name there (and in models/ once unpacked), where its files are, which of them. */
interface PackEntry {
  folder: string;
  dir: string;
  /** Forward-slash paths relative to `dir`. */
  files: string[];
}

/**
 * What a name packs: the folder of that name in models/, whole (files the server derives left out);
 * else the model the scan serves under that id or alias: an ONNX export's folder, or a GGUF model's
 * parts and the files describing it, under its folder's name (a loose file: under its id).
 */
function packEntry(modelsDir: string, name: string): PackEntry {
  if (!MODEL_ID_PATTERN.test(name)) throw new ArchiveError(`"${name}" is not a model id`);
  const dir = path.join(modelsDir, name);
  if (isDirectory(dir)) return { folder: name, dir, files: listFiles(dir) };
  const model = findModel(modelsDir, name);
  if (!model) throw new ArchiveError(`no model folder ${dir}`);
  if (!model.gguf) return { folder: path.basename(model.dir), dir: model.dir, files: listFiles(model.dir) };
  const folder = isLooseGguf(model, modelsDir) ? model.id : path.basename(model.dir);
  if (!MODEL_ID_PATTERN.test(folder)) throw new ArchiveError(`${name} is in folder "${folder}", which is not a model id`);
  return { folder, dir: model.dir, files: ggufFiles(model, modelsDir).map((file) => path.relative(model.dir, file).split(path.sep).join('/')) };
}

export interface UnpackOptions {
  modelsDir: string;
  archive: string;
  /** Replace model folders that already exist. */
  force?: boolean;
  log?: (line: string) => void;
}

/**
 * Whether the archive's folder `from` can join the existing folder `target` without replacing
 * anything: both flat folders of GGUF models, none of `from`'s GGUF files in `target`, and every
 * other file of `from` absent there or equal. The files to move in when it can; when it cannot, why
 * (empty when `target` is simply not such a folder).
 */
function joinable(from: string, target: string): string[] | string {
  const files = (dir: string) => (isDirectory(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []);
  const incoming = files(from);
  const present = files(target);
  const gguf = (entries: fs.Dirent[]) => entries.filter((e) => e.isFile() && e.name.endsWith('.gguf')).map((e) => e.name);
  if (gguf(incoming).length === 0 || gguf(present).length === 0 || incoming.some((e) => !e.isFile())) return '';
  const clash = gguf(incoming).filter((name) => fs.existsSync(path.join(target, name)));
  if (clash.length) return `it holds ${clash.join(', ')} already`;
  const moved: string[] = [];
  for (const { name } of incoming) {
    const there = path.join(target, name);
    if (!fs.existsSync(there)) moved.push(name);
    else if (!fs.readFileSync(there).equals(fs.readFileSync(path.join(from, name)))) return `its ${name} differs from the archive's`;
  }
  return moved;
}

export async function unpack(options: UnpackOptions): Promise<string[]> {
  fs.mkdirSync(options.modelsDir, { recursive: true });
  const work = fs.mkdtempSync(path.join(options.modelsDir, '.unpack-'));
  try {
    try {
      // tar strips absolute paths and "..": nothing lands outside the work folder.
      await tar.x({ file: options.archive, cwd: work, strict: true });
    } catch (error) {
      throw new ArchiveError(`${options.archive} is not a readable tar archive: ${(error as Error).message}`);
    }
    const listFile = path.join(work, CHECKSUMS_FILE);
    if (!fs.existsSync(listFile)) throw new ArchiveError(`${options.archive} has no ${CHECKSUMS_FILE}; it was not made by "models pack"`);
    const sums = JSON.parse(fs.readFileSync(listFile, 'utf8')) as Record<string, FileSums>;
    const ids = Object.keys(sums);
    const unexpected = fs.readdirSync(work).filter((name) => name !== CHECKSUMS_FILE && !ids.includes(name));
    if (unexpected.length) throw new ArchiveError(`${options.archive} holds entries not in its checksum list: ${unexpected.join(', ')}`);
    const joins = new Map<string, string[]>();
    for (const id of ids) {
      if (!MODEL_ID_PATTERN.test(id)) throw new ArchiveError(`"${id}" in the archive is not a model id`);
      options.log?.(`verifying ${id}`);
      const problems = await verifyFolder(path.join(work, id), sums[id]!);
      if (problems.length) throw new ArchiveError(`${id} in ${options.archive} is corrupted or was altered:\n  ${problems.join('\n  ')}`);
      const target = path.join(options.modelsDir, id);
      if (fs.existsSync(target) && !options.force) {
        const join = joinable(path.join(work, id), target);
        if (typeof join === 'string') throw new ArchiveError(`${target} already exists${join ? ` (${join})` : ''}; remove it first or unpack with --force`);
        joins.set(id, join);
      }
    }
    for (const id of ids) {
      const target = path.join(options.modelsDir, id);
      const join = joins.get(id);
      if (join) {
        for (const name of join) fs.renameSync(path.join(work, id, name), path.join(target, name));
        options.log?.(`unpacked ${id}: ${join.filter((n) => n.endsWith('.gguf')).join(', ')} joined the quantizations there`);
        continue;
      }
      fs.rmSync(target, { recursive: true, force: true });
      fs.renameSync(path.join(work, id), target);
      options.log?.(`unpacked ${id}`);
    }
    return ids;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

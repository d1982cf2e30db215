/**
 * `models pack` / `models unpack`: move model folders between machines as one tar archive.
 *
 * The archive holds CHECKSUMS.json (size and sha256 of every file of every model) followed by the
 * model folders. `unpack` extracts into a dot folder the registry ignores, verifies every file
 * against the list (and refuses files that are not on it), and only then moves the models into
 * place, so a corrupted or tampered archive never produces a loadable folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { MODEL_ID_PATTERN } from '../manifest.js';
import { isDerivedFile } from '../derived-files.js';
import { checksumFolder, verifyFolder, type FileSums } from './checksums.js';

export const CHECKSUMS_FILE = 'CHECKSUMS.json';

export class ArchiveError extends Error {}

export interface PackOptions {
  modelsDir: string;
  ids: string[];
  output: string;
  log?: (line: string) => void;
}

export async function pack(options: PackOptions): Promise<Record<string, FileSums>> {
  const sums: Record<string, FileSums> = {};
  for (const id of options.ids) {
    if (!MODEL_ID_PATTERN.test(id)) throw new ArchiveError(`"${id}" is not a model id`);
    const dir = path.join(options.modelsDir, id);
    if (!fs.existsSync(dir)) throw new ArchiveError(`no model folder ${dir}`);
    options.log?.(`checksumming ${id}`);
    sums[id] = await checksumFolder(dir);
  }
  // CHECKSUMS.json goes in first, written beside the models in a temporary folder.
  const work = fs.mkdtempSync(path.join(options.modelsDir, '.pack-'));
  try {
    fs.writeFileSync(path.join(work, CHECKSUMS_FILE), JSON.stringify(sums, null, 2) + '\n');
    for (const id of options.ids) fs.symlinkSync(path.resolve(options.modelsDir, id), path.join(work, id));
    options.log?.(`writing ${options.output}`);
    await tar.c({ file: options.output, cwd: work, follow: true, portable: true, filter: (p) => !isDerivedFile(p) }, [CHECKSUMS_FILE, ...options.ids]);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return sums;
}

export interface UnpackOptions {
  modelsDir: string;
  archive: string;
  /** Replace model folders that already exist. */
  force?: boolean;
  log?: (line: string) => void;
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
    for (const id of ids) {
      if (!MODEL_ID_PATTERN.test(id)) throw new ArchiveError(`"${id}" in the archive is not a model id`);
      options.log?.(`verifying ${id}`);
      const problems = await verifyFolder(path.join(work, id), sums[id]!);
      if (problems.length) throw new ArchiveError(`${id} in ${options.archive} is corrupted or was altered:\n  ${problems.join('\n  ')}`);
      if (fs.existsSync(path.join(options.modelsDir, id)) && !options.force) {
        throw new ArchiveError(`${path.join(options.modelsDir, id)} already exists; remove it first or unpack with --force`);
      }
    }
    for (const id of ids) {
      const target = path.join(options.modelsDir, id);
      fs.rmSync(target, { recursive: true, force: true });
      fs.renameSync(path.join(work, id), target);
      options.log?.(`unpacked ${id}`);
    }
    return ids;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

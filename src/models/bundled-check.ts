/**
 * At start, says which bundled models are missing from the models folder or stale (stamped by
 * another builder version than this checkout's), and what to run. It only reads each bundled
 * folder's manifest.json: the models are built at install (postinstall) and by `npm run
 * build:models`, never by the server, which serves whatever folders are there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLED_MODEL_VERSIONS, readBundledVersion } from './bundled-versions.js';

export interface BundledCheckOptions {
  /** The package root, where `npm run build:models` runs and whose models/ it fills by default (default: this checkout's). */
  packageRoot?: string;
  /** The server's working directory (default: process.cwd()); the advice says where to run npm when it differs. */
  cwd?: string;
}

/** This checkout's root, from the source tree (src/models) or the compiled one (dist/src/models). */
function packageRoot(): string {
  const here = fileURLToPath(import.meta.url);
  return path.join(path.dirname(here), '..', '..', ...(path.extname(here) === '.ts' ? [] : ['..']));
}

const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** One line per bundled model that is missing or stale in `modelsDir`, each naming the command that builds it; none when all are up to date. */
export function checkBundledModels(modelsDir: string, options: BundledCheckOptions = {}): string[] {
  const root = path.resolve(options.packageRoot ?? packageRoot());
  const dir = path.resolve(modelsDir);
  const build = `npm run build:models${dir === path.join(root, 'models') ? '' : ` -- --models-dir ${shellWord(dir)}`}`;
  const command = path.resolve(options.cwd ?? process.cwd()) === root ? `\`${build}\`` : `\`cd ${shellWord(root)} && ${build}\``;
  const lines: string[] = [];
  for (const [id, expected] of Object.entries(BUNDLED_MODEL_VERSIONS)) {
    const folder = path.join(dir, id);
    if (!fs.existsSync(folder)) {
      lines.push(`[models] bundled model ${id} is missing from ${dir}: run ${command} to build it`);
      continue;
    }
    const version = readBundledVersion(folder);
    if (version === expected) continue;
    const why = version === undefined ? 'its manifest.json has no bundled builder version' : `built by builder version ${version}, this checkout builds version ${expected}`;
    lines.push(`[models] bundled model ${id} in ${dir} is stale (${why}): run ${command} to rebuild it; serving the folder as it is meanwhile`);
  }
  return lines;
}

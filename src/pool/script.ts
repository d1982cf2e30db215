/** Where a worker's or a child process's entry module is, and how Node must be started to run it. */
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The module at `relative` (no extension) from the calling module's folder: .ts under tsx/vitest,
 * .js once compiled, with the `--import tsx` a TypeScript entry needs.
 */
export function scriptBeside(moduleUrl: string, relative: string): { filename: string; execArgv: string[] } {
  const here = fileURLToPath(moduleUrl);
  const ext = path.extname(here);
  const filename = path.join(path.dirname(here), `${relative}${ext}`);
  if (ext !== '.ts') return { filename, execArgv: [] };
  const tsx = pathToFileURL(createRequire(moduleUrl).resolve('tsx')).href;
  return { filename, execArgv: ['--import', tsx] };
}

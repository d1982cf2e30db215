/**
 * Builds missing or outdated bundled models at start by running scripts/build-models.ts as a child
 * process: the builders (and the GloVe table they read) are build-time code that the runtime never
 * imports. When every bundled model is up to date the child only reads each folder's manifest and
 * exits (about 0.4 s on two cores, most of it starting node and tsx).
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The build script, always the TypeScript source under tsx (a dependency: the install's postinstall
 * runs it too), from the source tree (src/models) or the compiled one (dist/src/models): the build
 * scripts are not part of the compiled server.
 */
function buildScript(): { filename: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  const root = path.join(path.dirname(here), '..', '..', ...(path.extname(here) === '.ts' ? [] : ['..']));
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { filename: path.join(root, 'scripts', 'build-models.ts'), execArgv: ['--import', tsx] };
}

/** Runs the bundled-model build into `modelsDir` (its progress goes to this process's stderr); throws if it fails. */
export function buildBundledModels(modelsDir: string): void {
  const { filename, execArgv } = buildScript();
  const result = spawnSync(process.execPath, [...execArgv, filename, '--models-dir', modelsDir, '--quiet'], { stdio: 'inherit' });
  if (result.error) throw new Error(`could not run ${filename}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(`building the bundled models failed (${result.signal ?? `exit ${result.status}`}); run \`npm run build:models\` to see why, or set BUILD_BUNDLED_MODELS=false to start without building them`);
  }
}

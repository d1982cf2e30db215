/**
 * Builds the bundled models into models/ when absent or out of date (runs on `npm install` and
 * before `npm start`). Deterministic: the same inputs give byte-identical files.
 *
 *   tsx scripts/build-models.ts [--models-dir DIR] [--force]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBundledModels } from '../src/models/bundled/index.js';

const { values } = parseArgs({
  options: { 'models-dir': { type: 'string' }, force: { type: 'boolean', default: false } },
});
const modelsDir = path.resolve(values['models-dir'] ?? process.env.MODELS_DIR ?? 'models');
const built = ensureBundledModels({ modelsDir, force: values.force });
process.stderr.write(built.length ? `[models] ready in ${modelsDir}\n` : `[models] bundled models up to date in ${modelsDir}\n`);

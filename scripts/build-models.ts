/**
 * Builds the bundled models into models/ when absent or out of date (runs on `npm install`, as
 * postinstall, and as `npm run build:models`; never by the server, whose start-up check,
 * src/models/bundled-check.ts, only says what is missing or stale by the versions in
 * src/models/bundled-versions.ts). --quiet prints nothing when every model is up to date.
 * Deterministic: the same inputs give byte-identical files.
 *
 *   tsx scripts/build-models.ts [--models-dir DIR] [--force] [--quiet]
 *   tsx scripts/build-models.ts --bench [--only ID,ID]   (benchmark subjects, into bench/models/)
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_MODELS, BUNDLED_MODELS, ensureBundledModels } from './builders/bundled/index.js';

const { values } = parseArgs({
  options: { 'models-dir': { type: 'string' }, force: { type: 'boolean', default: false }, bench: { type: 'boolean', default: false }, quiet: { type: 'boolean', default: false }, only: { type: 'string' } },
});
const modelsDir = path.resolve(values['models-dir'] ?? (values.bench ? 'bench/models' : 'models'));
const all = values.bench ? BENCH_MODELS : BUNDLED_MODELS;
const only = values.only?.split(',');
const built = ensureBundledModels({ modelsDir, force: values.force, models: only ? all.filter((m) => only.includes(m.manifest.id)) : all });
if (built.length) process.stderr.write(`[models] ready in ${modelsDir}\n`);
else if (!values.quiet) process.stderr.write(`[models] bundled models up to date in ${modelsDir}\n`);

/**
 * The server's start-up check of the bundled models (src/models/bundled-check.ts): it reads only
 * the folders' manifest stamps and says, one line per model, what is missing or stale and what to run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkBundledModels } from '../../src/models/bundled-check.js';
import { BUNDLED_MODEL_VERSIONS } from '../../src/models/bundled-versions.js';
import { BUNDLED_MODELS } from '../../scripts/builders/bundled/index.js';

let root: string;
let modelsDir: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'bundled-check-'));
  modelsDir = path.join(root, 'models');
  fs.mkdirSync(modelsDir);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A folder as the builder leaves it: only its manifest matters to the check. */
function built(id: string, manifest: Record<string, unknown>): void {
  fs.mkdirSync(path.join(modelsDir, id), { recursive: true });
  fs.writeFileSync(path.join(modelsDir, id, 'manifest.json'), JSON.stringify({ id, ...manifest }));
}
const upToDate = (id: keyof typeof BUNDLED_MODEL_VERSIONS) => built(id, { bundled: { version: BUNDLED_MODEL_VERSIONS[id] } });

describe('checkBundledModels', () => {
  it('is silent when every bundled model is stamped with this checkout\'s version', () => {
    for (const id of Object.keys(BUNDLED_MODEL_VERSIONS) as Array<keyof typeof BUNDLED_MODEL_VERSIONS>) upToDate(id);
    expect(checkBundledModels(modelsDir, { packageRoot: root, cwd: root })).toEqual([]);
  });

  it('says which model is missing and that `npm run build:models` builds it', () => {
    upToDate('glove-sif-100d');
    upToDate('tiny-bert-reranker-random');
    upToDate('tiny-qwen3-vl-random');
    upToDate('tiny-gemma3-vl-random');
    expect(checkBundledModels(modelsDir, { packageRoot: root, cwd: root })).toEqual([
      `[models] bundled model tiny-qwen3-random is missing from ${modelsDir}: run \`npm run build:models\` to build it`,
    ]);
  });

  it('says which model is stale, with the version it was built by and the one this checkout builds', () => {
    upToDate('tiny-qwen3-random');
    upToDate('tiny-bert-reranker-random');
    upToDate('tiny-qwen3-vl-random');
    upToDate('tiny-gemma3-vl-random');
    built('glove-sif-100d', { bundled: { version: BUNDLED_MODEL_VERSIONS['glove-sif-100d'] - 1 } });
    const lines = checkBundledModels(modelsDir, { packageRoot: root, cwd: root });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      `[models] bundled model glove-sif-100d in ${modelsDir} is stale (built by builder version ${BUNDLED_MODEL_VERSIONS['glove-sif-100d'] - 1}, ` +
        `this checkout builds version ${BUNDLED_MODEL_VERSIONS['glove-sif-100d']}): run \`npm run build:models\` to rebuild it; serving the folder as it is meanwhile`,
    );
  });

  it('counts a folder without a stamp (or without a readable manifest) as stale', () => {
    built('glove-sif-100d', {});
    fs.mkdirSync(path.join(modelsDir, 'tiny-qwen3-random'));
    fs.writeFileSync(path.join(modelsDir, 'tiny-qwen3-random', 'manifest.json'), '{ not json');
    upToDate('tiny-bert-reranker-random');
    upToDate('tiny-qwen3-vl-random');
    upToDate('tiny-gemma3-vl-random');
    const lines = checkBundledModels(modelsDir, { packageRoot: root, cwd: root });
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toMatch(/is stale \(its manifest\.json has no bundled builder version\): run `npm run build:models`/);
  });

  it('names the models folder and the package root in the command when they are not the defaults', () => {
    const elsewhere = path.join(root, 'my models');
    fs.mkdirSync(elsewhere);
    const lines = checkBundledModels(elsewhere, { packageRoot: root, cwd: os.tmpdir() });
    expect(lines).toHaveLength(Object.keys(BUNDLED_MODEL_VERSIONS).length);
    expect(lines[0]).toContain(`run \`cd ${root} && npm run build:models -- --models-dir '${elsewhere}'\` to build it`);
  });
});

it('the builder builds exactly the models the check expects, at the same versions', () => {
  expect(BUNDLED_MODELS.map((m) => [m.manifest.id, m.version])).toEqual(Object.entries(BUNDLED_MODEL_VERSIONS));
});

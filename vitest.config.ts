import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

/** Files of the main pass that the end-to-end pass runs instead (vitest.e2e.config.ts). */
export const MAIN_E2E = [
  'test/clients/playground.test.ts',
  // Servers started, stopped and restarted, models loaded and unloaded, pulls from a stand-in hub:
  // 50-110 s of a worker each in the main pass.
  'test/clients/lifecycle.test.ts',
  'test/clients/main-process.test.ts',
  'test/model/hub.test.ts',
  // Each README example from unloaded models: ~150 s of a worker.
  'test/clients/readme-examples.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The slow end-to-end files (*.e2e.test.ts: test models of every model family built and served on
    // both engines) run in their own pass, `npm run test:e2e` (vitest.e2e.config.ts), which .ci/run
    // runs after `npm test`: the suite's own time stays within 20 minutes on two cores.
    // The page's browser test (about 2 minutes of a worker) and the lifecycle, main-process, hub and
    // README-examples files (MAIN_E2E) run there too, for the same reason.
    exclude: ['test/**/*.e2e.test.ts', ...MAIN_E2E, '**/node_modules/**'],
    // Builds the bundled models once if they are absent (a fresh clone that skipped npm install's hook).
    globalSetup: ['test/helpers/global-setup.ts'],
    // Hermetic: the Hugging Face cache of whoever runs the tests is never served (servers read it by
    // default); a test that wants one builds its own and points HF_HUB_CACHE or hfCacheDir at it.
    env: { HF_HUB_CACHE: path.join(os.tmpdir(), 'local-inference-server-tests-no-hf-cache') },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: more parallel files only contend for them.
    maxWorkers: 2,
  },
});

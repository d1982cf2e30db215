import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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

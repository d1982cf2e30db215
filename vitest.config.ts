import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the bundled models once if they are absent (a fresh clone that skipped npm install's hook).
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two cores: more parallel files only contend for them.
    maxWorkers: 2,
  },
});

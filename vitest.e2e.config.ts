/**
 * The end-to-end pass (npm run test:e2e; .ci/run runs it after npm test): every *.e2e.test.ts, the
 * slow files the main pass leaves out for the suite's time (test models of every model family, built
 * and served through the real server on both engines; the agent CLIs' sessions, a context past the
 * old cap and the prompt cache's disk faults on GGUF), and the page's browser test (MAIN_E2E). Each
 * file says which engine it runs on.
 */
import { defineConfig } from 'vitest/config';
import base, { MAIN_E2E } from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: ['test/**/*.e2e.test.ts', ...MAIN_E2E],
    exclude: ['**/node_modules/**'],
    // One file at a time: several of these start a dozen models or an agent CLI each, and two at
    // once on two cores push their start-up past its timeout (seen under load); CI's 90 minutes hold
    // the pass one file after another (about 25 minutes).
    maxWorkers: 1,
  },
});

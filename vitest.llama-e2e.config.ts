/**
 * The llama.cpp runs the llama.cpp pass leaves to the end-to-end pass for npm test's time
 * (LLAMA_E2E in vitest.llama.config.ts); npm run test:e2e runs this after vitest.e2e.config.ts.
 */
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { LLAMA_E2E, LLAMA_ENV } from './vitest.llama.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: LLAMA_E2E,
    exclude: ['**/node_modules/**'],
    env: LLAMA_ENV,
  },
});

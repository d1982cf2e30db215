/**
 * The llama.cpp pass (npm run test:llama; npm test runs it after the main pass): the client tests
 * that have chat, run again with the chat model on llama.cpp (the GGUF test model: the same weights,
 * tokenizer and template as the bundled ONNX one).
 *
 * Which tests, by a rule rather than a list: every test/clients file that imports one of the
 * engine's names from test/helpers/paths.ts (ENGINE_DEPENDENT: CHAT_MODEL, SERVED_MODELS_DIR,
 * ENGINE), since that is how a test serves the engine's chat model or folder. A new client test that
 * does joins the pass; a test that cannot run on one engine skips itself there, saying why
 * (ENGINE's rows say what differs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { ENGINE_DEPENDENT, GGUF_CHAT_MODEL } from './test/helpers/paths.js';

const CLIENTS = 'test/clients';
/** The names a file imports from test/helpers/paths.ts (`A as B` counts as A). */
const importedFromPaths = (file: string) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/import\s*\{([^}]*)\}\s*from\s*'\.\.\/helpers\/paths\.js'/g)].flatMap((m) => m[1]!.split(',').map((name) => name.trim().split(/\s+as\s+/)[0]!));
const hasChat = (file: string) => importedFromPaths(file).some((name) => (ENGINE_DEPENDENT as readonly string[]).includes(name));

export const LLAMA_PASS = fs.readdirSync(CLIENTS).filter((f) => f.endsWith('.test.ts') && !f.endsWith('.e2e.test.ts')).map((f) => `${CLIENTS}/${f}`).filter((f) => hasChat(path.resolve(f))).sort();

/**
 * The llama.cpp runs of the slowest files, whose subject is not the engine (the page in a browser:
 * 100-120 s; models loading and unloading, the server's main process started and stopped: 70-120 s, a
 * GGUF load being seconds on two cores), go to
 * the end-to-end pass (vitest.llama-e2e.config.ts, run by npm run test:e2e) for npm test's time.
 */
export const LLAMA_E2E = [`${CLIENTS}/playground.test.ts`, `${CLIENTS}/lifecycle.test.ts`, `${CLIENTS}/main-process.test.ts`];

/** The llama.cpp pass's environment: the chat model on llama.cpp, one thread per model process (two cores). */
export const LLAMA_ENV = { ...base.test?.env, TEST_CHAT_ENGINE: 'llama', FUZZ_CHAT_MODEL: GGUF_CHAT_MODEL, INTRA_OP_THREADS: '1' };

export default defineConfig({
  test: {
    ...base.test,
    include: LLAMA_PASS,
    // Left out for the suite's time: each README example starts from unloaded models, and a GGUF
    // model's load is several seconds on two cores (72 s for this file alone). It passes on llama.cpp:
    // `cross-env TEST_CHAT_ENGINE=llama INTRA_OP_THREADS=1 npx vitest run test/clients/readme-examples.test.ts`.
    exclude: [`${CLIENTS}/readme-examples.test.ts`, ...LLAMA_E2E],
    env: LLAMA_ENV,
  },
});

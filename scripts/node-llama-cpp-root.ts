/**
 * Where the installed node-llama-cpp lives (its package root). Its `exports` map does not list
 * `./package.json`, so the root is found from its main entry (`dist/index.js`).
 */
import { createRequire } from 'node:module';
import path from 'node:path';

export const NODE_LLAMA_CPP_ROOT = path.resolve(path.dirname(createRequire(import.meta.url).resolve('node-llama-cpp')), '..');

/**
 * src/engines/llama/load.ts replaces the vocabulary lists node-llama-cpp keeps in a model's
 * `fileInfo` by empty arrays of their length. That holds only while node-llama-cpp reads nothing of
 * them but the token list's length: its installed source (the pinned 3.21.1) is read here for every
 * use of those keys, so an upgrade that reads them otherwise fails this test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VOCABULARY_LISTS } from '../../src/engines/llama/load.js';
import { ROOT } from '../helpers/paths.js';

const dist = path.join(ROOT, 'node_modules/node-llama-cpp/dist');
const sources = (dir: string): string[] =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'cli' ? [] : sources(file);
    return entry.name.endsWith('.js') ? [file] : [];
  });

describe("node-llama-cpp's use of a GGUF's vocabulary lists", () => {
  it('is the token list\'s length only, outside its CLI', () => {
    const uses: string[] = [];
    for (const file of sources(dist)) {
      const text = fs.readFileSync(file, 'utf8');
      for (const key of VOCABULARY_LISTS) {
        for (const match of text.matchAll(new RegExp(`ggml\\??\\.(?:\\['${key}'\\]|\\["${key}"\\]|${key}\\b)[^;\\n]{0,12}`, 'g'))) uses.push(`${path.relative(dist, file)}: ${match[0]}`);
      }
    }
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) expect(use).toMatch(/ggml\??\.tokens\??\.length/);
  });
});

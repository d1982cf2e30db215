import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGgufMetadata } from '../../src/models/gguf.js';
import { writeGguf, type GgufValue } from '../../scripts/builders/gguf/gguf-writer.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-metadata-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (file: string, name: string, tokens: number) =>
  writeGguf(file, {
    'general.name': { type: 'string', value: name },
    'tokenizer.ggml.tokens': { type: 'strings', value: Array.from({ length: tokens }, (_, i) => `t${i}`) },
  } satisfies Record<string, GgufValue>, [], []);

describe('readGgufMetadata', () => {
  it('reads a file again once it changed, the scanner\'s reads (long arrays skipped) being kept per file while it does not', () => {
    const file = path.join(dir, 'm.gguf');
    write(file, 'first', 5000);
    const first = readGgufMetadata(file, { maxArray: 4096 });
    expect(first.get('general.name')).toBe('first');
    expect(first.has('tokenizer.ggml.tokens')).toBe(false);
    // The caller's copy: changing it changes nothing read later.
    first.set('general.name', 'changed by a caller');
    expect(readGgufMetadata(file, { maxArray: 4096 }).get('general.name')).toBe('first');
    write(file, 'second, longer', 5000);
    expect(readGgufMetadata(file, { maxArray: 4096 }).get('general.name')).toBe('second, longer');
    // Whole reads are never kept: they hold the vocabulary.
    expect((readGgufMetadata(file).get('tokenizer.ggml.tokens') as string[]).length).toBe(5000);
  });

  it('reads lengths past 32 bits as numbers and refuses ones past 2^53', () => {
    const file = path.join(dir, 'big.gguf');
    write(file, 'x', 1);
    const bytes = fs.readFileSync(file);
    // The tensor count (after magic and version): 2^40, then an impossible 2^60.
    bytes.writeBigUInt64LE(2n ** 40n, 8);
    fs.writeFileSync(file, bytes);
    expect(readGgufMetadata(file).get('general.name')).toBe('x');
    bytes.writeBigUInt64LE(2n ** 60n, 16);
    fs.writeFileSync(file, bytes);
    expect(() => readGgufMetadata(file)).toThrow(/a length of 1152921504606846976/);
  });
});

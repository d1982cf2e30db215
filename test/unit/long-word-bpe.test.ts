/**
 * long-word-bpe.ts gives the library's BPE result: checked against transformers.js's own `bpe` on
 * the bundled model's real Qwen3 merges, over random words of a few characters that merge a lot,
 * and on small merge lists for the rules (rank order, leftmost first, a pair listed twice).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { dropTokenizerSource, mergesOf } from '../../src/tokenize/drop-source.js';
import { bpeWord, buildMergeTable, type MergeTable } from '../../src/tokenize/long-word-bpe.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';

interface LibraryBpe {
  bpe(word: string): string[];
  merges: Array<[string, string]>;
  tokens_to_ids: Map<string, number>;
}

/** A merge table over a vocabulary of the merges' strings. */
function smallTable(merges: Array<[string, string]>): MergeTable {
  const vocab = new Map<string, number>();
  for (const s of merges.flatMap(([a, b]) => [a, b, a + b])) if (!vocab.has(s)) vocab.set(s, vocab.size);
  return buildMergeTable(merges, vocab)!;
}

let library: LibraryBpe;
let table: MergeTable;
beforeAll(async () => {
  env.allowRemoteModels = false;
  env.localModelPath = `${MODELS_DIR}/`;
  const tokenizer = await AutoTokenizer.from_pretrained(CHAT_MODEL);
  library = (tokenizer as unknown as { _tokenizer: { model: LibraryBpe } })._tokenizer.model;
  table = buildMergeTable(library.merges, library.tokens_to_ids)!;
  expect(table).not.toBeNull();
});

// Byte-level characters: "Ġ" a space, "Ċ" a newline, "é"/"ĩ"/"ı" bytes of CJK characters.
const ALPHABET = ['a', 'b', 'e', 't', 'h', 'n', 'Ġ', 'Ċ', '=', '-', '0', 'é', 'ĩ', 'ı', 'Ã', '©', 'Ð'];

describe('long-word BPE', () => {
  it('equals the library on random words of the real merges', () => {
    const word = fc
      .subarray(ALPHABET, { minLength: 1 })
      .chain((letters) => fc.array(fc.constantFrom(...letters), { minLength: 0, maxLength: 400 }))
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(word, (w) => {
        expect(bpeWord(table, w)).toEqual(library.bpe(w));
      }),
      { numRuns: 400 },
    );
  });

  it('equals the library on long runs and on characters no merge knows', () => {
    for (const w of ['a'.repeat(5000), 'Ġ'.repeat(3001), 'éĩı'.repeat(700), `ab${'\u{1F600}'}cd\u0000ef`, 'x', '']) {
      expect(bpeWord(table, w)).toEqual(library.bpe(w));
    }
  });

  it('merges the lowest rank first, the leftmost among equals, and the last listing of a pair', () => {
    const small = smallTable([['a', 'b'], ['b', 'c'], ['ab', 'c'], ['a', 'a']]);
    expect(bpeWord(small, 'abc')).toEqual(['abc']); // "a b" (rank 0) first, then "ab c"
    expect(bpeWord(small, 'aaa')).toEqual(['aa', 'a']); // two "a a" pairs: the leftmost first
    expect(bpeWord(small, 'xabcz')).toEqual(['x', 'abc', 'z']); // characters no merge knows stay as they are
    // "b c" is listed at ranks 0 and 2; the library's rank map keeps the last, so "c d" (1) goes first.
    const twice = smallTable([['b', 'c'], ['c', 'd'], ['b', 'c']]);
    expect(bpeWord(twice, 'bcd')).toEqual(['b', 'cd']);
  });

  it('reads the merges back from the rank map once the tokenizer dropped its source (drop-source.ts)', async () => {
    const tokenizer = await AutoTokenizer.from_pretrained(CHAT_MODEL);
    const model = (tokenizer as unknown as { _tokenizer: { model: LibraryBpe & { bpe_ranks: Map<string, number> } } })._tokenizer.model;
    const listed = model.merges;
    dropTokenizerSource(tokenizer);
    expect(model.merges).toBeUndefined();
    expect(mergesOf(model)).toEqual(listed);
    for (const w of ['a'.repeat(500), 'Ġthe'.repeat(80), 'éĩı'.repeat(70)]) expect(bpeWord(buildMergeTable(mergesOf(model)!, model.tokens_to_ids)!, w)).toEqual(model.bpe(w));
    // A pair listed twice keeps its last rank; its first slot holds a later pair, so the table is the same.
    const twice: Array<[string, string]> = [['b', 'c'], ['c', 'd'], ['b', 'c']];
    const ranks = new Map(twice.map((pair, i) => [JSON.stringify(pair), i]));
    const read = mergesOf({ bpe_ranks: ranks })!;
    expect(read).toEqual([['c', 'd'], ['c', 'd'], ['b', 'c']]);
    expect(bpeWord(smallTable(read), 'bcd')).toEqual(bpeWord(smallTable(twice), 'bcd'));
  });

  it('has no table for merges that name strings the vocabulary lacks', () => {
    expect(buildMergeTable([['a', 'b']], new Map([['a', 0], ['b', 1]]))).toBeNull();
  });
});

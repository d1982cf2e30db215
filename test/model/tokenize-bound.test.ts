/**
 * The prompt encoder's budget (src/tokenize/prompt-encoder.ts) on the bundled model's real
 * Qwen3 tokenizer: a text over the budget is refused with a lower bound of its true length, a text
 * within it gets exactly the ids of an unbudgeted encode; and a long run of one character that
 * cannot fit is refused from its bytes alone, before it is pre-tokenized or merged, whatever the
 * budget's size (the bound no longer grows with the context window).
 */
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { describeModel } from '../../src/models/registry.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import type { LoadedTokenizer } from '../../src/tokenize/load-tokenizer.js';
import { PromptEncoder } from '../../src/tokenize/prompt-encoder.js';
import * as longWordBpe from '../../src/tokenize/long-word-bpe.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';

// Counts the long-word merges (same behaviour, a spy around it).
vi.mock('../../src/tokenize/long-word-bpe.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/tokenize/long-word-bpe.js')>();
  return { ...original, bpeWord: vi.fn(original.bpeWord) };
});

let loaded: LoadedTokenizer;
let encoder: PromptEncoder;
beforeAll(async () => {
  loaded = await loadTokenizer(describeModel(path.join(MODELS_DIR, CHAT_MODEL), 1));
  encoder = PromptEncoder.for(loaded.tokenizer);
});

/** The uncached path's ids (the memo would hand back what an earlier encode of the text made). */
const exactIds = (text: string) => {
  const out = encoder.encode(text, { memo: false });
  if (!('ids' in out)) throw new Error('an unbudgeted encode always has ids');
  return out.ids;
};

// Runs of few distinct characters (letters, digits, newlines, spaces, a CJK character, an emoji),
// the texts whose bound is tighter than the vocabulary's longest entry, and ordinary words.
const UNITS = ['a', 'b', 'z', '7', ' ', '\n', '=', '量', '的', '😀', 'é', 'the ', 'river '];
const text = fc
  .tuple(fc.subarray(UNITS, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1_000, max: 150_000 }))
  .chain(([units, runLength, length]) =>
    fc.array(fc.constantFrom(...units), { minLength: 1, maxLength: 64 }).map((picks) => {
      const unit = picks.map((u) => u.repeat(runLength)).join('');
      return unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
    }),
  );

describe('prompt encoder budget', () => {
  it('over the budget: refused with a lower bound of the true length; within it: the exact ids', () => {
    fc.assert(
      fc.property(text, fc.double({ min: 0.05, max: 1.5, noNaN: true }), (t, fraction) => {
        const ids = exactIds(t);
        const budget = Math.max(1, Math.floor(ids.length * fraction));
        const out = encoder.encode(t, { budget });
        if (ids.length <= budget) {
          expect(out).toEqual({ ids });
        } else {
          expect('tooLong' in out).toBe(true);
          if (!('tooLong' in out)) return;
          expect(out.tooLong.tokens).toBeGreaterThan(budget);
          expect(out.tooLong.tokens).toBeLessThanOrEqual(ids.length);
          if (out.tooLong.exact) expect(out.tooLong.tokens).toBe(ids.length);
        }
      }),
      { numRuns: 40 },
    );
  });

  it.each([
    ['a megabyte of one letter', 'a'.repeat(1_000_000)],
    ['a megabyte of one CJK character', '量'.repeat(333_334)],
    ['a megabyte of one digit', '7'.repeat(1_000_000)],
  ])('%s that cannot fit is refused before any of it is merged, for a budget of 32k or of 100k tokens', (_name, t) => {
    for (const budget of [32_767, 100_000]) {
      vi.mocked(longWordBpe.bpeWord).mockClear();
      const out = encoder.encode(`user\n${t}`, { budget });
      expect(out).toMatchObject({ tooLong: { exact: false } });
      expect(longWordBpe.bpeWord).not.toHaveBeenCalled();
    }
  });

  it('a long run that fits is merged and counted exactly', () => {
    vi.mocked(longWordBpe.bpeWord).mockClear();
    const t = ' '.repeat(200_000);
    const out = encoder.encode(t, { budget: 32_767 });
    expect(out).toEqual({ ids: exactIds(t) });
    expect(longWordBpe.bpeWord).toHaveBeenCalled();
  });
});

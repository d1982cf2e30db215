/**
 * The prompt encoder's memo across requests (src/tokenize/prompt-encoder.ts, segment-memo.ts): a
 * prompt encoded after others that share its segments gets exactly the ids, and the same refusal
 * under a budget, as the uncached path (`memo: false`), on the tokenizer kinds the server builds:
 * byte-level BPE (the bundled Qwen3), SentencePiece BPE and unigram rebuilt from GGUF metadata
 * (Gemma 3's vocabulary), and a Metaspace tokenizer that prefixes only the first section and strips
 * around an added token (what a memo keyed by the text alone would get wrong). The memo holds no more
 * than its byte budget, least recently used out first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { PreTrainedTokenizer } from '@huggingface/transformers';
import type { TextTokenizer } from '../../src/tokenize/text-tokenizer.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeModel } from '../../src/models/registry.js';
import { readGgufMetadata } from '../../src/models/gguf.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import { tokenizerFromGguf } from '../../src/tokenize/gguf-tokenizer.js';
import { MEMO_BYTES, PromptEncoder, type Literals } from '../../src/tokenize/prompt-encoder.js';
import { SegmentMemo } from '../../src/tokenize/segment-memo.js';
import * as longWordBpe from '../../src/tokenize/long-word-bpe.js';
import { buildSpmVocabGguf } from '../../scripts/builders/gguf/spm-vocab-gguf.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';

// Counts the long-word merges (same behaviour, a spy around it): a segment found is not merged again.
vi.mock('../../src/tokenize/long-word-bpe.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/tokenize/long-word-bpe.js')>();
  return { ...original, bpeWord: vi.fn(original.bpeWord) };
});

/** Metaspace with prepend_scheme "first" (only section 0 gets "▁"), and `<mask>` stripping the spaces around it. */
function metaspaceFirst(): PreTrainedTokenizer {
  const vocab: Record<string, number> = { '<s>': 0, '<unk>': 1, '<mask>': 2, '▁': 3 };
  for (const c of 'abcdefghijklmnopqrstuvwxyz0123456789.,\n') vocab[c] = Object.keys(vocab).length;
  const merges: Array<[string, string]> = [['▁', 't'], ['h', 'e'], ['▁t', 'he'], ['i', 'n'], ['▁', 'a'], ['e', 'n'], ['▁', 'in']];
  for (const [a, b] of merges) vocab[a + b] ??= Object.keys(vocab).length;
  const added = (id: number, content: string, strip: boolean) => ({ id, content, special: true, lstrip: strip, rstrip: strip, normalized: false, single_word: false });
  const metaspace = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true };
  return new PreTrainedTokenizer(
    {
      version: '1.0',
      added_tokens: [added(0, '<s>', false), added(1, '<unk>', false), added(2, '<mask>', true)],
      normalizer: null,
      pre_tokenizer: metaspace,
      post_processor: null,
      decoder: metaspace,
      model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
    },
    { bos_token: '<s>', unk_token: '<unk>', mask_token: '<mask>' },
  );
}

const tokenizers = new Map<string, TextTokenizer>();
let dir: string;
beforeAll(async () => {
  tokenizers.set('byte-level BPE (Qwen3)', (await loadTokenizer(describeModel(path.join(MODELS_DIR, CHAT_MODEL), 1))).tokenizer);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-spm-'));
  for (const [name, options] of [
    ['SentencePiece BPE (Gemma 3 vocabulary)', { addSpacePrefix: true }],
    ['SentencePiece unigram (Gemma 3 vocabulary)', { addSpacePrefix: true, unigram: { removeExtraWhitespaces: false, addBos: false, addEos: false } }],
  ] as const) {
    const file = path.join(dir, `${tokenizers.size}.gguf`);
    buildSpmVocabGguf(file, { ...options, vocabSize: 8000 });
    tokenizers.set(name, tokenizerFromGguf(readGgufMetadata(file)));
  }
  tokenizers.set('Metaspace, first section only, stripping added token', metaspaceFirst());
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * Segment texts of at least the memo's minimum, some the prefix of another, some with spaces or
 * newlines at the ends (where a pre-tokenizer splits differently with the text that follows).
 */
const BASE = 'the thin tent in the end, then the tin 123 4567.\nthe tenth theme ';
const SEGMENTS = [
  BASE,
  `${BASE}and more`,
  `${BASE}   `,
  `   ${BASE}`,
  `${BASE}\n\n`,
  `${BASE.repeat(3)}量子 😀 é`,
  `${BASE.replace(/ /g, '  ')}`,
  'x',
];

/** A prompt: segments joined by the tokenizer's special tokens, nothing, or a space (which makes them one segment). */
const prompt = (specials: readonly string[]) =>
  fc.array(fc.tuple(fc.constantFrom('', ' ', ...specials), fc.constantFrom(...SEGMENTS)), { minLength: 1, maxLength: 6 }).map((parts) => parts.map(([joint, text]) => joint + text).join(''));

describe('prompt encoder memo', () => {
  it.each(['byte-level BPE (Qwen3)', 'SentencePiece BPE (Gemma 3 vocabulary)', 'SentencePiece unigram (Gemma 3 vocabulary)', 'Metaspace, first section only, stripping added token'])(
    '%s: prompts sharing segments get the uncached ids, and the uncached refusal under a budget',
    (name) => {
      const tokenizer = tokenizers.get(name)!;
      const encoder = PromptEncoder.for(tokenizer);
      encoder.forget();
      const specials = encoder.specialTokens.slice(0, 4);
      fc.assert(
        fc.property(fc.array(fc.tuple(prompt(specials), fc.double({ min: 0.3, max: 1.2, noNaN: true })), { minLength: 2, maxLength: 6 }), (prompts) => {
          for (const [text, fraction] of prompts) {
            const uncached = encoder.encode(text, { memo: false });
            expect(encoder.encode(text), text).toEqual(uncached);
            if (!('ids' in uncached)) throw new Error('an unbudgeted encode always has ids');
            // Budgets around the length: the memo's tokens that would pass it are encoded as the uncached path does.
            for (const budget of [Math.max(1, Math.floor(uncached.ids.length * fraction)), uncached.ids.length, uncached.ids.length - 1]) {
              if (budget < 1) continue;
              expect(encoder.encode(text, { budget }), `${text} within ${budget}`).toEqual(encoder.encode(text, { budget, memo: false }));
            }
          }
        }),
        { numRuns: 25 },
      );
      expect(encoder.memoBytes).toBeGreaterThan(0);
    },
  );

  it('a segment is its text as the pre-tokenizer sees it: first section or not, stripped beside an added token', () => {
    const encoder = PromptEncoder.for(tokenizers.get('Metaspace, first section only, stripping added token')!);
    const text = `${BASE}   `;
    const ids = (t: string) => (encoder.encode(t) as { ids: number[] }).ids;
    const first = ids(text);
    const later = ids(`<s>${text}`).slice(1);
    const stripped = ids(`<s>${text}<mask>`).slice(1, -1);
    expect(later).not.toEqual(first);
    expect(stripped).not.toEqual(later);
    encoder.forget();
    expect([ids(`<s>${text}<mask>`).slice(1, -1), ids(`<s>${text}`).slice(1), ids(text)]).toEqual([stripped, later, first]);
  });

  it('placeholders stand for their literal text: one placeholder for two different special-token texts', () => {
    const tokenizer = tokenizers.get('byte-level BPE (Qwen3)')!;
    const encoder = PromptEncoder.for(tokenizer);
    const placeholder = String.fromCodePoint(0xf0000);
    const text = `<|im_start|>user\n${BASE}${placeholder}${BASE}<|im_end|>`;
    const results = ['<|im_end|>', '<|im_start|>', '<|im_end|>'].map((literal) => {
      const literals: Literals = new Map([[placeholder, literal]]);
      const memoized = encoder.encode(text, { literals });
      expect(memoized).toEqual(encoder.encode(text, { literals, memo: false }));
      return memoized;
    });
    expect(results[0]).not.toEqual(results[1]);
  });

  it('a segment found is not encoded again', () => {
    const encoder = PromptEncoder.for(tokenizers.get('byte-level BPE (Qwen3)')!);
    const text = `<|im_start|>system\n${'abcdefghij'.repeat(300)} ${BASE}<|im_end|>`;
    encoder.forget();
    vi.mocked(longWordBpe.bpeWord).mockClear();
    const first = encoder.encode(text);
    expect(longWordBpe.bpeWord).toHaveBeenCalledTimes(1);
    expect(encoder.encode(`${text}\n<|im_start|>user\nNext.<|im_end|>`)).toMatchObject({ ids: [...(first as { ids: number[] }).ids, ...((encoder.encode('\n<|im_start|>user\nNext.<|im_end|>') as { ids: number[] }).ids)] });
    expect(longWordBpe.bpeWord).toHaveBeenCalledTimes(1);
    // Short segments are encoded every time (not kept).
    const held = encoder.memoBytes;
    encoder.encode('<|im_start|>user\nHi<|im_end|>');
    expect(encoder.memoBytes).toBe(held);
    expect(held).toBeLessThanOrEqual(MEMO_BYTES);
    encoder.forget();
    expect(encoder.memoBytes).toBe(0);
  });
});

describe('segment memo', () => {
  const tokens = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

  it('holds no more than its budget, dropping the least recently used first', () => {
    const memo = new SegmentMemo(2_000);
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 1, max: 600 }), fc.integer({ min: 0, max: 100 })), { maxLength: 200 }), (steps) => {
        memo.clear();
        for (const [key, chars, count] of steps) {
          const k = String(key).padEnd(chars, '.');
          if (count % 3 === 0) memo.get(k);
          else memo.set(k, tokens(count));
          expect(memo.bytes).toBeLessThanOrEqual(memo.budget);
        }
      }),
    );
    memo.clear();
    const key = (c: string) => c.repeat(200);
    memo.set(key('a'), tokens(10));
    memo.set(key('b'), tokens(10));
    memo.set(key('c'), tokens(10));
    memo.get(key('a'));
    memo.set(key('d'), tokens(10)); // 4 x 576 bytes > 2,000: b, the least recently used, goes
    expect([key('a'), key('b'), key('c'), key('d')].map((k) => memo.get(k) !== undefined)).toEqual([true, false, true, true]);
  });

  it('keeps nothing larger than the whole budget, and counts a key set twice once', () => {
    const memo = new SegmentMemo(2_000);
    memo.set('small', tokens(5));
    memo.set('x'.repeat(1_000), tokens(1));
    expect(memo.get('x'.repeat(1_000))).toBeUndefined();
    expect(memo.get('small')).toEqual(tokens(5));
    const bytes = memo.bytes;
    memo.set('small', tokens(5));
    expect(memo.bytes).toBe(bytes);
    expect(memo.size).toBe(1);
  });
});

describe("the memo on disk (src/tokenize/memo-file.ts)", () => {
  const file = () => path.join(dir, 'memo', 'segments.json');
  const prompt = SEGMENTS.join('<|im_end|>\n<|im_start|>user\n');
  const logs: string[] = [];
  const log = (_level: string, msg: string) => void logs.push(msg);

  it("a new encoder of the same tokenizer reads the segments back: the same ids, found rather than encoded", async () => {
    const { writeMemoFile, readMemoFile } = await import('../../src/tokenize/memo-file.js');
    const qwen = tokenizers.get('byte-level BPE (Qwen3)')!;
    const writer = PromptEncoder.for(qwen);
    const expected = writer.encode(prompt, { memo: false });
    writer.encode(prompt);
    await writeMemoFile(file(), writer);
    // Another instance of the same tokenizer (a new worker): its encoder starts empty.
    const fresh = (await loadTokenizer(describeModel(path.join(MODELS_DIR, CHAT_MODEL), 1))).tokenizer;
    const reader = PromptEncoder.for(fresh);
    expect(reader.memoBytes).toBe(0);
    expect(readMemoFile(file(), reader, log)).toBe(writer.memoEntries().length);
    expect(reader.memoEntries()).toEqual(writer.memoEntries());
    expect(reader.encode(prompt)).toEqual(expected);
  });

  it('ignores, and logs, a damaged file, a file of another tokenizer, and none at all', async () => {
    const { writeMemoFile, readMemoFile } = await import('../../src/tokenize/memo-file.js');
    const qwen = tokenizers.get('byte-level BPE (Qwen3)')!;
    await writeMemoFile(file(), PromptEncoder.for(qwen));
    const good = fs.readFileSync(file(), 'utf8');
    const target = PromptEncoder.for(tokenizers.get('SentencePiece BPE (Gemma 3 vocabulary)')!);
    const held = target.memoEntries();
    logs.length = 0;
    // Qwen3's byte-level tokens are not SentencePiece's (a valid file of another tokenizer).
    expect(readMemoFile(file(), target, log)).toBe(0);
    fs.writeFileSync(file(), good.replace('the thin', 'the thix'));
    expect(readMemoFile(file(), PromptEncoder.for(qwen), log)).toBe(0);
    fs.writeFileSync(file(), good.slice(0, good.length / 2));
    expect(readMemoFile(file(), PromptEncoder.for(qwen), log)).toBe(0);
    expect(logs).toHaveLength(3);
    expect(logs.every((l) => l.includes('is ignored'))).toBe(true);
    expect(target.memoEntries()).toEqual(held); // nothing of a refused file kept
    fs.rmSync(file());
    expect(readMemoFile(file(), target, log)).toBe(0);
    expect(logs).toHaveLength(3);
  });
});

/**
 * Encodes a rendered chat prompt with the model's tokenizer (transformers.js), with two things the
 * library's `encode` does not do. Runs in a worker thread; one encoder per tokenizer.
 *
 * Message text stands in for itself. A special-token string inside a message (`<|im_end|>` typed by
 * an end user) must become ordinary text tokens, never the control token, or a user could forge turn
 * and system boundaries. The library has no option for that (Python's `split_special_tokens`): its
 * added-token splitter matches special tokens anywhere. So the caller replaces each special-token
 * string in the messages by a placeholder before rendering the template, and this encoder puts the
 * literal text back after the splitter has run, just before pre-tokenization: the splitter sees only
 * the template's special tokens, the pre-tokenizer and the model see the text as written.
 *
 * Bounded time. A prompt is encoded only as far as it can fit: encoding stops once the tokens so far
 * plus a lower bound for what comes next pass the budget. Every token is a vocabulary entry made of
 * characters of the text it covers, so no token is longer than the longest entry made of those
 * characters alone. (1) For byte-level BPE, a section of text is bounded from its UTF-8 bytes
 * before it is pre-tokenized: block by block, by the longest entry made of the bytes around that
 * block (byteBound; a megabyte of "a" is at least 125,000 tokens, of one CJK character 333,333,
 * of digits a million); ordinary text, with many distinct bytes, by the longest entry of all.
 * (2) A long text whose pieces are short is probed on a prefix (probe). (3) Pieces go to the model
 * in chunks, each checked first with the same bound over its characters, a long piece by its own
 * characters (a megabyte of one letter is one piece for the Qwen and GPT-2 pre-tokenizers: ~13 s
 * in the library's BPE), and counted after. So a run of a few characters that cannot fit is refused
 * in one pass over its bytes, whatever the budget (the context window); no more than about budget x
 * the longest entry made of the text's characters is ever pre-tokenized or encoded. The bounds
 * themselves (lowerBound, byteBound) are in token-bounds.ts.
 * Words longer than LONG_WORD go to long-word-bpe.ts instead of the library's BPE (same result, ~30x
 * faster on long words). Ids are exact for whatever is encoded.
 *
 * Memoized across requests. The library splits the text at added tokens into segments and
 * pre-tokenizes and encodes each alone, so a segment's tokens depend on its text (literals put back)
 * and, for Metaspace's prepend_scheme "first", on whether it is the first section: that is the key
 * (segment-memo.ts). An agent's turn resends the turns before it, each message a segment between the
 * template's special tokens, and its 18.7k-token prefix costs ~0.1 s to tokenize again. A segment
 * found whose tokens still fit the budget is counted and not encoded; one that would pass the budget
 * is encoded as if it were not held, so a refusal is the uncached path's too.
 *
 * It reaches into the tokenizer object of transformers.js 4.x (`_tokenizer`, its `pre_tokenizer`
 * and `model`); the constructor checks that shape and fails loudly if a release changes it. No
 * library object is changed: the encoder works through views (Object.create) of them.
 */
import type { TextTokenizer } from './text-tokenizer.js';
import { mergesOf } from './drop-source.js';
import { bpeWord, buildMergeTable, type MergeTable } from './long-word-bpe.js';
import { SegmentMemo } from './segment-memo.js';
import { LONG_WORD, TokenBounds, type PreTokenizerConfig } from './token-bounds.js';

type PreTokenize = (text: string, options?: { section_index?: number }) => string[];

/** The part of @huggingface/tokenizers' TokenizerModel (BPE for the fast path) this module relies on. */
interface InnerModel {
  (pieces: string[]): string[];
  vocab: string[];
  tokens_to_ids: Map<string, number>;
  fuse_unk?: boolean;
  // BPE only:
  bpe?: (word: string) => string[];
  encode?: (pieces: string[]) => string[];
  merges?: Array<[string, string]>;
  bpe_ranks?: Map<string, number>;
  end_of_word_suffix?: string;
  continuing_subword_suffix?: string | null;
}

/** The part of @huggingface/tokenizers' Tokenizer this module relies on. */
interface InnerTokenizer {
  /** tokenizer.json as loaded. */
  tokenizer: { pre_tokenizer?: PreTokenizerConfig | null };
  pre_tokenizer: PreTokenize | null;
  model: InnerModel;
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}

/** Placeholder -> the literal text it stands for. */
export type Literals = ReadonlyMap<string, string>;

/** The ids, or for a text of more than the budget its length in tokens: exact, or a lower bound when encoding stopped early. */
export type Encoded = { ids: number[] } | { tooLong: { tokens: number; exact: boolean } };

/** Pieces per model call when a budget applies: small enough to stop soon after the budget is passed. */
const CHUNK = 256;
/** Pieces at the end of a pre-tokenized prefix that the rest of the text may still change. */
const PROBE_SLACK = 4;
/** Bytes of segments each tokenizer's encoder remembers: an agent's prompt of 18.7k tokens takes ~0.3 MB. */
export const MEMO_BYTES = 32 * 1024 * 1024;
/** Segments shorter than this are encoded every time: a lookup and an entry cost about what encoding them does. */
const MEMO_MIN_CHARS = 64;

class OverBudget {
  constructor(readonly atLeast: number) {}
}

export class PromptEncoder {
  private static readonly encoders = new WeakMap<TextTokenizer, PromptEncoder>();

  /** Special-token strings of the tokenizer (the ones a message must not produce). */
  readonly specialTokens: readonly string[];
  /** The tokenizer with this encoder's pre-tokenizer and model in front of its own. */
  private readonly view: InnerTokenizer;
  private readonly model: InnerModel;
  /** The model with long words sent to long-word-bpe.ts; null for models that are not plain BPE. */
  private readonly longWordModel: InnerModel | null;
  /** Built on the first long word; null when the merges do not fit the vocabulary (then the library's BPE serves). */
  private mergeTable: MergeTable | null | undefined;
  /** Lower bounds on token counts from the vocabulary (token-bounds.ts). */
  private readonly bounds: TokenBounds;
  /** Segments encoded before, by key (the opening comment). */
  private readonly memo = new SegmentMemo(MEMO_BYTES);

  // The state of the one encode under way (workers are single-threaded and encode is synchronous).
  private literals: Literals | null = null;
  private budget = Infinity;
  private counted = 0;
  private memoOn = true;
  /** The segment being encoded: its memo key when it is to be kept, or its tokens when they were found. */
  private segmentKey: string | null = null;
  private segmentHit: readonly string[] | null = null;

  static for(tokenizer: TextTokenizer): PromptEncoder {
    let encoder = PromptEncoder.encoders.get(tokenizer);
    if (!encoder) PromptEncoder.encoders.set(tokenizer, (encoder = new PromptEncoder(tokenizer)));
    return encoder;
  }

  private constructor(tokenizer: TextTokenizer) {
    const inner = (tokenizer as unknown as { _tokenizer?: InnerTokenizer })._tokenizer;
    const model = inner?.model;
    if (!inner || typeof inner.encode !== 'function' || !('pre_tokenizer' in inner) || typeof model !== 'function' || !Array.isArray(model.vocab)) {
      throw new Error('PromptEncoder: this transformers.js release does not have the tokenizer shape it was written for');
    }
    this.specialTokens = [...new Set(tokenizer.all_special_tokens)].filter((t) => t.length > 0);
    this.model = model;
    this.bounds = new TokenBounds(model.vocab, inner.tokenizer?.pre_tokenizer);
    const plainBpe =
      typeof model.bpe === 'function' && typeof model.encode === 'function' && (Array.isArray(model.merges) || model.bpe_ranks instanceof Map) &&
      !model.fuse_unk && !model.end_of_word_suffix && !model.continuing_subword_suffix;
    if (plainBpe) {
      const libraryBpe = model.bpe!.bind(model);
      const longWordModel = Object.create(model) as InnerModel;
      longWordModel.bpe = (word) => {
        const table = word.length >= LONG_WORD ? this.table() : null;
        return table ? bpeWord(table, word) : libraryBpe(word);
      };
      this.longWordModel = longWordModel;
    } else {
      this.longWordModel = null;
    }
    const preTokenize = inner.pre_tokenizer;
    const view = Object.create(inner) as InnerTokenizer;
    view.pre_tokenizer = (text, options) => {
      const restored = this.literals ? restore(text, this.literals) : text;
      if (this.recall(restored, options?.section_index === 0)) return [];
      if (this.bounds.byteLevel && this.budget !== Infinity) {
        const atLeast = this.counted + this.bounds.byteBound(restored);
        if (atLeast > this.budget) throw new OverBudget(atLeast);
        if (preTokenize) this.probe(preTokenize, restored, options);
      }
      return preTokenize ? preTokenize(restored, options) : [restored];
    };
    // Callable like the model, and its properties (tokens_to_ids, unk_token_id) read through to it.
    view.model = Object.setPrototypeOf((pieces: string[]) => this.encodeSegment(pieces), model) as InnerModel;
    this.view = view;
  }

  /**
   * Token ids of `text`, each placeholder of `literals` tokenized as the literal text it stands for;
   * or, once the text is known to be more than `budget` tokens, a lower bound of its length.
   */
  encode(text: string, options: { literals?: Literals; budget?: number; memo?: boolean } = {}): Encoded {
    this.literals = options.literals && options.literals.size > 0 ? options.literals : null;
    this.budget = options.budget ?? Infinity;
    this.memoOn = options.memo ?? true;
    this.counted = 0;
    this.bounds.startEncode();
    try {
      const { ids } = this.view.encode(text, { add_special_tokens: false });
      return ids.length > this.budget ? { tooLong: { tokens: ids.length, exact: true } } : { ids };
    } catch (error) {
      if (error instanceof OverBudget) return { tooLong: { tokens: error.atLeast, exact: false } };
      throw error;
    } finally {
      this.literals = null;
      this.budget = Infinity;
      this.segmentKey = null;
      this.segmentHit = null;
    }
  }

  /** Drops every segment remembered (a benchmark of the uncached path). */
  forget(): void {
    this.memo.clear();
  }

  /** The segments remembered, least recently used first: their keys and tokens (./memo-file.ts writes them). */
  memoEntries(): Array<[string, readonly string[]]> {
    return [...this.memo.entries()];
  }

  /**
   * Remembers segments read back (./memo-file.ts), in their order; false, keeping none, when one is
   * not a key and tokens of this vocabulary (a file of another tokenizer, or damaged).
   */
  restoreMemo(entries: ReadonlyArray<readonly [unknown, unknown]>): boolean {
    const { vocab, tokens_to_ids: ids } = this.model;
    const valid = entries.every(([key, tokens]) => typeof key === 'string' && key.length > MEMO_MIN_CHARS && Array.isArray(tokens) && tokens.every((t) => typeof t === 'string' && ids.has(t)));
    if (!valid) return false;
    for (const [key, tokens] of entries) this.memo.set(key as string, Object.freeze((tokens as string[]).map((token) => vocab[ids.get(token)!] ?? token)));
    return true;
  }

  /** Bytes of segments remembered. */
  get memoBytes(): number {
    return this.memo.bytes;
  }

  /**
   * Looks the segment up: true when its tokens were found and fit the budget (the model step then
   * returns them); otherwise notes its key when it is to be kept once encoded.
   */
  private recall(text: string, first: boolean): boolean {
    this.segmentKey = null;
    this.segmentHit = null;
    if (!this.memoOn || text.length < MEMO_MIN_CHARS) return false;
    // A new string (V8 flattens a concatenation when the Map hashes it): an entry does not keep alive
    // the whole prompt its text was sliced from.
    const key = (first ? '1' : '0') + text;
    const tokens = this.memo.get(key);
    if (tokens !== undefined && this.counted + tokens.length <= this.budget) {
      this.segmentHit = tokens;
      return true;
    }
    this.segmentKey = key;
    return false;
  }

  /** The model step for one segment: its tokens found by recall, or encoded (and kept when recall said so). */
  private encodeSegment(pieces: string[]): string[] {
    const hit = this.segmentHit;
    if (hit) {
      this.segmentHit = null;
      // Fits the budget (recall checked): counted, never thrown.
      return this.count(hit as string[]);
    }
    const key = this.segmentKey;
    this.segmentKey = null;
    const tokens = this.encodePieces(pieces);
    if (key !== null) this.memo.set(key, Object.freeze(tokens.map((token) => this.model.vocab[this.model.tokens_to_ids.get(token) ?? -1] ?? token)));
    return tokens;
  }

  /**
   * A long text whose pieces are short (a megabyte of digits: a million one-digit pieces, ~2 s to
   * pre-tokenize) may be over the budget long before the byte bound can tell. Its prefix is
   * pre-tokenized first: every piece is at least one token, and pieces are found by a left-to-right
   * regular expression looking a few characters ahead, so all but the last PROBE_SLACK pieces of the
   * prefix are pieces of the whole text. Throws OverBudget when those alone pass it.
   */
  private probe(preTokenize: PreTokenize, text: string, options?: { section_index?: number }): void {
    const room = this.budget - this.counted;
    const length = room + PROBE_SLACK * this.bounds.longestToken;
    if (text.length < 2 * length) return;
    const certain = preTokenize(text.slice(0, length), options).length - PROBE_SLACK;
    if (certain > room) throw new OverBudget(this.counted + certain);
  }

  /** The model step: the pre-tokenized pieces of one section of text -> token strings. */
  private encodePieces(pieces: string[]): string[] {
    const encodeChunk = (chunk: string[]) => (this.longWordModel ? this.longWordModel.encode!(chunk) : this.model(chunk));
    // Without a budget, or for a model that fuses unknown tokens across pieces: one call, as the library does.
    if (this.budget === Infinity || this.model.fuse_unk) return this.count(encodeChunk(pieces));
    const out: string[] = [];
    for (let start = 0; start < pieces.length; start += CHUNK) {
      const chunk = pieces.slice(start, start + CHUNK);
      const atLeast = this.counted + this.bounds.lowerBound(chunk);
      if (atLeast > this.budget) throw new OverBudget(atLeast);
      for (const token of this.count(encodeChunk(chunk))) out.push(token);
    }
    return out;
  }

  private count(tokens: string[]): string[] {
    this.counted += tokens.length;
    if (this.counted > this.budget) throw new OverBudget(this.counted);
    return tokens;
  }

  private table(): MergeTable | null {
    if (this.mergeTable === undefined) this.mergeTable = buildMergeTable(mergesOf(this.model)!, this.model.tokens_to_ids);
    return this.mergeTable;
  }
}

function restore(text: string, literals: Literals): string {
  let out = text;
  for (const [placeholder, literal] of literals) if (out.includes(placeholder)) out = out.split(placeholder).join(literal);
  return out;
}

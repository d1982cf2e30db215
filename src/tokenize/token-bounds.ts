/**
 * Lower bounds on the number of tokens a text encodes to, from the vocabulary alone, for the prompt
 * encoder's budget (prompt-encoder.ts, whose opening comment gives the reasoning): every token is a
 * vocabulary entry made of characters of the text it covers, so no token is longer than the longest
 * entry made of those characters alone. No bound pre-tokenizes or encodes the text.
 */

/** A pre-tokenizer's entry in tokenizer.json. */
export interface PreTokenizerConfig {
  type: string;
  pretokenizers?: PreTokenizerConfig[];
  behavior?: string;
  invert?: boolean;
}

/**
 * Words from this length on use long-word-bpe.ts (its table costs ~0.2 s to build, once), and are
 * bounded by the longest entry made of their own characters.
 */
export const LONG_WORD = 1024;
/** Bytes per block of byteBound: more than the longest vocabulary entry (128 bytes for Qwen's). */
const BLOCK = 64 * 1024;
/** The longest token made of a set of characters is looked up for sets of at most this many... */
const FEW_UNITS = 64;
/** ...at most this many times per encode for sets not seen before (~10 ms each). */
const MAX_SCANS = 8;

export class TokenBounds {
  /** Longest vocabulary entry, in code points. */
  readonly longestToken: number;
  /**
   * Byte-level BPE whose pieces keep every byte of the text as one known character: then a text of
   * n UTF-8 bytes is at least n / longestToken tokens, which refuses a huge text before pre-tokenizing it.
   */
  readonly byteLevel: boolean;
  /** Single characters that are vocabulary entries. */
  private readonly knownChars: Set<string>;
  /** longestWithin's results by set of code units. */
  private readonly longestBySet = new Map<string, number>();
  /** Vocabulary scans made since startEncode (longestMadeOf). */
  private scans = 0;

  constructor(private readonly vocab: string[], preTokenizer: PreTokenizerConfig | null | undefined) {
    let longest = 1;
    this.knownChars = new Set();
    for (const token of vocab) {
      if (typeof token !== 'string') continue;
      const length = codePoints(token);
      if (length > longest) longest = length;
      if (length === 1) this.knownChars.add(token);
    }
    this.longestToken = longest;
    this.byteLevel = keepsEveryByte(preTokenizer) && BYTE_LEVEL_ALPHABET.every((char) => this.knownChars.has(char));
  }

  /** A new encode: up to MAX_SCANS vocabulary scans again. */
  startEncode(): void {
    this.scans = 0;
  }

  /**
   * Fewest tokens the pieces can encode to: every token is a vocabulary entry of at most
   * `longestToken` characters and covers characters of one piece, so a run of known characters of
   * length n needs at least ceil(n / longestToken) of them. (Unknown characters may yield nothing.)
   */
  lowerBound(pieces: string[]): number {
    let bound = 0;
    for (const piece of pieces) {
      // A token of a piece is made of the piece's characters: for a long piece, the longest entry
      // made of those alone bounds far tighter (a megabyte of "a": 8, not 128; of one CJK character: 3).
      const longest = piece.length >= LONG_WORD ? this.longestWithin(piece) : this.longestToken;
      let run = 0;
      for (const char of piece) {
        if (this.knownChars.has(char)) run++;
        else {
          bound += Math.ceil(run / longest);
          run = 0;
        }
      }
      bound += Math.ceil(run / longest);
    }
    return bound;
  }

  /**
   * Fewest tokens a section of text can encode to, for byte-level BPE, before it is pre-tokenized.
   * Each UTF-8 byte becomes one character of a piece and every token is a run of those characters,
   * so a byte in block b (BLOCK bytes, more than any token is long) belongs to a token within blocks
   * b-1..b+1, made of their bytes alone: no longer than the longest vocabulary entry made of those.
   * A token of k characters counts 1/k for each, so the section is at least the sum over blocks of
   * (bytes of the block / that length) tokens. A megabyte of "a" is at least 125,000 tokens, of one
   * CJK character 333,333, found without pre-tokenizing; ordinary text (many distinct bytes) falls
   * back to the longest token of the vocabulary.
   */
  byteBound(text: string): number {
    const bytes = Buffer.from(text, 'utf8');
    const blocks = Math.ceil(bytes.length / BLOCK);
    const sets: number[][] = [];
    for (let b = 0; b < blocks; b++) {
      const present = new Uint8Array(256);
      const end = Math.min(bytes.length, (b + 1) * BLOCK);
      for (let i = b * BLOCK; i < end; i++) present[bytes[i]!] = 1;
      sets.push([...present.keys()].filter((byte) => present[byte]));
    }
    let bound = 0;
    for (let b = 0; b < blocks; b++) {
      const around = new Set([...(sets[b - 1] ?? []), ...sets[b]!, ...(sets[b + 1] ?? [])]);
      const longest = this.longestMadeOf(new Set([...around].map((byte) => BYTE_LEVEL_ALPHABET[byte]!.charCodeAt(0))));
      bound += (Math.min(bytes.length, (b + 1) * BLOCK) - b * BLOCK) / longest;
    }
    return Math.ceil(bound - 1e-9);
  }

  /** longestMadeOf over the code units of `piece`: no token of the piece can be longer. */
  private longestWithin(piece: string): number {
    const units = new Set<number>();
    for (let i = 0; i < piece.length; i++) units.add(piece.charCodeAt(i));
    return this.longestMadeOf(units);
  }

  /**
   * Length in code points of the longest vocabulary entry whose UTF-16 code units are all in
   * `units` (at least 1), or an upper bound of it. Worth knowing for a few distinct units (a run, a
   * repeated character); the longest entry of all serves for more. One pass over the vocabulary per
   * new set (~10 ms), at most MAX_SCANS per encode so that crafted text cannot make it slow; the
   * last few sets are remembered.
   */
  private longestMadeOf(units: ReadonlySet<number>): number {
    if (units.size > FEW_UNITS) return this.longestToken;
    const key = setKey(units);
    let longest = this.longestBySet.get(key);
    if (longest === undefined) {
      if (this.scans >= MAX_SCANS) return this.longestToken;
      this.scans++;
      longest = 1;
      for (const token of this.vocab) {
        if (typeof token !== 'string' || token.length <= longest) continue;
        let inside = true;
        for (let i = 0; i < token.length && inside; i++) inside = units.has(token.charCodeAt(i));
        if (inside) longest = Math.max(longest, codePoints(token));
      }
      if (this.longestBySet.size >= 16) this.longestBySet.delete(this.longestBySet.keys().next().value!);
      this.longestBySet.set(key, longest);
    }
    return longest;
  }
}

/**
 * Whether the pre-tokenizer maps every byte of its input to one character of its pieces: a byte-level
 * step, and no step that drops text (Split with invert or behavior "Removed", Whitespace...).
 */
function keepsEveryByte(config: PreTokenizerConfig | null | undefined): boolean {
  if (!config) return false;
  const steps = config.type === 'Sequence' ? (config.pretokenizers ?? []) : [config];
  const keepsText = (step: PreTokenizerConfig) =>
    step.type === 'ByteLevel' || step.type === 'Digits' ||
    ((step.type === 'Split' || step.type === 'Punctuation') && !step.invert && step.behavior?.toLowerCase() !== 'removed');
  return steps.some((step) => step.type === 'ByteLevel') && steps.every(keepsText);
}

/** The 256 characters GPT-2's byte-level encoding writes bytes as (bytes_to_unicode). */
export const BYTE_LEVEL_ALPHABET: readonly string[] = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let shifted = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCharCode(printable(b) ? b : 256 + shifted++));
})();

const setKey = (units: ReadonlySet<number>) => [...units].sort((a, b) => a - b).join(',');

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

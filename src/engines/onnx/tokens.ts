/**
 * Tokenizing and decoding with a model's own tokenizer, for the tokenize and detokenize routes. Runs
 * in a worker thread (the model's tokenizer-only worker).
 *
 * transformers.js gives no offset mapping, so a piece's span in the input is found by searching the
 * piece's own text forward from the previous piece's end (case-insensitively, a WordPiece `##`
 * dropped); a piece that cannot be found there (a normalizer that changed the text, a byte of a
 * multi-byte character) gets an empty span at the current position, as added special tokens do.
 */
import type { TextTokenizer } from '../../tokenize/text-tokenizer.js';
import { CoreError } from '../../core/errors.js';
import type { TokenizeResult, TokenPiece } from '../../core/types.js';

interface Vocabulary {
  /** id -> the token's spelling in the vocabulary. */
  spelling: Map<number, string>;
  /** One past the largest id the tokenizer knows. */
  size: number;
  special: Set<number>;
}

const vocabularies = new WeakMap<TextTokenizer, Vocabulary>();

/** The tokenizer's vocabulary, inverted once per worker (the first request pays it). */
function vocabularyOf(tokenizer: TextTokenizer): Vocabulary {
  let vocabulary = vocabularies.get(tokenizer);
  if (!vocabulary) {
    const spelling = new Map<number, string>();
    let size = 0;
    for (const [token, id] of tokenizer.get_vocab()) {
      spelling.set(id, token);
      if (id >= size) size = id + 1;
    }
    vocabulary = { spelling, size, special: new Set(tokenizer.all_special_ids) };
    vocabularies.set(tokenizer, vocabulary);
  }
  return vocabulary;
}

/** `text`'s tokens; with `pieces`, each token's text, spelling and span in `text`. */
export function tokenizeText(tokenizer: TextTokenizer, text: string, options: { addSpecial: boolean; pieces: boolean }): TokenizeResult {
  const tokens = tokenizer.encode(text, { add_special_tokens: options.addSpecial });
  return options.pieces ? { tokens, pieces: piecesOf(tokenizer, tokens, text) } : { tokens };
}

/** Each token's text, spelling and (when the source text is given) its span in it. */
export function piecesOf(tokenizer: TextTokenizer, ids: number[], source?: string): TokenPiece[] {
  const vocabulary = vocabularyOf(tokenizer);
  const haystack = source?.toLowerCase();
  let cursor = 0;
  return ids.map((id) => {
    const text = tokenizer.decode([id], { skip_special_tokens: false });
    const token = vocabulary.spelling.get(id) ?? text;
    const special = vocabulary.special.has(id);
    let start = cursor;
    let stop = cursor;
    const needle = (token.startsWith('##') ? token.slice(2) : text.trim()).toLowerCase();
    // toLowerCase keeps UTF-16 lengths for the scripts this matters for; a span is checked against the source.
    if (haystack !== undefined && !special && needle !== '') {
      const at = haystack.indexOf(needle, cursor);
      if (at >= 0 && haystack.length === source!.length) {
        start = at;
        stop = at + needle.length;
        cursor = stop;
      }
    }
    return { id, text, token, special, start, stop };
  });
}

/** The text of `ids`; an id the tokenizer does not know is a 400 naming it. */
export function detokenize(tokenizer: TextTokenizer, ids: number[], skipSpecial: boolean): string {
  const { size } = vocabularyOf(tokenizer);
  const bad = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= size);
  if (bad >= 0) {
    throw new CoreError('token_out_of_vocabulary', `Token ${bad} (${ids[bad]}) is outside this model's vocabulary (0..${size - 1}).`, { item: bad, limit: size });
  }
  // transformers.js throws on an empty list; no tokens are no text.
  return ids.length === 0 ? '' : tokenizer.decode(ids, { skip_special_tokens: skipSpecial });
}

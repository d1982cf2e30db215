/**
 * A test cross-encoder: a BERT-shaped sequence classifier with one label (as ms-marco-MiniLM and
 * bge-reranker export), random weights, and a real WordPiece tokenizer (tokenizer.json with BERT's
 * normalizer, pre-tokenizer, pair post-processor and token types) over a small vocabulary whose
 * letters and `##` pieces let any English word be split. Its scores mean nothing; the tests hold the
 * server's scores equal to transformers.js running the same export in process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bertConfig, buildBertEncoder, type BertShape } from '../onnx/bert-encoder.js';
import { writeJson, type BuildContext } from './build-context.js';
import { writeWordTokenizer } from './glove-embedder.js';

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;

const WORDS = (
  'the of and to a in is it you that he was for on are with as his they be at one have this from or had by not word but what some we can ' +
  'out other were all there when up use your how said an each she which do their time if will way about many then them write would like so ' +
  'these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first ' +
  'who may down side been now find cat cats dog dogs sleep sleeps sofa couch kitten nap naps where market stock bread bake minutes sun sunny ' +
  'window rug mat sat sit sitting rested football team won final bank rates quantum computer . , ? !'
).split(' ');
const LETTERS = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');

/** Small enough to build in a second and to run in milliseconds; BERT's structure throughout. */
export const TEST_RERANKER_SHAPE: BertShape = {
  vocabSize: SPECIALS.length + WORDS.length + 2 * LETTERS.length, hiddenSize: 32, numLayers: 2, numHeads: 4, intermediateSize: 64,
  maxPositions: 128, typeVocabSize: 2, layerNormEps: 1e-12,
};

export function buildTestReranker(ctx: BuildContext): void {
  const shape = TEST_RERANKER_SHAPE;
  fs.mkdirSync(path.join(ctx.dir, 'onnx'), { recursive: true });
  writeWordTokenizer(ctx.dir, [...WORDS, ...LETTERS, ...LETTERS.map((l) => `##${l}`)], { specials: SPECIALS, contextLength: shape.maxPositions, clsSep: { cls: '[CLS]', sep: '[SEP]' } });
  ctx.progress('building the cross-encoder graph');
  fs.writeFileSync(path.join(ctx.dir, 'onnx', 'model.onnx'), buildBertEncoder(shape, 0x7e57, 'classifier'));
  writeJson(path.join(ctx.dir, 'config.json'), {
    _comment: 'Random-weight BERT cross-encoder built by local-inference-server (scripts/builders/bundled/test-reranker.ts)',
    model_type: 'bert',
    architectures: ['BertForSequenceClassification'],
    id2label: { 0: 'LABEL_0' },
    label2id: { LABEL_0: 0 },
    ...bertConfig(shape),
  });
}

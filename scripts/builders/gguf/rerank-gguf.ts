/**
 * A GGUF cross-encoder for the tests: BERT as llama.cpp runs it (`bert`, pooling type rank: the
 * [CLS] row through a dense layer and tanh, then one output logit, as BertForSequenceClassification
 * and llama.cpp's rank head compute it), random weights, and a WordPiece vocabulary in its metadata
 * only (tokenizer.ggml.model `bert`, as llama.cpp's converter writes one: no tokenizer.json beside
 * it, so the server rebuilds its tokenizer from the metadata). Its scores mean nothing; the tests
 * hold the server's scores equal to node-llama-cpp ranking the same pairs directly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SeededRandom } from '../onnx/graph-builder.js';
import { writeGguf, type GgufTensor, type GgufValue } from './gguf-writer.js';

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
const WORDS = (
  'the a of and to in is on it was for with as at by cat cats dog dogs sat sleeps sofa mat rug kitten window sun market stock bread bake ' +
  'football team won final bank rates quantum computer where what who . , ? !'
).split(' ');
const LETTERS = 'abcdefghijklmnopqrstuvwxyz0123456789'.split('');
const SHAPE = { hidden: 32, layers: 2, heads: 4, ff: 64, context: 128 } as const;

/** Writes `<dir>/<name>.gguf`. */
export function buildRerankGguf(dir: string, name: string): void {
  fs.mkdirSync(dir, { recursive: true });
  // Each once: llama.cpp refuses a vocabulary with a duplicate.
  const tokens = [...SPECIALS, ...new Set([...WORDS, ...LETTERS, ...LETTERS.map((l) => `##${l}`)])];
  const { hidden: H, ff: F } = SHAPE;
  const rng = new SeededRandom(0x6e7a);
  const tensors: GgufTensor[] = [];
  const add = (name: string, shape: number[], data: Float32Array) => tensors.push({ name, shape, type: 'F32', data });
  const normal = (n: number, std = 0.02) => rng.normals(n, std);
  const ones = (n: number) => new Float32Array(n).fill(1);
  const zeros = (n: number) => new Float32Array(n);
  add('token_embd.weight', [tokens.length, H], normal(tokens.length * H));
  add('token_types.weight', [2, H], normal(2 * H));
  add('position_embd.weight', [SHAPE.context, H], normal(SHAPE.context * H));
  add('token_embd_norm.weight', [H], ones(H));
  add('token_embd_norm.bias', [H], zeros(H));
  for (let l = 0; l < SHAPE.layers; l++) {
    for (const part of ['attn_q', 'attn_k', 'attn_v', 'attn_output']) {
      add(`blk.${l}.${part}.weight`, [H, H], normal(H * H));
      add(`blk.${l}.${part}.bias`, [H], zeros(H));
    }
    add(`blk.${l}.attn_output_norm.weight`, [H], ones(H));
    add(`blk.${l}.attn_output_norm.bias`, [H], zeros(H));
    add(`blk.${l}.ffn_up.weight`, [F, H], normal(F * H));
    add(`blk.${l}.ffn_up.bias`, [F], zeros(F));
    add(`blk.${l}.ffn_down.weight`, [H, F], normal(H * F));
    add(`blk.${l}.ffn_down.bias`, [H], zeros(H));
    add(`blk.${l}.layer_output_norm.weight`, [H], ones(H));
    add(`blk.${l}.layer_output_norm.bias`, [H], zeros(H));
  }
  // The head's weights are N(0, 1), as in the ONNX test reranker: with random weights the [CLS] row
  // varies little between inputs, and a small head would score every pair alike.
  add('cls.weight', [H, H], normal(H * H, 1));
  add('cls.bias', [H], zeros(H));
  add('cls.output.weight', [1, H], normal(H, 1));
  add('cls.output.bias', [1], zeros(1));
  const id = (token: string) => tokens.indexOf(token);
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: 'bert' },
    'general.name': { type: 'string', value: name },
    'bert.context_length': { type: 'u32', value: SHAPE.context },
    'bert.embedding_length': { type: 'u32', value: H },
    'bert.feed_forward_length': { type: 'u32', value: F },
    'bert.block_count': { type: 'u32', value: SHAPE.layers },
    'bert.attention.head_count': { type: 'u32', value: SHAPE.heads },
    'bert.attention.layer_norm_epsilon': { type: 'f32', value: 1e-12 },
    'bert.attention.causal': { type: 'bool', value: false },
    'bert.pooling_type': { type: 'u32', value: 4 },
    'tokenizer.ggml.model': { type: 'string', value: 'bert' },
    // llama.cpp's WordPiece vocabulary as its converter writes it: a word's first piece marked with
    // U+2581 (the phantom space), a continuation without its ##, specials as they are.
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens.map((t) => ((SPECIALS as readonly string[]).includes(t) ? t : t.startsWith('##') ? t.slice(2) : `\u2581${t}`)) },
    'tokenizer.ggml.token_type': { type: 'i32s', value: tokens.map((t) => ((SPECIALS as readonly string[]).includes(t) ? 3 : 1)) },
    'tokenizer.ggml.token_type_count': { type: 'u32', value: 2 },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: id('[CLS]') },
    'tokenizer.ggml.seperator_token_id': { type: 'u32', value: id('[SEP]') },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: id('[UNK]') },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: id('[PAD]') },
    'tokenizer.ggml.mask_token_id': { type: 'u32', value: id('[MASK]') },
  };
  writeGguf(path.join(dir, `${name}.gguf`), metadata, tensors.map(({ data: _data, ...info }) => info), tensors);
}

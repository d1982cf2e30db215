/**
 * Lets go of the parsed tokenizer.json once the tokenizer is built from it.
 *
 * transformers.js 4.x keeps the whole parsed file three times over by reference (the
 * PreTrainedTokenizer's `_tokenizerJSON`, the inner Tokenizer's `tokenizer`, the model's `config`),
 * though only the constructors read it: its vocabulary object and merge list then live for the
 * tokenizer's life beside the Maps built from them. And a BPE model keeps its merges as an array of
 * pairs, which encoding never reads (it looks pairs up in `bpe_ranks`). Measured on Qwen3's
 * tokenizer (151k tokens, 151k merges): 47.6 MiB of V8 heap with them, 31.1 without; the bundled
 * GloVe word tokenizer (352k words): 40.7, 28.6. Tokens are unchanged: only objects nothing reads go.
 *
 * Reaches into the library's objects (as prompt-encoder.ts does); anything of another shape is left as it is.
 */
import type { TextTokenizer } from './text-tokenizer.js';

interface Inner {
  tokenizer?: { model?: unknown };
  model?: { config?: Record<string, unknown>; merges?: unknown; bpe_ranks?: unknown };
}

export function dropTokenizerSource(tokenizer: TextTokenizer): void {
  const outer = tokenizer as unknown as { _tokenizerJSON?: unknown; _tokenizer?: Inner };
  const inner = outer._tokenizer;
  if (!inner?.model || typeof inner.tokenizer !== 'object' || inner.tokenizer === null) return;
  outer._tokenizerJSON = undefined;
  // The other sections (normalizer, pre_tokenizer, added tokens...) are small and stay readable.
  const json = inner.tokenizer as { model?: { type?: unknown } };
  inner.tokenizer = { ...json, model: { type: json.model?.type } };
  const model = inner.model;
  if (model.config) model.config = { ...model.config, vocab: undefined, merges: undefined };
  // prompt-encoder.ts rebuilds the pairs from bpe_ranks when it needs them (mergesOf).
  if (model.bpe_ranks instanceof Map && Array.isArray(model.merges)) model.merges = undefined;
}

/**
 * A BPE model's merges in rank order: its `merges` array, or, once dropped, the pairs read back from
 * `bpe_ranks` (keys JSON.stringify([a, b]), values ranks). A pair the file lists twice has one entry,
 * at its last rank, as the library encodes it; the earlier rank's slot gets a later pair, whose own
 * rank then overrides it (last wins, as in buildMergeTable), so no slot is empty.
 */
export function mergesOf(model: { merges?: Array<[string, string]>; bpe_ranks?: Map<string, number> }): Array<[string, string]> | undefined {
  if (Array.isArray(model.merges)) return model.merges;
  if (!(model.bpe_ranks instanceof Map)) return undefined;
  const merges: Array<[string, string] | undefined> = [];
  for (const [key, rank] of model.bpe_ranks) merges[rank] = JSON.parse(key) as [string, string];
  for (let i = merges.length - 2; i >= 0; i--) merges[i] ??= merges[i + 1];
  return merges as Array<[string, string]>;
}

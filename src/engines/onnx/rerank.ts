/**
 * A cross-encoder (…ForSequenceClassification with one label) scoring (query, document) pairs in a
 * worker thread. Each pair is encoded as the tokenizer's own pair (`[CLS] q [SEP] d [SEP]`, with
 * token_type_ids where the model takes them); only the document side is cut to the model's length:
 * a query that leaves no room for a document is refused, never cut. Pairs are sorted by length and
 * cut into forward passes whose padded size stays within a token budget, as embeddings are (the pairs
 * of every request the main thread's batcher gathered together); padding is masked, so a score does
 * not depend on its batch.
 */
import { Tensor, type PreTrainedTokenizer } from '@huggingface/transformers';
import { CoreError, toCoreError } from '../../core/errors.js';
import { fitDocument, type RankItemResult } from '../rank-fit.js';
import type { RerankRequest, Truncate } from '../../core/types.js';
import type { LoadedModel } from './loaded-model.js';

export interface RerankOptions {
  /** Padded tokens per forward pass (rows x longest row). */
  maxBatchTokens: number;
  /** The server's default for a request that does not say whether to cut an over-long pair. */
  truncate: boolean;
}

interface Pair {
  /** The request (of the gathered batch) and the document the pair is. */
  item: number;
  index: number;
  ids: number[];
  types: number[];
}


/**
 * Scores the pairs of several requests at once: a request whose pairs cannot be encoded (a document
 * too long, a query with no room) fails alone; the pairs of the others share forward passes.
 */
export async function rerankPairs(loaded: LoadedModel, items: Array<Omit<RerankRequest, 'model'>>, options: RerankOptions): Promise<RankItemResult[]> {
  const results: RankItemResult[] = new Array(items.length);
  const all: Pair[] = [];
  const logits = items.map((request) => new Array<number>(request.documents.length));
  items.forEach((request, item) => {
    try {
      const encode = pairEncoder(loaded.tokenizer, request.query);
      all.push(...request.documents.map((document, index) => ({ item, ...encodePair(loaded, request, encode(document), index, request.truncate ?? options.truncate) })));
    } catch (error) {
      results[item] = { ok: false, error: toCoreError(error).toData() };
    }
  });
  const sorted = all.sort((a, b) => a.ids.length - b.ids.length);
  for (let start = 0; start < sorted.length; ) {
    let end = start + 1;
    while (end < sorted.length && (end + 1 - start) * sorted[end]!.ids.length <= options.maxBatchTokens) end++;
    const chunk = sorted.slice(start, end);
    const scores = await forward(loaded, chunk);
    chunk.forEach((pair, i) => (logits[pair.item]![pair.index] = scores[i]!));
    start = end;
  }
  const tokens = new Array<number>(items.length).fill(0);
  for (const pair of all) tokens[pair.item]! += pair.ids.length;
  items.forEach((_, item) => (results[item] ??= { ok: true, value: { logits: logits[item]!, promptTokens: tokens[item]! } }));
  return results;
}

/** A pair as the tokenizer encodes it: ids, token types, and how many of the ids are the document's own. */
interface EncodedPair {
  ids: number[];
  types: number[];
  own: number;
}

/**
 * The pieces of the tokenizer library inside transformers.js's tokenizer (@huggingface/tokenizers'
 * Tokenizer), which its own pair encoding runs: text to tokens, the post-processor that joins a pair
 * and gives its token types, and tokens to ids. Not public API: pairEncoder falls back to the
 * public call when they are not there.
 */
interface TokenizerParts {
  encode_text(text: string): string[] | null;
  post_processor: ((tokens: string[], pair: string[] | null, addSpecial: boolean) => { tokens: string[]; token_type_ids?: number[] }) | null;
  added_tokens_map: Map<string, { id: number }>;
  model: { tokens_to_ids: Map<string, number>; unk_token_id?: number };
}

const partsOf = (tokenizer: PreTrainedTokenizer): TokenizerParts | undefined => {
  const inner = (tokenizer as unknown as { _tokenizer?: Partial<TokenizerParts> })._tokenizer;
  return inner && typeof inner.encode_text === 'function' && inner.added_tokens_map instanceof Map && inner.model?.tokens_to_ids instanceof Map && 'post_processor' in inner
    ? (inner as TokenizerParts)
    : undefined;
};

/**
 * Encodes (query, document) pairs of one query exactly as `tokenizer(query, { text_pair })` does
 * (the same normalizer, pre-tokenizer, model and post-processor calls), but with the query's text
 * encoded once for all its documents and each document once (the public call encodes the query
 * again for every pair, and the document's own count took a second encoding): tokenizing was most
 * of a rerank task's time on a small cross-encoder (docs/benchmarks.md, Rerank).
 */
export function pairEncoder(tokenizer: PreTrainedTokenizer, query: string): (document: string) => EncodedPair {
  const parts = partsOf(tokenizer);
  if (!parts) {
    return (document) => {
      const encoded = tokenizer._call(query, { text_pair: document, return_token_type_ids: true, return_tensor: false }) as unknown as { input_ids: number[]; token_type_ids?: number[] };
      return { ids: encoded.input_ids, types: encoded.token_type_ids ?? new Array<number>(encoded.input_ids.length).fill(0), own: tokenizer.encode(document, { add_special_tokens: false }).length };
    };
  }
  const queryTokens = parts.encode_text(query) ?? [];
  const idOf = (token: string) => parts.added_tokens_map.get(token)?.id ?? parts.model.tokens_to_ids.get(token) ?? parts.model.unk_token_id ?? 0;
  return (document) => {
    const documentTokens = parts.encode_text(document) ?? [];
    const joined = parts.post_processor ? parts.post_processor(queryTokens, documentTokens, true) : { tokens: [...queryTokens, ...documentTokens] };
    const ids = joined.tokens.map(idOf);
    return { ids, types: joined.token_type_ids ?? new Array<number>(ids.length).fill(0), own: documentTokens.length };
  };
}

/**
 * The pair's ids and token types, the document cut to `maxTokens` (its end) and to the context (its
 * end, or with `truncate: 'left'` its start, as TEI's left truncation). The encoded pair ends with one
 * special token (BERT's [SEP], XLM-R's </s>): the document's tokens are those right before it.
 */
function encodePair(loaded: LoadedModel, request: Omit<RerankRequest, 'model'>, encoded: EncodedPair, index: number, truncate: Truncate): Omit<Pair, 'item'> {
  const { ids, types, own } = encoded;
  const fixed = ids.length - own;
  const limit = loaded.info.contextLength;
  const { from, keep } = fitDocument({ index, fixed, own, limit, ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}), truncate });
  if (keep === own) return { index, ids, types };
  // The document is ids[start, start + own), right before the pair's last special token.
  const start = ids.length - 1 - own;
  const cutOf = <T>(all: T[]) => [...all.slice(0, start), ...all.slice(start + from, start + from + keep), all.at(-1)!];
  return { index, ids: cutOf(ids), types: cutOf(types) };
}

/** One forward pass over `pairs`: each pair's logit (the single label's). */
async function forward(loaded: LoadedModel, pairs: Pair[]): Promise<number[]> {
  const width = Math.max(...pairs.map((p) => p.ids.length));
  const padId = BigInt((loaded.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0);
  const ids = new BigInt64Array(pairs.length * width).fill(padId);
  const mask = new BigInt64Array(pairs.length * width);
  const types = new BigInt64Array(pairs.length * width);
  pairs.forEach((pair, r) =>
    pair.ids.forEach((id, c) => {
      ids[r * width + c] = BigInt(id);
      mask[r * width + c] = 1n;
      types[r * width + c] = BigInt(pair.types[c] ?? 0);
    }),
  );
  const feeds: Record<string, Tensor> = {
    input_ids: new Tensor('int64', ids, [pairs.length, width]),
    attention_mask: new Tensor('int64', mask, [pairs.length, width]),
  };
  if (loaded.inputNames.includes('token_type_ids')) feeds.token_type_ids = new Tensor('int64', types, [pairs.length, width]);
  const output = await loaded.model(feeds);
  const logits: Tensor | undefined = output.logits;
  if (!logits) throw new CoreError('internal', 'the rerank model has no logits output');
  const data = logits.data as Float32Array;
  const labels = logits.dims.at(-1) ?? 1;
  return pairs.map((_, r) => data[r * labels]!);
}

/**
 * A cross-encoder (…ForSequenceClassification with one label) scoring (query, document) pairs in a
 * worker thread. Each pair is encoded as the tokenizer's own pair (`[CLS] q [SEP] d [SEP]`, with
 * token_type_ids where the model takes them); only the document side is cut to the model's length:
 * a query that leaves no room for a document is refused, never cut. Pairs are sorted by length and
 * cut into forward passes whose padded size stays within a token budget, as embeddings are (the pairs
 * of every request the main thread's batcher gathered together); padding is masked, so a score does
 * not depend on its batch.
 */
import { Tensor } from '@huggingface/transformers';
import { CoreError, toCoreError, type CoreErrorData } from '../../core/errors.js';
import type { RerankRequest, RerankResult } from '../../core/types.js';
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

type ItemResult = { ok: true; value: RerankResult } | { ok: false; error: CoreErrorData };

/**
 * Scores the pairs of several requests at once: a request whose pairs cannot be encoded (a document
 * too long, a query with no room) fails alone; the pairs of the others share forward passes.
 */
export async function rerankPairs(loaded: LoadedModel, items: Array<Omit<RerankRequest, 'model'>>, options: RerankOptions): Promise<ItemResult[]> {
  const results: ItemResult[] = new Array(items.length);
  const all: Pair[] = [];
  const logits = items.map((request) => new Array<number>(request.documents.length));
  items.forEach((request, item) => {
    try {
      all.push(...request.documents.map((document, index) => ({ item, ...encodePair(loaded, request, document, index, request.truncate ?? options.truncate) })));
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

/**
 * The pair's ids and token types, the document cut to `maxTokens` and to the context. The encoded
 * pair ends with one special token (BERT's [SEP], XLM-R's </s>): the document's tokens are those
 * right before it, so a cut removes them there.
 */
function encodePair(loaded: LoadedModel, request: Omit<RerankRequest, 'model'>, document: string, index: number, truncate: boolean): Omit<Pair, 'item'> {
  const { tokenizer, info } = loaded;
  const encoded = tokenizer._call(request.query, { text_pair: document, return_token_type_ids: true, return_tensor: false }) as unknown as { input_ids: number[]; token_type_ids?: number[] };
  let ids = encoded.input_ids;
  let types = encoded.token_type_ids ?? new Array<number>(ids.length).fill(0);
  const own = tokenizer.encode(document, { add_special_tokens: false }).length;
  if (own === 0) throw new CoreError('nothing_to_embed', `Input ${index} has no tokens to rank (it is empty or only whitespace for this model's tokenizer).`, { item: index, reason: 'no_tokens' });
  const fixed = ids.length - own;
  if (fixed + 1 > info.contextLength) {
    throw new CoreError('input_too_long', `query is ${fixed} tokens with the pair's special tokens, which leaves no room for a document in the model's context of ${info.contextLength}; shorten the query.`, {
      limit: info.contextLength,
      requested: fixed,
    });
  }
  let keep = Math.min(own, request.maxTokens ?? own);
  if (fixed + keep > info.contextLength) {
    if (!truncate) {
      throw new CoreError('input_too_long', `Input ${index} is ${fixed + keep} tokens with the query, more than the model's context of ${info.contextLength}.`, {
        item: index,
        limit: info.contextLength,
        requested: fixed + keep,
      });
    }
    keep = info.contextLength - fixed;
  }
  if (keep < own) {
    const cut = own - keep;
    ids = [...ids.slice(0, ids.length - 1 - cut), ids.at(-1)!];
    types = [...types.slice(0, types.length - 1 - cut), types.at(-1)!];
  }
  return { index, ids, types };
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

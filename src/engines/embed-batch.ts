/**
 * Sentence embeddings in a worker thread, for a batch of requests at once (the main thread's
 * batcher gathers concurrent requests into one task), whatever engine computes the vectors. Every
 * request is validated on its own: one that fails gets its own error and the others in the batch
 * are embedded as usual.
 *
 * All inputs of all requests are tokenized, sorted by length and cut into forward passes whose
 * padded size (rows x longest row) stays within a token budget; the engine pools each row's token
 * vectors (./onnx/embed.ts: mean over real tokens, or CLS, padding masked out; ./llama/embed.ts:
 * the GGUF's own pooling); the vectors are optionally shortened (Matryoshka models) and
 * L2-normalised here, so a vector does not depend on which batch it was computed in.
 */
import { CoreError, toCoreError } from '../core/errors.js';
import type { EmbedBatchItem, EmbedInput, EmbedItemResult, Truncate } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { TextTokenizer } from '../tokenize/text-tokenizer.js';

/** An embedding model as the batch sees it: its tokenizer, its vectors' width, and the engine's pooled forward pass. */
export interface Embedder {
  info: ModelInfo;
  tokenizer: TextTokenizer;
  /** Width of the vectors (null: unknown, no `dimensions` check). */
  width: number | null;
  /** Ids at or above it are refused (undefined: no check). */
  vocabSize?: number;
  /** One pooled vector per row of token ids. */
  forward(batch: number[][]): Promise<Float32Array[]>;
}

export interface EmbedBatchOptions {
  /** Padded tokens per forward pass (rows x longest row). */
  maxBatchTokens: number;
  /** Cut inputs longer than the context instead of refusing them. */
  truncate: boolean;
}

interface Row {
  item: number;
  index: number;
  ids: number[];
}

export async function embedBatch(loaded: Embedder, items: EmbedBatchItem[], options: EmbedBatchOptions): Promise<EmbedItemResult[]> {
  const results: EmbedItemResult[] = new Array(items.length);
  const rows: Row[] = [];
  const tokenized: number[][][] = [];
  items.forEach((item, i) => {
    try {
      tokenized[i] = prepare(loaded, item, item.truncate ?? options.truncate);
      tokenized[i]!.forEach((ids, index) => rows.push({ item: i, index, ids }));
    } catch (error) {
      results[i] = { ok: false, error: toCoreError(error).toData() };
    }
  });

  const vectors: Float32Array[][] = items.map((item) => new Array(item.inputs.length));
  rows.sort((a, b) => a.ids.length - b.ids.length);
  for (const chunk of chunks(rows, options.maxBatchTokens)) {
    const pooled = await loaded.forward(chunk.map((r) => r.ids));
    chunk.forEach((row, r) => (vectors[row.item]![row.index] = pooled[r]!));
  }

  items.forEach((item, i) => {
    if (results[i]) return;
    try {
      const finished = vectors[i]!.map((v, index) => finish(v, { dimensions: item.dimensions, normalize: item.normalize ?? loaded.info.normalize }, index));
      results[i] = { ok: true, vectors: finished, promptTokens: tokenized[i]!.reduce((sum, ids) => sum + ids.length, 0) };
    } catch (error) {
      results[i] = { ok: false, error: toCoreError(error).toData() };
    }
  });
  return results;
}

/** Tokenizes and checks one request's inputs; throws a 400 naming the input at fault. */
function prepare(loaded: Embedder, item: EmbedBatchItem, truncate: Truncate): number[][] {
  const { info, tokenizer } = loaded;
  if (item.dimensions !== undefined) {
    const width = loaded.width ?? 0;
    if (item.dimensions > width || (!info.matryoshka && item.dimensions !== width)) {
      throw new CoreError(
        'dimensions_unsupported',
        `The model \`${info.id}\` produces ${width}-dimensional vectors${info.matryoshka ? '' : ' and cannot shorten them'}; ${item.dimensions} were asked for.`,
        { model: info.id, limit: width, requested: item.dimensions, shortenable: info.matryoshka },
      );
    }
  }
  const { vocabSize } = loaded;
  return item.inputs.map((input: EmbedInput, index) => {
    let ids = typeof input === 'string' ? tokenizer.encode(info.prefix + input) : input;
    if (vocabSize !== undefined && ids.some((id) => id >= vocabSize)) {
      throw new CoreError('token_out_of_vocabulary', `Input ${index} holds a token id outside this model's vocabulary (0..${vocabSize - 1}).`, { item: index, limit: vocabSize });
    }
    // A request's own cap (a rerank's max_tokens_per_doc) cuts without asking; the context only when truncating.
    if (item.maxTokens !== undefined && ids.length > item.maxTokens && item.maxTokens <= info.contextLength) ids = ids.slice(0, item.maxTokens);
    if (ids.length > info.contextLength) {
      if (!truncate) {
        throw new CoreError('input_too_long', `Input ${index} is ${ids.length} tokens, more than the model's context of ${info.contextLength}.`, {
          item: index,
          limit: info.contextLength,
          requested: ids.length,
        });
      }
      ids = cutText(tokenizer, typeof input === 'string' ? info.prefix + input : null, ids, info.contextLength, truncate === 'left' ? 'start' : 'end');
    }
    if (ids.length === 0) {
      throw new CoreError('nothing_to_embed', `Input ${index} has no tokens to embed (it is empty or only whitespace for this model's tokenizer).`, { item: index, reason: 'no_tokens' });
    }
    return ids;
  });
}

/**
 * `ids` cut to `limit` by removing the text's last tokens (`end`, TEI's default and the tokenizers'
 * own truncation) or its first (`start`, TEI's left truncation), the special tokens the tokenizer put
 * around the text kept (found by encoding the text without them). Token ids given as input (`text`
 * null) are cut as they are.
 */
function cutText(tokenizer: TextTokenizer, text: string | null, ids: number[], limit: number, side: 'start' | 'end'): number[] {
  const plain = text === null ? ids : tokenizer.encode(text, { add_special_tokens: false });
  let lead = 0;
  while (lead + plain.length <= ids.length && !plain.every((id, i) => ids[lead + i] === id)) lead++;
  const tail = ids.length - lead - plain.length;
  const room = limit - lead - tail;
  if (tail < 0 || room <= 0) return side === 'start' ? ids.slice(ids.length - limit) : ids.slice(0, limit);
  const kept = side === 'start' ? plain.slice(plain.length - room) : plain.slice(0, room);
  return [...ids.slice(0, lead), ...kept, ...ids.slice(ids.length - tail)];
}

/** Consecutive runs of length-sorted rows whose padded size fits the budget (at least one row each). */
function* chunks(rows: Row[], maxBatchTokens: number): Generator<Row[]> {
  let start = 0;
  while (start < rows.length) {
    let end = start + 1;
    // Rows are sorted, so the padded width of rows[start..end) is the length of rows[end - 1].
    while (end < rows.length && (end + 1 - start) * rows[end]!.ids.length <= maxBatchTokens) end++;
    yield rows.slice(start, end);
    start = end;
  }
}

/** Shortens (Matryoshka) and L2-normalises; refuses a vector with nothing in it rather than returning NaN or zeros. */
function finish(pooled: Float32Array, options: { dimensions: number | undefined; normalize: boolean }, index: number): Float32Array {
  const { dimensions } = options;
  const vector = dimensions !== undefined && dimensions < pooled.length ? pooled.slice(0, dimensions) : pooled;
  if (!options.normalize) return vector;
  let sum = 0;
  for (const v of vector) sum += v * v;
  const norm = Math.sqrt(sum);
  if (!(norm > 0) || !Number.isFinite(norm)) {
    throw new CoreError('nothing_to_embed', `Input ${index} contains no token this model knows, so it has no embedding.`, { item: index, reason: 'no_known_token' });
  }
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

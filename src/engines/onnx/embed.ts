/**
 * Sentence embeddings in a worker thread, for a batch of requests at once (the main thread's
 * batcher gathers concurrent requests into one task). Every request is validated on its own: one
 * that fails gets its own error and the others in the batch are embedded as usual.
 *
 * All inputs of all requests are tokenized, sorted by length and cut into forward passes whose
 * padded size (rows x longest row) stays within a token budget; token vectors are pooled (mean over
 * real tokens, or CLS), optionally shortened (Matryoshka models), and L2-normalised. Padding is
 * masked out, so a vector does not depend on which batch it was computed in.
 */
import { Tensor } from '@huggingface/transformers';
import { CoreError, toCoreError } from '../../core/errors.js';
import type { EmbedBatchItem, EmbedInput, EmbedItemResult } from '../../core/types.js';
import type { LoadedModel } from './loaded-model.js';

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

export async function embedBatch(loaded: LoadedModel, items: EmbedBatchItem[], options: EmbedBatchOptions): Promise<EmbedItemResult[]> {
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
    const pooled = await forward(loaded, chunk.map((r) => r.ids));
    chunk.forEach((row, r) => (vectors[row.item]![row.index] = pooled[r]!));
  }

  items.forEach((item, i) => {
    if (results[i]) return;
    try {
      const finished = vectors[i]!.map((v, index) => finish(loaded, v, { dimensions: item.dimensions, normalize: item.normalize ?? loaded.info.normalize }, index));
      results[i] = { ok: true, vectors: finished, promptTokens: tokenized[i]!.reduce((sum, ids) => sum + ids.length, 0) };
    } catch (error) {
      results[i] = { ok: false, error: toCoreError(error).toData() };
    }
  });
  return results;
}

/** Tokenizes and checks one request's inputs; throws a 400 naming the input at fault. */
function prepare(loaded: LoadedModel, item: EmbedBatchItem, truncate: boolean): number[][] {
  const { info, tokenizer } = loaded;
  if (item.dimensions !== undefined) {
    const width = loaded.hiddenSize ?? 0;
    if (item.dimensions > width || (!info.matryoshka && item.dimensions !== width)) {
      throw new CoreError(
        'dimensions_unsupported',
        `The model \`${info.id}\` produces ${width}-dimensional vectors${info.matryoshka ? '' : ' and cannot shorten them'}; ${item.dimensions} were asked for.`,
        { model: info.id, limit: width, requested: item.dimensions, shortenable: info.matryoshka },
      );
    }
  }
  const vocabSize = (loaded.model.config as unknown as { vocab_size?: number }).vocab_size;
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
      ids = ids.slice(0, info.contextLength);
    }
    if (ids.length === 0) {
      throw new CoreError('nothing_to_embed', `Input ${index} has no tokens to embed (it is empty or only whitespace for this model's tokenizer).`, { item: index, reason: 'no_tokens' });
    }
    return ids;
  });
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

async function forward(loaded: LoadedModel, batch: number[][]): Promise<Float32Array[]> {
  const width = Math.max(...batch.map((ids) => ids.length));
  const padId = BigInt((loaded.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0);
  const ids = new BigInt64Array(batch.length * width).fill(padId);
  const mask = new BigInt64Array(batch.length * width);
  batch.forEach((row, r) =>
    row.forEach((id, c) => {
      ids[r * width + c] = BigInt(id);
      mask[r * width + c] = 1n;
    }),
  );
  const feeds: Record<string, Tensor> = {
    input_ids: new Tensor('int64', ids, [batch.length, width]),
    attention_mask: new Tensor('int64', mask, [batch.length, width]),
  };
  if (loaded.inputNames.includes('token_type_ids')) {
    feeds.token_type_ids = new Tensor('int64', new BigInt64Array(batch.length * width), [batch.length, width]);
  }
  const output = await loaded.model(feeds);
  const hidden: Tensor = output.last_hidden_state ?? output.token_embeddings ?? output.logits;
  const [, seq, dims] = hidden.dims as [number, number, number];
  const data = hidden.data as Float32Array;
  return batch.map((row, r) => {
    if (loaded.info.pooling === 'cls') return data.slice(r * seq * dims, r * seq * dims + dims);
    const vector = new Float32Array(dims);
    for (let t = 0; t < row.length; t++) {
      const offset = (r * seq + t) * dims;
      for (let d = 0; d < dims; d++) vector[d]! += data[offset + d]!;
    }
    for (let d = 0; d < dims; d++) vector[d]! /= row.length;
    return vector;
  });
}

/** Shortens (Matryoshka) and L2-normalises; refuses a vector with nothing in it rather than returning NaN or zeros. */
function finish(loaded: LoadedModel, pooled: Float32Array, options: { dimensions: number | undefined; normalize: boolean }, index: number): Float32Array {
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

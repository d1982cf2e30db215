/**
 * The ONNX engine's pooled forward pass for embeddings (../embed-batch.ts runs the batch): rows
 * padded to the longest, padding masked out of the attention and of the mean, or the CLS vector.
 */
import { Tensor } from '@huggingface/transformers';
import type { Embedder } from '../embed-batch.js';
import type { LoadedModel } from './loaded-model.js';

const embedders = new WeakMap<LoadedModel, Embedder>();

/** The embedder of a loaded ONNX model (one per model). */
export function onnxEmbedder(loaded: LoadedModel): Embedder {
  let embedder = embedders.get(loaded);
  if (!embedder) {
    const vocabSize = (loaded.model.config as unknown as { vocab_size?: number }).vocab_size;
    embedder = { info: loaded.info, tokenizer: loaded.tokenizer, width: loaded.hiddenSize, ...(vocabSize !== undefined ? { vocabSize } : {}), forward: (batch) => forward(loaded, batch) };
    embedders.set(loaded, embedder);
  }
  return embedder;
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

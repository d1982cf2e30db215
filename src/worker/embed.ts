/**
 * Sentence embeddings in a worker thread: tokenize with the model's tokenizer, run the encoder on
 * padded batches, pool the token vectors (mean over real tokens, or CLS) and L2-normalise.
 */
import { Tensor } from '@huggingface/transformers';
import { invalidRequest } from '../errors.js';
import type { EmbedInput } from '../inference/types.js';
import type { LoadedModel } from './load.js';

/** Inputs per forward pass: bounds the padded tensor when one request carries many inputs. */
const MAX_BATCH = 64;

export interface EmbedOutcome {
  vectors: Float32Array[];
  promptTokens: number;
}

export async function embed(loaded: LoadedModel, inputs: EmbedInput[], dimensions?: number): Promise<EmbedOutcome> {
  const { info, tokenizer } = loaded;
  if (dimensions !== undefined && dimensions !== loaded.hiddenSize) {
    throw invalidRequest(
      `The model \`${info.id}\` produces ${loaded.hiddenSize}-dimensional vectors and does not support shortening them; omit \`dimensions\` or send ${loaded.hiddenSize}.`,
      'dimensions',
    );
  }
  const tokenized = inputs.map((input) => (typeof input === 'string' ? tokenizer.encode(input) : input));
  const vocabSize = (loaded.model.config as unknown as { vocab_size?: number }).vocab_size;
  tokenized.forEach((ids, index) => {
    if (ids.length > info.contextLength) {
      throw invalidRequest(
        `This model's maximum context length is ${info.contextLength} tokens, however you requested ${ids.length} tokens (input[${index}]). Shorten the input.`,
        'input',
        'context_length_exceeded',
      );
    }
    if (vocabSize !== undefined && ids.some((id) => id < 0 || id >= vocabSize)) {
      throw invalidRequest(`input[${index}] holds a token id outside this model's vocabulary (0..${vocabSize - 1}).`, 'input');
    }
  });

  const vectors: Float32Array[] = new Array(inputs.length);
  // Sorting by length keeps padding low inside each batch.
  const order = tokenized.map((_, i) => i).sort((a, b) => tokenized[a]!.length - tokenized[b]!.length);
  for (let start = 0; start < order.length; start += MAX_BATCH) {
    const batch = order.slice(start, start + MAX_BATCH);
    const pooled = await forward(loaded, batch.map((i) => tokenized[i]!));
    batch.forEach((inputIndex, row) => (vectors[inputIndex] = pooled[row]!));
  }
  return { vectors, promptTokens: tokenized.reduce((sum, ids) => sum + ids.length, 0) };
}

async function forward(loaded: LoadedModel, batch: number[][]): Promise<Float32Array[]> {
  const width = Math.max(1, ...batch.map((ids) => ids.length));
  const padId = BigInt((loaded.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0);
  const ids = new BigInt64Array(batch.length * width).fill(padId);
  const mask = new BigInt64Array(batch.length * width);
  batch.forEach((row, r) => row.forEach((id, c) => {
    ids[r * width + c] = BigInt(id);
    mask[r * width + c] = 1n;
  }));
  const feeds: Record<string, Tensor> = {
    input_ids: new Tensor('int64', ids, [batch.length, width]),
    attention_mask: new Tensor('int64', mask, [batch.length, width]),
  };
  const inputNames: string[] = (loaded.model as unknown as { sessions: { model: { inputNames: string[] } } }).sessions.model.inputNames;
  if (inputNames.includes('token_type_ids')) feeds.token_type_ids = new Tensor('int64', new BigInt64Array(batch.length * width), [batch.length, width]);
  const output = await loaded.model(feeds);
  const hidden: Tensor = output.last_hidden_state ?? output.token_embeddings ?? output.logits;
  const [, seq, dims] = hidden.dims as [number, number, number];
  const data = hidden.data as Float32Array;
  return batch.map((row, r) => {
    const vector = new Float32Array(dims);
    if (loaded.info.pooling === 'cls') {
      vector.set(data.subarray(r * seq * dims, r * seq * dims + dims));
    } else {
      for (let t = 0; t < row.length; t++) {
        const offset = (r * seq + t) * dims;
        for (let d = 0; d < dims; d++) vector[d]! += data[offset + d]!;
      }
      if (row.length > 0) for (let d = 0; d < dims; d++) vector[d]! /= row.length;
    }
    if (loaded.info.normalize) normalizeInPlace(vector);
    return vector;
  });
}

/** L2-normalises; a zero vector (no known token) stays zero rather than becoming NaN. */
export function normalizeInPlace(vector: Float32Array): void {
  let sum = 0;
  for (const v of vector) sum += v * v;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
}

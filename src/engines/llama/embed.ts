/**
 * The llama.cpp engine's pooled forward pass for embeddings (../embed-batch.ts runs the batch): each
 * row through the model's embedding context, pooled as the GGUF says (`<arch>.pooling_type`: mean,
 * CLS or last token, as llama.cpp computes it); the batch shortens and normalises the vectors.
 */
import type { Token } from 'node-llama-cpp';
import type { Embedder } from '../embed-batch.js';
import type { LlamaLoaded } from './load.js';

const embedders = new WeakMap<LlamaLoaded, Embedder>();

export function llamaEmbedder(loaded: LlamaLoaded): Embedder {
  let embedder = embedders.get(loaded);
  if (!embedder) {
    const context = loaded.embedding;
    if (!context) throw new Error(`${loaded.info.id} has no embedding context`);
    embedder = {
      info: loaded.info,
      tokenizer: loaded.tokenizer,
      width: loaded.model.embeddingVectorSize,
      vocabSize: loaded.vocabSize,
      forward: async (batch) => {
        const vectors: Float32Array[] = [];
        for (const ids of batch) vectors.push(Float32Array.from((await context.getEmbeddingFor(ids as Token[])).vector));
        return vectors;
      },
    };
    embedders.set(loaded, embedder);
  }
  return embedder;
}

/**
 * A GGUF cross-encoder (pooling type rank) scoring (query, document) pairs through node-llama-cpp's
 * ranking context, which lays a pair out as llama-server does (the model's rerank template, else
 * `[BOS] query [EOS] [SEP] document [EOS]` with the tokens the model has) and returns llama.cpp's
 * score as a probability. The query and documents are tokenized by the server's tokenizer (the same
 * vocabulary) and passed as tokens, so the document is cut to the context as on the ONNX engine
 * (../rank-fit.ts) and usage counts the tokens llama.cpp evaluated. One pair at a time (the ranking
 * context has one sequence); the raw logit is recovered from the probability (it saturates beyond
 * about ±36, where a double's sigmoid reaches 0 or 1).
 */
import type { Token } from 'node-llama-cpp';
import { toCoreError } from '../../core/errors.js';
import type { RerankRequest } from '../../core/types.js';
import { fitDocument, type RankItemResult } from '../rank-fit.js';
import type { LlamaLoaded } from './load.js';

/** The logit whose sigmoid is `p`, kept finite. */
const logitOf = (p: number) => {
  const q = Math.min(Math.max(p, Number.EPSILON / 2), 1 - Number.EPSILON / 2);
  return Math.log(q) - Math.log1p(-q);
};

export async function llamaRerank(loaded: LlamaLoaded, items: Array<Omit<RerankRequest, 'model'>>, options: { truncate: boolean }): Promise<RankItemResult[]> {
  const ranking = loaded.ranking;
  if (!ranking) throw new Error(`${loaded.info.id} has no ranking context`);
  // node-llama-cpp refuses a pair as long as its context.
  const limit = Math.min(loaded.info.contextLength, ranking.contextSize - 1);
  const encode = (text: string) => loaded.tokenizer.encode(text, { add_special_tokens: false }) as Token[];
  const results: RankItemResult[] = [];
  for (const request of items) {
    try {
      const query = encode(request.query);
      const fixed = ranking.calculateInputLength(query, []);
      const pairs = request.documents.map((text, index) => {
        const document = encode(text);
        const { from, keep } = fitDocument({ index, fixed, own: document.length, limit, ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}), truncate: request.truncate ?? options.truncate });
        return document.slice(from, from + keep);
      });
      const logits: number[] = [];
      let promptTokens = 0;
      for (const document of pairs) {
        logits.push(logitOf(await ranking.rank(query, document)));
        promptTokens += ranking.calculateInputLength(query, document);
      }
      results.push({ ok: true, value: { logits, promptTokens } });
    } catch (error) {
      results.push({ ok: false, error: toCoreError(error).toData() });
    }
  }
  return results;
}

/**
 * What both engines' cross-encoders share: how much of a document a (query, document) pair keeps
 * within the model's context, and the errors when it cannot. Only the document is ever cut: a query
 * that leaves no room is refused, as is a pair too long when truncation is off.
 */
import { CoreError, type CoreErrorData } from '../core/errors.js';
import type { RerankResult } from '../core/types.js';

/** Each request of a gathered batch succeeds or fails on its own. */
export type RankItemResult = { ok: true; value: RerankResult } | { ok: false; error: CoreErrorData };

export interface PairSize {
  /** The document's place in its request (for the error). */
  index: number;
  /** The pair's tokens besides the document's: the query's and the special tokens. */
  fixed: number;
  /** The document's own tokens. */
  own: number;
  /** Most tokens a pair may have. */
  limit: number;
  /** max_tokens_per_doc: the document's first tokens kept at most. */
  maxTokens?: number;
  /** Cut a pair too long for the context: its document's end (true), its start ('left'), or refuse it (false). */
  truncate: boolean | 'left';
}

/**
 * The document's tokens [from, from + keep) that the pair keeps: its first `maxTokens`, then within
 * the context its start (truncate true) or its end (truncate 'left', as TEI's left truncation).
 */
export function fitDocument(pair: PairSize): { from: number; keep: number } {
  const { index, fixed, own, limit } = pair;
  if (own === 0) throw new CoreError('nothing_to_embed', `Input ${index} has no tokens to rank (it is empty or only whitespace for this model's tokenizer).`, { item: index, reason: 'no_tokens' });
  if (fixed + 1 > limit) {
    throw new CoreError('input_too_long', `query is ${fixed} tokens with the pair's special tokens, which leaves no room for a document in the model's context of ${limit}; shorten the query.`, {
      limit,
      requested: fixed,
      part: 'query',
    });
  }
  const capped = Math.min(own, pair.maxTokens ?? own);
  if (fixed + capped <= limit) return { from: 0, keep: capped };
  if (!pair.truncate) {
    throw new CoreError('input_too_long', `Input ${index} is ${fixed + capped} tokens with the query, more than the model's context of ${limit}.`, { item: index, limit, requested: fixed + capped });
  }
  const keep = limit - fixed;
  return { from: pair.truncate === 'left' ? capped - keep : 0, keep };
}

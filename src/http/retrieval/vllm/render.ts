/** vLLM's answers. */
import { randomUUID } from 'node:crypto';
import type { ScoreResult, TokenizeResult } from '../../../core/types.js';

/** /score: one score per pair, in order. As vLLM scores them: a cross-encoder's sigmoid of the logit, an embedding model's cosine. */
export function renderScores(model: string, result: ScoreResult) {
  const tokens = result.promptTokens;
  return {
    id: `score-${randomUUID()}`,
    object: 'list' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    data: result.scores.map((s, index) => ({ index, object: 'score' as const, score: result.by === 'cross-encoder' ? s.score : s.raw })),
    usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
  };
}

/** /tokenize: `{count, max_model_len, tokens, token_strs}`. */
export function renderVllmTokens(result: TokenizeResult, maxModelLen: number, tokenStrs: boolean) {
  return {
    count: result.tokens.length,
    max_model_len: maxModelLen,
    tokens: result.tokens,
    token_strs: tokenStrs ? (result.pieces ?? []).map((p) => p.token) : null,
  };
}

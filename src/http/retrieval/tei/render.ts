/** TEI's answers. */
import type { ModelDescription } from '../../../core/model.js';
import type { Scored, TokenizeResult } from '../../../core/types.js';

/** TEI's rerank answer: `[{index, score, text?}]`, best first; raw_scores gives the logit or the cosine. */
export function renderTeiRerank(options: { ranked: Scored[]; texts: string[]; rawScores: boolean; returnText: boolean }) {
  return options.ranked.map((r) => ({
    index: r.index,
    score: options.rawScores ? r.raw : r.score,
    ...(options.returnText ? { text: options.texts[r.index]! } : {}),
  }));
}

/** TEI's /tokenize answer for one input: `[{id, text, special, start, stop}]`. */
export function renderTeiTokens(result: TokenizeResult) {
  return (result.pieces ?? []).map(({ id, text, special, start, stop }) => ({ id, text, special, start, stop }));
}

/** TEI's /info: the model it serves. */
export function renderInfo(model: ModelDescription) {
  return {
    model_id: model.id,
    model_sha: null,
    model_type: { embedding: {} },
    max_input_length: model.contextLength,
    max_client_batch_size: 2048,
    max_batch_requests: null,
    auto_truncate: false,
    tokenization_workers: 1,
    version: 'local-inference-server',
    sha: null,
    docker_label: null,
  };
}

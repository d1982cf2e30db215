/**
 * Ranking documents against a query, and the two wire answers. An embedding model ranks by the
 * cosine between the query's vector and each document's (vLLM's score API does the same), mapped to
 * [0, 1] as (1 + cos) / 2, which keeps the order; TEI's `raw_scores` gives the cosine itself.
 */
import { randomUUID } from 'node:crypto';

export interface Ranked {
  index: number;
  /** In [0, 1]. */
  score: number;
  /** The raw similarity (cosine) the score is mapped from. */
  raw: number;
}

/** The cosine of two vectors (0 when either is all zeros). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  const norm = Math.sqrt(na) * Math.sqrt(nb);
  return norm > 0 ? Math.max(-1, Math.min(1, dot / norm)) : 0;
}

/** Every document scored against the query, best first (ties keep the documents' order). */
export function rankByCosine(query: Float32Array, documents: Float32Array[]): Ranked[] {
  return documents
    .map((vector, index) => {
      const raw = cosine(query, vector);
      return { index, raw, score: (1 + raw) / 2 };
    })
    .sort((a, b) => b.score - a.score || a.index - b.index);
}

/** A cross-encoder's logits ranked, best first: the score is their sigmoid (TEI's raw_scores: the logit). */
export function rankByLogits(logits: number[]): Ranked[] {
  return logits.map((raw, index) => ({ index, raw, score: 1 / (1 + Math.exp(-raw)) })).sort((a, b) => b.score - a.score || a.index - b.index);
}

/** Cohere counts one search unit per query with up to 100 documents. */
export const searchUnits = (documents: number) => Math.max(1, Math.ceil(documents / 100));

/** The Cohere v2 / Jina / vLLM / llama-server answer. */
export function renderRerank(options: { model: string; ranked: Ranked[]; documents: string[]; topN?: number; returnDocuments: boolean; tokens: number }) {
  const { ranked, documents, topN, returnDocuments, tokens } = options;
  return {
    id: randomUUID(),
    model: options.model,
    results: ranked.slice(0, topN ?? ranked.length).map((r) => ({
      index: r.index,
      relevance_score: r.score,
      ...(returnDocuments ? { document: { text: documents[r.index]! } } : {}),
    })),
    meta: { api_version: { version: '2' }, billed_units: { search_units: searchUnits(documents.length) } },
    usage: { total_tokens: tokens },
  };
}

/** TEI's answer: `[{index, score, text?}]`, best first. */
export function renderTeiRerank(options: { ranked: Ranked[]; texts: string[]; rawScores: boolean; returnText: boolean }) {
  return options.ranked.map((r) => ({
    index: r.index,
    score: options.rawScores ? r.raw : r.score,
    ...(options.returnText ? { text: options.texts[r.index]! } : {}),
  }));
}

/** vLLM's score answer: one score per pair, in order. */
export function renderScores(model: string, scores: number[], tokens: number) {
  return {
    id: `score-${randomUUID()}`,
    object: 'list' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    data: scores.map((score, index) => ({ index, object: 'score' as const, score })),
    usage: { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 },
  };
}

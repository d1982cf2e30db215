/**
 * Ranking below HTTP: documents scored against a query by whatever model can (a cross-encoder
 * scores each pair; an embedding model by the cosine of the two vectors, as vLLM's score API does),
 * and which model a request that names none is given. Every retrieval shape (Cohere, Jina, TEI,
 * vLLM, llama-server) calls these through the service; none of them decides it.
 */
import { CoreError, isCoreError, wrongModelTask } from '../core/errors.js';
import type { ModelTask } from '../core/model.js';
import type { CallOptions, DefaultModel, InferenceService, ModelUse, ScoreRequest, ScoreResult, Scored } from '../core/types.js';

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

/** A cosine mapped to [0, 1] as (1 + cos) / 2, which keeps the order. */
const byCosine = (raw: number, index: number): Scored => ({ index, raw, score: (1 + raw) / 2 });
/** A cross-encoder's logit: its sigmoid. */
const byLogit = (raw: number, index: number): Scored => ({ index, raw, score: 1 / (1 + Math.exp(-raw)) });

/**
 * An error of one call of a score request, marked with the part it is about (its query or one of
 * its documents) and its item counted in the request's own lists, so HTTP can name the field.
 * A cross-encoder marks a query too long for any document itself (src/engines/rank-fit.ts).
 */
const markedAs = (part: 'query' | 'document', itemOf: (item: number) => number = (i) => i) => (error: unknown): never => {
  if (!isCoreError(error)) throw error;
  const own = error.details.part ?? part;
  // A cross-encoder's query error has no item: the query is its call's one.
  const item = error.details.item ?? (own === 'query' ? 0 : undefined);
  throw new CoreError(error.code, error.message, { ...error.details, part: own, ...(item !== undefined ? { item: itemOf(item) } : {}) });
};

type Scorer = Pick<InferenceService, 'findModel' | 'rerank' | 'embed'>;

/**
 * Documents scored against one query, or pairwise against one query each. A cross-encoder's pairs of
 * one query go in one request (the batcher shares its forward passes); pairwise, one pair after
 * another, as the model's queue is bounded. An embedding model's query and document calls share the
 * batcher's next batch. A model of another task is wrong_model_task.
 */
export async function scoreDocuments(service: Scorer, request: ScoreRequest, options: CallOptions = {}): Promise<ScoreResult> {
  const { model, queries, documents } = request;
  const task = service.findModel(model)?.task;
  if (task !== undefined && task !== 'rerank' && task !== 'embedding') throw wrongModelTask(model, task);
  const limits = { ...(request.maxTokens ? { maxTokens: request.maxTokens } : {}), ...(request.truncate !== undefined ? { truncate: request.truncate } : {}) };
  if (task === 'rerank') {
    const groups = queries.length === 1 ? [{ query: queries[0]!, documents, at: 0 }] : documents.map((d, i) => ({ query: queries[i]!, documents: [d], at: i }));
    const scores = new Array<Scored>(documents.length);
    let promptTokens = 0;
    for (const { query, documents: some, at } of groups) {
      const scored = await service.rerank({ model, query, documents: some, ...limits }, options).catch(markedAs('document', (item) => at + item));
      scored.logits.forEach((logit, i) => (scores[at + i] = byLogit(logit, at + i)));
      promptTokens += scored.promptTokens;
    }
    return { by: 'cross-encoder', scores, promptTokens };
  }
  const truncate = request.truncate !== undefined ? { truncate: request.truncate } : {};
  const [q, d] = await Promise.all([
    service.embed({ model, inputs: queries, ...truncate }, options).catch(markedAs('query')),
    service.embed({ model, inputs: documents, ...limits }, options).catch(markedAs('document')),
  ]);
  const scores = d.vectors.map((vector, i) => byCosine(cosine(q.vectors[queries.length === 1 ? 0 : i]!, vector), i));
  return { by: 'cosine', scores, promptTokens: q.promptTokens + d.promptTokens };
}

/** What the default choice reads of a model: the scanned record's id, task and manifest mark. */
export interface Candidate {
  id: string;
  task: ModelTask;
  /** The manifest's `randomWeights` (the bundled test cross-encoder): its outputs mean nothing. */
  randomWeights?: boolean;
}

/**
 * Which models a request that names none may be given, in order of preference. Ranking: a
 * cross-encoder, else an embedding model (out of the box, glove-sif-100d), else a cross-encoder with
 * random weights: its scores rank nothing, so it never counts among the cross-encoders (a real one
 * installed beside it is still "the only one"); it serves when named, or when nothing else can rank.
 */
const PREFERENCES: Record<ModelUse, Array<(model: Candidate) => boolean>> = {
  ranking: [(m) => m.task === 'rerank' && !m.randomWeights, (m) => m.task === 'embedding', (m) => m.task === 'rerank' && m.randomWeights === true],
  embedding: [(m) => m.task === 'embedding'],
  any: [() => true],
};

/** The only model of the first preference any model meets; several of it: the caller asks the client to choose. */
export function defaultModelAmong(models: readonly Candidate[], use: ModelUse): DefaultModel {
  for (const accepts of PREFERENCES[use]) {
    const candidates = models.filter(accepts);
    if (candidates.length === 1) return { kind: 'one', id: candidates[0]!.id };
    if (candidates.length > 1) return { kind: 'several', ids: candidates.map((m) => m.id) };
  }
  return { kind: 'none' };
}

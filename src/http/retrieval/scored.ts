/**
 * A score request sent to the service on behalf of one wire shape, its errors worded for the fields
 * that shape sent the texts in (`documents[3]`, `texts[0]`, `text_1[2]`), and its scores best first.
 */
import type { FastifyRequest } from 'fastify';
import { clip, isCoreError } from '../../core/errors.js';
import type { ScoreRequest, ScoreResult, Scored } from '../../core/types.js';
import { invalidRequest } from '../shared/errors.js';
import { keepAliveOf } from '../shared/keep-alive.js';
import type { RetrievalContext } from './context.js';
import { located } from './errors.js';

/** Where a shape's body holds a score request's texts. */
export interface ScoreFields {
  query: string;
  documents: string;
  /** Name the item (`text_1[2]`) when the body holds a list of them. */
  queriesIndexed: boolean;
  documentsIndexed: boolean;
  /** TEI's envelope: errors keep their codes (TEI's statuses), the field in the message. */
  tei: boolean;
  /** What the route does, for a model of the wrong task ("ranking needs an embedding or a rerank model"). */
  verb: 'ranking' | 'scoring';
}

/** An error of a score request, about the field it names. */
function locate(error: unknown, request: ScoreRequest, fields: ScoreFields): unknown {
  if (!isCoreError(error)) return error;
  const { code, details, message } = error;
  if (code === 'wrong_model_task' && details.task !== undefined) {
    return invalidRequest(`model: \`${clip(request.model)}\` is a ${details.task} model; ${fields.verb} needs an embedding or a rerank model`, 'model');
  }
  if (details.part !== 'query') return located(error, fields.documents, fields.documentsIndexed, fields.tei);
  // A cross-encoder's query too long for any document: its message names the query already.
  if (message.startsWith('query ') && fields.query !== 'query') {
    return invalidRequest(message.replace(/^query/, fields.queriesIndexed ? `${fields.query}[${details.item ?? 0}]` : fields.query), fields.query);
  }
  return located(error, fields.query, fields.queriesIndexed, fields.tei);
}

export function scored(context: RetrievalContext, request: FastifyRequest, score: ScoreRequest, fields: ScoreFields): Promise<ScoreResult> {
  return context.inference.score(score, keepAliveOf(request)).catch((e: unknown) => Promise.reject(locate(e, score, fields)));
}

/** Scores best first (ties keep the documents' order). */
export const bestFirst = (scores: Scored[]) => [...scores].sort((a, b) => b.score - a.score || a.index - b.index);

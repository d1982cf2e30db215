/**
 * What every retrieval shape's handlers are given: the service, and the model a body serves (its own,
 * else the configured one, else the service's choice for what the body needs). Choosing among the
 * installed models is the service's (src/inference/ranking.ts); wording "none" and "several" is ours.
 */
import { clip } from '../../core/errors.js';
import type { InferenceService, ModelUse } from '../../core/types.js';
import { invalidRequest } from '../shared/errors.js';
import type { ImageSettings } from '../shared/image-settings.js';

export interface RetrievalContext {
  inference: InferenceService;
  /** The model TEI's routes and model-less bodies serve (config teiModel). */
  defaultModel?: string;
  /** Limits of image input (a vLLM chat tokenize body's messages may hold images). */
  images?: ImageSettings;
}

const WHAT: Record<ModelUse, string> = { ranking: 'ranking', embedding: 'embedding', any: 'any' };

/** The model a body serves; several that could and no setting is a 400 that says what to set. */
export function modelFor(context: RetrievalContext, given: string | undefined, use: ModelUse): string {
  if (given !== undefined) return given;
  if (context.defaultModel !== undefined) return context.defaultModel;
  const choice = context.inference.defaultModel(use);
  if (choice.kind === 'one') return choice.id;
  if (choice.kind === 'several') {
    const names = choice.ids.slice(0, 10).join(', ');
    throw invalidRequest(`model: several models can serve this (${clip(names, 300)}); send \`model\`, or set --tei-model (TEI_MODEL) to the one to serve`, 'model');
  }
  throw invalidRequest(`model: no ${WHAT[use]} model is installed; install one or send \`model\``, 'model');
}

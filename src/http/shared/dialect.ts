/**
 * Which dialect's envelope a route shared by both (models, not-found) answers in: a request to a
 * Messages path, or one that carries Anthropic headers, is an Anthropic client.
 */
import type { FastifyRequest } from 'fastify';
import { anthropicErrors } from '../anthropic/errors.js';
import { openAiErrors } from '../openai/errors.js';
import type { ErrorDialect } from './errors.js';

export function dialectOf(request: FastifyRequest): ErrorDialect {
  const h = request.headers;
  if (request.url.startsWith('/v1/messages')) return anthropicErrors;
  return h['anthropic-version'] || h['vendor-version'] || h['x-api-key'] ? anthropicErrors : openAiErrors;
}

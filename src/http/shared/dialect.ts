/**
 * Which dialect's envelope a route shared by both (models, not-found) answers in: a request that
 * carries Anthropic headers is an Anthropic client.
 */
import type { FastifyRequest } from 'fastify';
import { anthropicErrors } from '../anthropic/errors.js';
import { openAiErrors } from '../openai/errors.js';
import type { ErrorDialect } from './errors.js';

export function dialectOf(request: FastifyRequest): ErrorDialect {
  const h = request.headers;
  return h['anthropic-version'] || h['vendor-version'] || h['x-api-key'] ? anthropicErrors : openAiErrors;
}

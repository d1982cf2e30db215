/**
 * Per-dialect rendering of errors, so shared routes (models, not-found) answer in the envelope the
 * calling client parses. A request that carries Anthropic headers is an Anthropic client.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_TABLE, toServiceError, type ServiceError } from '../../errors.js';

export type Dialect = 'anthropic' | 'openai';

export function dialectOf(request: FastifyRequest): Dialect {
  const h = request.headers;
  return h['anthropic-version'] || h['vendor-version'] || h['x-api-key'] ? 'anthropic' : 'openai';
}

export function errorBody(dialect: Dialect, error: ServiceError, requestId: string) {
  const row = ERROR_TABLE[error.kind];
  if (dialect === 'anthropic') {
    return { status: row.anthropicStatus, body: { type: 'error', error: { type: row.anthropicType, message: error.message }, request_id: requestId } };
  }
  return { status: row.openaiStatus, body: { error: { message: error.message, type: row.openaiType, param: error.param, code: error.code } } };
}

/** Sends any thrown value as the dialect's error; internal errors are logged, never shown. */
export function sendError(dialect: Dialect, error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const serviceError = toServiceError(error);
  const { status, body } = errorBody(dialect, serviceError, request.id);
  if (serviceError.kind === 'internal') request.log.error({ err: error }, 'internal error');
  else request.log.info({ code: serviceError.code, status }, serviceError.message);
  if (serviceError.kind === 'overloaded') reply.header('retry-after', '1');
  return reply.status(status).send(body);
}

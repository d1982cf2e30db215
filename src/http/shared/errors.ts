/**
 * Errors in the HTTP layer: the codes only HTTP raises (bad bodies, auth, routes, framework errors),
 * the one classification of anything thrown into a code with details, and sending it in a dialect's
 * envelope. Each dialect owns its table from every code to status, type and wording
 * (src/http/anthropic/errors.ts, src/http/openai/errors.ts), each with a completeness test.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CORE_ERROR_CODES, isCoreError, type CoreErrorCode, type ErrorDetails } from '../../core/errors.js';

export const HTTP_ERROR_CODES = [
  /** The body, a header or a query does not fit the dialect; the message says what and where. */
  'invalid_request',
  /** The body is not JSON. */
  'invalid_json',
  /** A field the dialect knows but this server cannot honour. */
  'unsupported_feature',
  /** The path's model and the body's model differ. */
  'model_mismatch',
  'invalid_api_key',
  'route_not_found',
  'unsupported_media_type',
  'body_too_large',
  /** A request that arrived on an open connection after shutdown began. */
  'shutting_down',
] as const;

export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];
export type ErrorCode = CoreErrorCode | HttpErrorCode;
export const ERROR_CODES: readonly ErrorCode[] = [...CORE_ERROR_CODES, ...HTTP_ERROR_CODES];

export class HttpError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    /** The request field at fault (OpenAI's `param`). */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const invalidRequest = (message: string, param?: string) => new HttpError('invalid_request', message, param ?? null);

/** Anything thrown while serving a request, as a code with details; what a dialect table renders. */
export interface KnownError {
  code: ErrorCode;
  message: string;
  details: ErrorDetails;
  param: string | null;
}

const FRAMEWORK_ERRORS: Record<string, (message: string) => HttpError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => new HttpError('body_too_large', 'Request body is larger than the server accepts.'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new HttpError('unsupported_media_type', 'Content-Type must be application/json.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => invalidRequest('Content-Length does not match the body.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => invalidRequest('The request body is empty; send a JSON object.'),
  FST_ERR_CTP_INVALID_JSON_BODY: (message) => new HttpError('invalid_json', `The request body is not valid JSON: ${message}`.trim()),
  FST_ERR_BAD_URL: () => invalidRequest('The request path is not valid percent-encoding.'),
  FST_ERR_MAX_PARAM_LENGTH: () => invalidRequest('A path segment is longer than the server accepts (100 characters).'),
  FST_ERR_ASYNC_CONSTRAINT: () => invalidRequest('The request does not match any route constraint.'),
};

/**
 * Classifies a thrown value. Fastify's own errors (body too large, bad JSON, bad content type) are
 * matched by code; anything unexpected is `internal`, and its message is not shown to the client
 * (it may hold paths or stack details).
 */
export function classify(error: unknown): KnownError {
  if (isCoreError(error)) return { code: error.code, message: error.message, details: error.details, param: null };
  if (error instanceof HttpError) return { code: error.code, message: error.message, details: {}, param: error.param };
  const e = error as { statusCode?: number; code?: unknown; message?: string } | undefined;
  const framework = typeof e?.code === 'string' ? FRAMEWORK_ERRORS[e.code] : undefined;
  if (framework) return classify(framework(e?.message ?? ''));
  if (e?.statusCode === 400) return classify(invalidRequest(e.message ?? 'Bad request.'));
  if (e?.statusCode === 413) return classify(new HttpError('body_too_large', e.message ?? 'Request body too large.'));
  if (e?.statusCode === 415) return classify(new HttpError('unsupported_media_type', e.message ?? 'Unsupported media type.'));
  if (e?.statusCode === 404) return classify(new HttpError('route_not_found', e.message ?? 'Not found.'));
  return { code: 'internal', message: 'The server failed to handle the request.', details: {}, param: null };
}

/** How one dialect turns a classified error into a status and a body. */
export interface ErrorDialect {
  name: string;
  render(error: KnownError, requestId: string): { status: number; body: object };
}

/** Sends any thrown value in the dialect's envelope; internal errors are logged, never shown. */
export function sendError(dialect: ErrorDialect, error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = classify(error);
  const { status, body } = dialect.render(known, request.id);
  // Errors Fastify raises before any hook (frameworkErrors) would otherwise go out without it.
  reply.header('request-id', request.id);
  if (status >= 500) request.log.error({ err: error, code: known.code }, 'request failed');
  else request.log.info({ code: known.code, status }, known.message);
  if (known.code === 'overloaded') reply.header('retry-after', '1');
  return reply.status(status).send(body);
}

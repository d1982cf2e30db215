/**
 * The one error table. Every error the service raises is a ServiceError with a kind; the kind alone
 * decides the HTTP status and each dialect's error type. test/unit/errors.test.ts proves the table
 * complete against ../shared/API.md.
 */

export const ERROR_KINDS = [
  'invalid_request',
  'authentication',
  'permission',
  'not_found',
  'unsupported_media_type',
  'too_large',
  'overloaded',
  'timeout',
  'unavailable',
  'internal',
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

interface KindRow {
  anthropicStatus: number;
  anthropicType: string;
  openaiStatus: number;
  openaiType: string;
}

export const ERROR_TABLE: Record<ErrorKind, KindRow> = {
  invalid_request: { anthropicStatus: 400, anthropicType: 'invalid_request_error', openaiStatus: 400, openaiType: 'invalid_request_error' },
  authentication: { anthropicStatus: 401, anthropicType: 'authentication_error', openaiStatus: 401, openaiType: 'invalid_request_error' },
  permission: { anthropicStatus: 403, anthropicType: 'permission_error', openaiStatus: 403, openaiType: 'invalid_request_error' },
  not_found: { anthropicStatus: 404, anthropicType: 'not_found_error', openaiStatus: 404, openaiType: 'invalid_request_error' },
  unsupported_media_type: { anthropicStatus: 415, anthropicType: 'invalid_request_error', openaiStatus: 415, openaiType: 'invalid_request_error' },
  too_large: { anthropicStatus: 413, anthropicType: 'request_too_large', openaiStatus: 413, openaiType: 'invalid_request_error' },
  // Anthropic answers "overloaded" with 529; OpenAI clients expect 429 and retry it.
  overloaded: { anthropicStatus: 529, anthropicType: 'overloaded_error', openaiStatus: 429, openaiType: 'server_error' },
  timeout: { anthropicStatus: 504, anthropicType: 'timeout_error', openaiStatus: 504, openaiType: 'server_error' },
  unavailable: { anthropicStatus: 503, anthropicType: 'overloaded_error', openaiStatus: 503, openaiType: 'server_error' },
  internal: { anthropicStatus: 500, anthropicType: 'api_error', openaiStatus: 500, openaiType: 'server_error' },
};

export interface ServiceErrorOptions {
  /** Stable machine-readable code, e.g. "model_not_found". */
  code: string;
  kind: ErrorKind;
  message: string;
  /** The request field at fault (OpenAI's `param`). */
  param?: string | null;
}

export class ServiceError extends Error {
  readonly code: string;
  readonly kind: ErrorKind;
  readonly param: string | null;

  constructor(options: ServiceErrorOptions) {
    super(options.message);
    this.name = 'ServiceError';
    this.code = options.code;
    this.kind = options.kind;
    this.param = options.param ?? null;
  }

  /** The shape errors take to cross a thread boundary. */
  toJSON(): ServiceErrorOptions {
    return { code: this.code, kind: this.kind, message: this.message, param: this.param };
  }
}

export function isServiceError(value: unknown): value is ServiceError {
  return value instanceof ServiceError;
}

export const invalidRequest = (message: string, param?: string, code = 'invalid_request') =>
  new ServiceError({ code, kind: 'invalid_request', message, param });

export const modelNotFound = (model: string, param = 'model') =>
  new ServiceError({
    code: 'model_not_found',
    kind: 'not_found',
    message: `The model \`${model}\` does not exist. GET /v1/models lists the models this server has.`,
    param,
  });

export const wrongModelTask = (name: string, modelTask: 'chat' | 'embedding') =>
  new ServiceError({
    code: 'wrong_model_task',
    kind: 'invalid_request',
    param: 'model',
    message: modelTask === 'chat'
      ? `The model \`${name}\` is a chat model and cannot serve embeddings.`
      : `The model \`${name}\` is an embedding model and cannot serve messages.`,
  });

/**
 * Maps anything thrown while serving a request to a ServiceError. Fastify's own errors (body too
 * large, bad JSON, bad content type) carry a statusCode; anything else is an internal error whose
 * message is not shown to the client (it may hold paths or stack details).
 */
export function toServiceError(error: unknown): ServiceError {
  if (isServiceError(error)) return error;
  const e = error as { statusCode?: number; code?: string; message?: string };
  const code = typeof e?.code === 'string' ? e.code : undefined;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError({ code: 'request_too_large', kind: 'too_large', message: 'Request body is larger than the server accepts.' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ServiceError({ code: 'unsupported_media_type', kind: 'unsupported_media_type', message: 'Content-Type must be application/json.' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalidRequest('Content-Length does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidRequest('The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return invalidRequest(`The request body is not valid JSON: ${e.message ?? ''}`.trim());
    default:
      break;
  }
  if (e?.statusCode === 400 || e?.statusCode === 413 || e?.statusCode === 415) {
    const kind: ErrorKind = e.statusCode === 413 ? 'too_large' : e.statusCode === 415 ? 'unsupported_media_type' : 'invalid_request';
    return new ServiceError({ code: code ?? kind, kind, message: e.message ?? 'Bad request.' });
  }
  if (e?.statusCode === 404) return new ServiceError({ code: 'route_not_found', kind: 'not_found', message: e.message ?? 'Not found.' });
  return new ServiceError({ code: 'internal_error', kind: 'internal', message: 'The server failed to handle the request.' });
}

/**
 * The Anthropic dialect's error table: every error code -> status, error type and wording, and the
 * envelope `{"type":"error","error":{"type","message"},"request_id"}`. test/unit/error-tables.test.ts
 * proves it complete against the status table of shared/API.md.
 */
import type { PathDialect } from '../shared/connection.js';
import type { DialectClaim } from '../shared/dialect.js';
import type { ErrorCode, ErrorDialect, KnownError } from '../shared/errors.js';

interface Row {
  status: number;
  type: string;
  /** Wording from the details; the error's own message otherwise. */
  message?: (error: KnownError) => string;
}

const invalid: Row = { status: 400, type: 'invalid_request_error' };

export const ANTHROPIC_ERRORS: Record<ErrorCode, Row> = {
  invalid_request: invalid,
  invalid_json: invalid,
  unsupported_feature: invalid,
  model_mismatch: invalid,
  wrong_model_task: invalid,
  template_rejected: invalid,
  image_input_unsupported: invalid,
  image_unreadable: invalid,
  schema_unsupported: {
    ...invalid,
    message: ({ message, details: d }) => {
      const field = d.reason === 'tool' ? (d.item === undefined ? 'tools' : `tools.${d.item}.input_schema`) : 'output_config.format.schema';
      if (d.problem !== undefined) return `${field}: ${d.schemaPath === undefined ? '' : `at '${d.schemaPath || '/'}': `}${d.problem}`;
      if (d.feature === undefined) return `${field}: ${message}`;
      return `${field}: \`${d.feature}\` at '${d.schemaPath || '/'}' is not supported with constrained decoding (strict tools and structured outputs); remove it, or for a tool drop \`strict\``;
    },
  },
  // Anthropic's own wording for both: clients (Claude Code among them) match "prompt is too long".
  // When counting stopped early, N is a lower bound of the prompt's length (the format stays the same).
  prompt_too_long: { ...invalid, message: ({ details: d }) => `prompt is too long: ${d.promptTokens} tokens > ${d.limit! - 1} maximum` },
  output_limit_exceeded: {
    ...invalid,
    message: ({ details: d }) => `max_tokens: ${d.requested} > ${d.limit}, which is the maximum allowed number of output tokens for ${d.model}`,
  },
  // Embedding errors never reach this dialect's routes; they still have a row.
  input_too_long: invalid,
  token_out_of_vocabulary: invalid,
  nothing_to_embed: invalid,
  dimensions_unsupported: invalid,
  invalid_api_key: { status: 401, type: 'authentication_error' },
  model_not_found: {
    status: 404,
    type: 'not_found_error',
    message: ({ details }) => `model: the model \`${details.model}\` does not exist. GET /v1/models lists the models this server has.`,
  },
  route_not_found: { status: 404, type: 'not_found_error' },
  body_too_large: { status: 413, type: 'request_too_large' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  internal: { status: 500, type: 'api_error' },
  worker_failed: { status: 500, type: 'api_error' },
  // Anthropic's API answers "no capacity" with 529 overloaded_error; a model that is not loaded is
  // the same condition for a client (retry later).
  model_unavailable: { status: 503, type: 'overloaded_error' },
  shutting_down: { status: 503, type: 'overloaded_error' },
  timeout: { status: 504, type: 'timeout_error' },
  overloaded: { status: 529, type: 'overloaded_error' },
};

const envelope = (type: string, message: string, requestId: string) => ({ type: 'error', error: { type, message }, request_id: requestId });

export const anthropicErrors: ErrorDialect = {
  name: 'anthropic',
  render(error, requestId) {
    const row = ANTHROPIC_ERRORS[error.code];
    const message = row.message?.(error) ?? error.message;
    return { status: row.status, body: envelope(row.type, message, requestId) };
  },
};

/**
 * Requests to a shared route (models, not found) that are an Anthropic client's: a Messages path, or
 * the headers only its clients send.
 */
export const anthropicClaim: DialectClaim = {
  errors: anthropicErrors,
  claims: (request) => {
    const h = request.headers;
    return request.url.startsWith('/v1/messages') || Boolean(h['anthropic-version'] || h['vendor-version'] || h['x-api-key']);
  },
};

/** The envelope of answers given before routing (shared/connection.ts) on this dialect's paths (./plugin.ts). */
export const anthropicPaths: PathDialect = {
  prefixes: ['/v1/messages'],
  envelope: ({ type, message }, requestId) => envelope(type, message, requestId),
};

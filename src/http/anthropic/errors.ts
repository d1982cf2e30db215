/**
 * The Anthropic dialect's error table: every error code -> status, error type and wording, and the
 * envelope `{"type":"error","error":{"type","message"},"request_id"}`. test/unit/error-tables.test.ts
 * proves it complete against the status table of shared/API.md.
 */
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
  context_overflow: {
    ...invalid,
    message: ({ details: d }) => {
      const atLeast = d.promptTokensAtLeast ? 'at least ' : '';
      // Without `requested` the prompt alone was too long (count_tokens).
      if (d.requested === undefined) return `prompt is ${atLeast}${d.promptTokens} tokens, more than the model's context window of ${d.limit} tokens. Shorten the prompt.`;
      return (
        `prompt is ${atLeast}${d.promptTokens} tokens and max_tokens is ${d.requested}: together ${atLeast}${d.promptTokens! + d.requested}, ` +
        `more than the model's context window of ${d.limit} tokens. Shorten the prompt or lower max_tokens.`
      );
    },
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
  timeout: { status: 504, type: 'timeout_error' },
  overloaded: { status: 529, type: 'overloaded_error' },
};

export const anthropicErrors: ErrorDialect = {
  name: 'anthropic',
  render(error, requestId) {
    const row = ANTHROPIC_ERRORS[error.code];
    const message = row.message?.(error) ?? error.message;
    return { status: row.status, body: { type: 'error', error: { type: row.type, message }, request_id: requestId } };
  },
};

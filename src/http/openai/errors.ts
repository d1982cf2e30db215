/**
 * The OpenAI dialect's error table: every error code -> status, error type, `code`, `param` and
 * wording, and the envelope `{"error":{"message","type","param","code"}}`.
 * test/unit/error-tables.test.ts proves it complete.
 */
import type { PathDialect } from '../shared/connection.js';
import type { ErrorCode, ErrorDialect, KnownError } from '../shared/errors.js';

export interface Row {
  status: number;
  type: 'invalid_request_error' | 'server_error';
  /** The envelope's `code`; the error code itself when absent. */
  code?: string;
  /** The envelope's `param` when the error does not name one (from its details, for some codes). */
  param?: string | ((error: KnownError) => string);
  message?: (error: KnownError) => string;
}

const invalid = { status: 400, type: 'invalid_request_error' } as const;
const server = (status: number) => ({ status, type: 'server_error' }) as const;
/**
 * The row of a schema constrained decoding cannot use, for a dialect's field names: the output
 * format's, its schema's, and a tool's parameters (the tools, when the error is about no one tool: a
 * forced call's grammar). Chat completions and Responses name them differently.
 */
export function schemaUnsupported(fields: { output: string; schema: string; tool: (item: number) => string }): Row {
  const field = ({ details: d }: KnownError) => (d.reason !== 'tool' ? fields.schema : d.item === undefined ? 'tools' : fields.tool(d.item));
  return {
    ...invalid,
    param: (error) => (error.details.reason === 'tool' ? field(error) : fields.output),
    message: (error) => {
      const d = error.details;
      if (d.problem !== undefined) return `${field(error)}: ${d.schemaPath === undefined ? '' : `at '${d.schemaPath || '/'}': `}${d.problem}`;
      if (d.feature === undefined) return `${field(error)}: ${error.message}`;
      return `${field(error)}: \`${d.feature}\` at '${d.schemaPath || '/'}' is not supported with constrained decoding (strict tools and strict schemas); remove it, or send strict: false`;
    },
  };
}
/** OpenAI names an input of a list as input[i]. */
const input = (item: number | undefined) => (item === undefined ? 'input' : `input[${item}]`);

export const OPENAI_ERRORS: Record<ErrorCode, Row> = {
  invalid_request: invalid,
  invalid_json: invalid,
  unsupported_feature: invalid,
  model_mismatch: { ...invalid, param: 'model' },
  wrong_model_task: { ...invalid, param: 'model' },
  template_rejected: { ...invalid, param: 'messages' },
  image_input_unsupported: { ...invalid, param: 'messages' },
  image_unreadable: { ...invalid, param: 'messages' },
  // An output schema or a strict tool the grammar cannot enforce, named by chat completions' fields.
  schema_unsupported: schemaUnsupported({ output: 'response_format', schema: 'response_format.json_schema.schema', tool: (item) => `tools[${item}].function.parameters` }),
  prompt_too_long: {
    ...invalid,
    code: 'context_length_exceeded',
    param: 'messages',
    message: ({ details: d }) =>
      `This model's maximum context length is ${d.limit} tokens. However, your messages resulted in ${d.promptTokensAtLeast ? 'at least ' : ''}${d.promptTokens} tokens, which leaves no room for a reply. Please reduce the length of the messages.`,
  },
  output_limit_exceeded: {
    ...invalid,
    param: 'max_tokens',
    message: ({ details: d }) => `max_tokens is too large: ${d.requested}. This model supports at most ${d.limit} completion tokens.`,
  },
  input_too_long: {
    ...invalid,
    code: 'context_length_exceeded',
    param: 'input',
    message: ({ details: d }) =>
      `This model's maximum context length is ${d.limit} tokens, however you requested ${d.requested} tokens (${input(d.item)}). Shorten the input.`,
  },
  token_out_of_vocabulary: {
    ...invalid,
    param: 'input',
    message: ({ details: d }) => `${input(d.item)} holds a token id outside this model's vocabulary (0..${d.limit! - 1}).`,
  },
  nothing_to_embed: {
    ...invalid,
    param: 'input',
    message: ({ details: d }) =>
      d.reason === 'no_tokens'
        ? `${input(d.item)} has no tokens to embed (it is empty or only whitespace for this model's tokenizer).`
        : `${input(d.item)} contains no token this model knows, so it has no embedding; check the text.`,
  },
  dimensions_unsupported: {
    ...invalid,
    param: 'dimensions',
    message: ({ details: d }) =>
      d.shortenable
        ? `dimensions: the model \`${d.model}\` produces ${d.limit}-dimensional vectors; ask for at most ${d.limit}.`
        : `dimensions: the model \`${d.model}\` produces ${d.limit}-dimensional vectors and does not support shortening them; omit \`dimensions\` or send ${d.limit}.`,
  },
  invalid_api_key: { status: 401, type: 'invalid_request_error' },
  model_not_found: {
    status: 404,
    type: 'invalid_request_error',
    param: 'model',
    message: ({ details }) => `The model \`${details.model}\` does not exist. GET /v1/models lists the models this server has.`,
  },
  route_not_found: { status: 404, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  // OpenAI clients retry 429; there is no 529 in this dialect.
  overloaded: server(429),
  internal: { ...server(500), code: 'internal_error' },
  worker_failed: server(500),
  model_unavailable: server(503),
  shutting_down: server(503),
  timeout: { ...server(504), code: 'request_timeout' },
};

const envelope = (message: string, type: string, param: string | null, code: string) => ({ error: { message, type, param, code } });

/** The OpenAI envelope rendered from `table` (this dialect's, or one with other field names: Responses). */
export function openAiDialect(table: Record<ErrorCode, Row>): ErrorDialect {
  return {
    name: 'openai',
    render(error, _requestId) {
      const row = table[error.code];
      const message = row.message?.(error) ?? error.message;
      const param = error.param ?? (typeof row.param === 'function' ? row.param(error) : row.param) ?? null;
      return { status: row.status, body: envelope(message, row.type, param, row.code ?? error.code) };
    },
  };
}

export const openAiErrors: ErrorDialect = openAiDialect(OPENAI_ERRORS);

/** The envelope of answers given before routing (shared/connection.ts) on this dialect's paths (./plugin.ts). */
export const openAiPaths: PathDialect = {
  prefixes: ['/v1/chat/completions', '/v1/embeddings', '/v1/engines/'],
  envelope: ({ message, type, code }) => envelope(message, type, null, code),
};

/**
 * Errors of the retrieval routes. TEI's own routes (and TEI-shaped bodies on the shared paths) answer
 * in TEI's envelope `{"error": M, "error_type": T}` with TEI's statuses (router/src/http/server.rs:
 * validation 413, tokenizer 422, empty 400, overloaded 429, backend 424, unhealthy 503); the rest (the
 * Cohere / Jina / vLLM / llama-server shapes) in the OpenAI envelope, as vLLM and llama-server answer
 * them. test/http/retrieval.test.ts proves the TEI table complete.
 */
import { CoreError, isCoreError } from '../../core/errors.js';
import type { PathDialect } from '../shared/connection.js';
import { HttpError, type ErrorCode, type ErrorDialect } from '../shared/errors.js';

/** TEI's error types, as it spells them on the wire. */
export type TeiErrorType = 'validation' | 'tokenizer' | 'empty' | 'overloaded' | 'backend' | 'unhealthy';

interface Row {
  status: number;
  type: TeiErrorType;
}

/** A body TEI would not deserialise: axum answers 422 Unprocessable Entity. */
const unprocessable: Row = { status: 422, type: 'validation' };
/** TEI's own validation errors (too long, too many, bad dimensions) are 413. */
const validation: Row = { status: 413, type: 'validation' };

export const TEI_ERRORS: Record<ErrorCode, Row> = {
  invalid_request: unprocessable,
  invalid_json: { status: 400, type: 'validation' },
  unsupported_feature: unprocessable,
  model_mismatch: unprocessable,
  wrong_model_task: unprocessable,
  template_rejected: unprocessable,
  image_input_unsupported: unprocessable,
  image_unreadable: unprocessable,
  schema_unsupported: unprocessable,
  prompt_too_long: validation,
  output_limit_exceeded: validation,
  input_too_long: validation,
  dimensions_unsupported: validation,
  token_out_of_vocabulary: { status: 422, type: 'tokenizer' },
  nothing_to_embed: { status: 400, type: 'empty' },
  invalid_api_key: { status: 401, type: 'validation' },
  model_not_found: { status: 404, type: 'validation' },
  route_not_found: { status: 404, type: 'validation' },
  body_too_large: { status: 413, type: 'validation' },
  unsupported_media_type: { status: 415, type: 'validation' },
  overloaded: { status: 429, type: 'overloaded' },
  internal: { status: 424, type: 'backend' },
  worker_failed: { status: 424, type: 'backend' },
  timeout: { status: 504, type: 'backend' },
  model_unavailable: { status: 503, type: 'unhealthy' },
  shutting_down: { status: 503, type: 'unhealthy' },
};

const envelope = (error: string, errorType: string) => ({ error, error_type: errorType });

export const teiErrors: ErrorDialect = {
  name: 'tei',
  render(error) {
    const row = TEI_ERRORS[error.code];
    return { status: row.status, body: envelope(error.message, row.type) };
  },
};

/** Paths only TEI's clients call: answers given before routing there are in TEI's envelope. */
export const teiPaths: PathDialect = {
  prefixes: ['/embed', '/decode', '/info'],
  envelope: ({ message }) => envelope(message, 'validation'),
};

/** Codes an embedding call raises about one of its inputs ("Input 3 is ..."). */
const INPUT_CODES = new Set(['input_too_long', 'nothing_to_embed', 'token_out_of_vocabulary']);

/**
 * An error about one input of an embedding call, worded for the field the client sent it in
 * (`documents[3]`, `query`, `texts[0]`): the OpenAI envelope gets a 400 naming the field; TEI's keeps
 * the code (so its status is TEI's) with the field in the message. Other errors pass as they are.
 */
export function located(error: unknown, field: string, indexed: boolean, tei: boolean, itemOf?: (item: number) => number): unknown {
  if (!isCoreError(error) || !INPUT_CODES.has(error.code)) return error;
  // The call held a slice of the body's list: its item i is the body's itemOf(i).
  if (itemOf && error.details.item !== undefined) return located(new CoreError(error.code, error.message, { ...error.details, item: itemOf(error.details.item) }), field, indexed, tei);
  // A cross-encoder's query that leaves no room for a document: its message names the query already.
  if (error.message.startsWith('query ')) return tei ? error : new HttpError('invalid_request', error.message, 'query');
  const name = indexed && error.details.item !== undefined ? `${field}[${error.details.item}]` : field;
  const message = error.message.replace(/^(Input|Token) \d+/, name);
  return tei ? new CoreError(error.code, message, error.details) : new HttpError('invalid_request', message, field);
}

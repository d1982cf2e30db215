import { describe, expect, it } from 'vitest';
import { ERROR_KINDS, ERROR_TABLE, ServiceError, toServiceError } from '../../src/errors.js';
import { errorBody } from '../../src/http/shared/dialect.js';

// The Anthropic status table of ../shared/API.md.
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error',
};

describe('error table', () => {
  it('has a row for every kind and no other', () => {
    expect(Object.keys(ERROR_TABLE).sort()).toEqual([...ERROR_KINDS].sort());
  });

  it.each(ERROR_KINDS)('%s maps to a documented Anthropic status/type pair and an OpenAI status', (kind) => {
    const row = ERROR_TABLE[kind];
    if (row.anthropicStatus in ANTHROPIC_TYPES) expect(row.anthropicType).toBe(ANTHROPIC_TYPES[row.anthropicStatus]);
    else expect([415, 503]).toContain(row.anthropicStatus); // statuses the Anthropic table does not name
    expect(row.openaiStatus).toBeGreaterThanOrEqual(400);
    expect(['invalid_request_error', 'server_error']).toContain(row.openaiType);
  });

  it('overloaded is 529 for Anthropic clients and 429 for OpenAI clients', () => {
    const error = new ServiceError({ code: 'overloaded', kind: 'overloaded', message: 'busy' });
    expect(errorBody('anthropic', error, 'req_1')).toEqual({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'busy' }, request_id: 'req_1' } });
    expect(errorBody('openai', error, 'req_1')).toEqual({ status: 429, body: { error: { message: 'busy', type: 'server_error', param: null, code: 'overloaded' } } });
  });

  it('hides the message of unexpected errors', () => {
    const error = toServiceError(new Error('ENOENT: /secret/path/model.onnx'));
    expect(error.kind).toBe('internal');
    expect(error.message).not.toMatch(/secret/);
  });

  it('round-trips through the worker wire shape', () => {
    const error = new ServiceError({ code: 'x', kind: 'not_found', message: 'm', param: 'p' });
    expect(new ServiceError(JSON.parse(JSON.stringify(error.toJSON())))).toMatchObject({ code: 'x', kind: 'not_found', message: 'm', param: 'p' });
  });
});

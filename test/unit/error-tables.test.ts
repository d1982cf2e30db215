import { describe, expect, it } from 'vitest';
import { CoreError, CORE_ERROR_CODES } from '../../src/core/errors.js';
import { ANTHROPIC_ERRORS, anthropicErrors } from '../../src/http/anthropic/errors.js';
import { OPENAI_ERRORS, openAiErrors } from '../../src/http/openai/errors.js';
import { responsesErrors } from '../../src/http/responses/errors.js';
import { classify, ERROR_CODES, HTTP_ERROR_CODES, HttpError } from '../../src/http/shared/errors.js';

// The Anthropic status table of ../shared/API.md, plus the two statuses it does not name (415, 503).
const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error',
  413: 'request_too_large', 415: 'invalid_request_error', 429: 'rate_limit_error', 500: 'api_error', 503: 'overloaded_error', 504: 'timeout_error',
  529: 'overloaded_error',
};

/** An error of each code with every detail a table may word from. */
const sample = (code: (typeof ERROR_CODES)[number]) =>
  (CORE_ERROR_CODES as readonly string[]).includes(code)
    ? new CoreError(code as (typeof CORE_ERROR_CODES)[number], 'neutral', { model: 'm', limit: 10, requested: 7, promptTokens: 5, item: 2, reason: 'no_tokens', shortenable: true })
    : new HttpError(code as (typeof HTTP_ERROR_CODES)[number], 'http message');

describe('the Anthropic error table', () => {
  it('maps every code, core and HTTP, and nothing else', () => {
    expect(Object.keys(ANTHROPIC_ERRORS).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each([...ERROR_CODES])('%s: a documented status/type pair, a message, the envelope', (code) => {
    const { status, body } = anthropicErrors.render(classify(sample(code)), 'req_1') as { status: number; body: any };
    expect(ANTHROPIC_TYPES[status]).toBe(body.error.type);
    expect(body).toEqual({ type: 'error', error: { type: expect.any(String), message: expect.any(String) }, request_id: 'req_1' });
    expect(body.error.message).not.toMatch(/undefined|NaN/);
  });

  it('words the context errors as Anthropic does', () => {
    const words = (code: 'prompt_too_long' | 'output_limit_exceeded') => (anthropicErrors.render(classify(sample(code)), 'r') as { body: any }).body.error.message;
    expect(words('prompt_too_long')).toBe('prompt is too long: 5 tokens > 9 maximum');
    expect(words('output_limit_exceeded')).toBe('max_tokens: 7 > 10, which is the maximum allowed number of output tokens for m');
  });
});

describe('the OpenAI error table', () => {
  it('maps every code, core and HTTP, and nothing else', () => {
    expect(Object.keys(OPENAI_ERRORS).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each([...ERROR_CODES])('%s: a 4xx/5xx status, a known type, the envelope', (code) => {
    const { status, body } = openAiErrors.render(classify(sample(code)), 'req_1') as { status: number; body: any };
    expect(status).toBeGreaterThanOrEqual(400);
    expect(['invalid_request_error', 'server_error']).toContain(body.error.type);
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(body.error.message).not.toMatch(/undefined|NaN/);
  });

  it('words a prompt too long, with a lower bound of its length when counting stopped early', () => {
    const render = (details: object) =>
      (openAiErrors.render(classify(new CoreError('prompt_too_long', 'neutral', { limit: 10, ...details })), 'r') as { body: any }).body.error.message;
    expect(render({ promptTokens: 12, promptTokensAtLeast: true })).toMatch(/resulted in at least 12 tokens/);
    expect(render({ promptTokens: 12 })).toMatch(/resulted in 12 tokens/);
  });

  it('names the input at fault the way OpenAI does', () => {
    const { body } = openAiErrors.render(classify(sample('input_too_long')), 'r') as { body: any };
    expect(body.error).toEqual({
      message: "This model's maximum context length is 10 tokens, however you requested 7 tokens (input[2]). Shorten the input.",
      type: 'invalid_request_error', param: 'input', code: 'context_length_exceeded',
    });
  });
});

describe('classification', () => {
  it('overloaded is 529 for Anthropic clients and 429 for OpenAI clients', () => {
    const known = classify(new CoreError('overloaded', 'busy'));
    expect(anthropicErrors.render(known, 'req_1')).toEqual({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'busy' }, request_id: 'req_1' } });
    expect(openAiErrors.render(known, 'req_1')).toEqual({ status: 429, body: { error: { message: 'busy', type: 'server_error', param: null, code: 'overloaded' } } });
  });

  it('hides the message of unexpected errors', () => {
    const known = classify(new Error('ENOENT: /secret/path/model.onnx'));
    expect(known.code).toBe('internal');
    expect(known.message).not.toMatch(/secret/);
  });

  it('maps Fastify framework errors by their code', () => {
    expect(classify(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 })).code).toBe('body_too_large');
    expect(classify(Object.assign(new Error('Unexpected token'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 })).code).toBe('invalid_json');
  });

  it('round-trips a core error through the worker wire shape', () => {
    const error = new CoreError('input_too_long', 'm', { item: 3, limit: 8, requested: 9 });
    expect(CoreError.from(JSON.parse(JSON.stringify(error.toData())))).toMatchObject({ code: 'input_too_long', message: 'm', details: { item: 3, limit: 8, requested: 9 } });
  });
});

describe('a schema constrained decoding cannot use, in each dialect\'s own field names', () => {
  const problem = { feature: 'minimum', schemaPath: '/properties/n', problem: 'minimum (10) leaves no integer at or below the maximum (1): no value satisfies the schema' };
  const render = (dialect: typeof openAiErrors, details: object) => (dialect.render(classify(new CoreError('schema_unsupported', 'neutral', details)), 'r') as { status: number; body: any });

  it.each([
    [openAiErrors, { reason: 'output' }, 'response_format', 'response_format.json_schema.schema'],
    [openAiErrors, { reason: 'tool', item: 1 }, 'tools[1].function.parameters', 'tools[1].function.parameters'],
    [responsesErrors, { reason: 'output' }, 'text.format', 'text.format.schema'],
    [responsesErrors, { reason: 'tool', item: 1 }, 'tools[1].parameters', 'tools[1].parameters'],
    [responsesErrors, { reason: 'tool' }, 'tools', 'tools'],
  ] as const)('%#: param %s, the message names %s, where and why', (dialect, where, param, field) => {
    const { status, body } = render(dialect, { ...where, ...problem });
    expect(status).toBe(400);
    expect(body.error.param).toBe(param);
    expect(body.error.message).toBe(`${field}: at '/properties/n': ${problem.problem}`);
  });

  it('Anthropic: the tool by its index, or the tools when the error is about no one tool', () => {
    const words = (details: object) => (anthropicErrors.render(classify(new CoreError('schema_unsupported', 'neutral', { ...details, ...problem })), 'r') as { body: any }).body.error.message;
    expect(words({ reason: 'tool', item: 0 })).toMatch(/^tools\.0\.input_schema: at '\/properties\/n': minimum \(10\)/);
    expect(words({ reason: 'tool' })).toMatch(/^tools: at /);
    expect(words({ reason: 'output' })).toMatch(/^output_config\.format\.schema: at /);
  });
});

/**
 * The API reference (issue 31): /openapi.json is an OpenAPI 3.1 document listing every route the
 * app registered, structurally sound (every operation answers, every $ref resolves, every schema is
 * an object), and the request bodies the suite sends validate against its request schemas (ajv,
 * JSON Schema 2020-12) and are accepted by the server itself. /docs is the page that reads it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CONTENT_SECURITY_POLICY } from '../../src/web/plugin.js';
import { openApiPath } from '../../src/http/reference/openapi.js';
import { ANTHROPIC_HEADERS, JSON_HEADERS, fakeApp } from '../helpers/inject.js';

type Json = Record<string, any>;
let app: FastifyInstance;
let doc: Json;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

beforeAll(async () => {
  ({ app } = await fakeApp());
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  doc = res.json();
});
afterAll(() => app.close());

/** Every value under a node, with its JSON pointer. */
function* walk(node: unknown, pointer = ''): Generator<[string, unknown]> {
  yield [pointer, node];
  if (node && typeof node === 'object') for (const [k, v] of Object.entries(node)) yield* walk(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: any = root;
  for (const part of ref.slice(2).split('/').filter((p) => p !== '')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

/** The operation's request schema, as a standalone schema ajv can compile (refs point into the document). */
function requestValidator(path: string, method: string) {
  const schema = doc.paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema;
  expect(schema, `${method.toUpperCase()} ${path} has a request schema`).toBeDefined();
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: 'https://reference.local/openapi.json', components: doc.components }, 'https://reference.local/openapi.json');
  const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/', '"https://reference.local/openapi.json#/'));
  return ajv.compile(rewritten);
}

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document with info and paths', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(doc.paths).length).toBeGreaterThan(10);
  });

  it('lists every route the app registered (from the same collector and from printRoutes)', () => {
    const recorded = app.registeredRoutes;
    expect(recorded.length).toBeGreaterThan(20);
    for (const { method, url } of recorded) expect(doc.paths[openApiPath(url)]?.[method.toLowerCase()], `${method} ${url}`).toBeDefined();
    // printRoutes, independently of the collector: as many method-and-route pairs as the document has operations.
    const printed = [...app.printRoutes({ commonPrefix: false }).matchAll(/\(([A-Z, ]+)\)$/gm)].flatMap((m) => m[1]!.split(', ').filter((x) => x !== 'HEAD'));
    const operations = Object.values<Json>(doc.paths).flatMap((item) => Object.keys(item));
    expect(operations.length).toBe(printed.length);
    expect(recorded.length).toBe(printed.length);
    for (const route of ['post /v1/messages', 'post /v1/chat/completions', 'post /v1/embeddings', 'post /v1/responses', 'post /v1/rerank', 'get /info', 'get /docs', 'get /openapi.json', 'get /v1/models/{path}']) {
      const [method, path] = route.split(' ') as [string, string];
      expect(doc.paths[path]?.[method], route).toBeDefined();
    }
  });

  it('is structurally valid: every operation has responses, path parameters are declared, every $ref resolves, every schema is an object', () => {
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      expect(path.startsWith('/')).toBe(true);
      for (const [method, op] of Object.entries<Json>(item)) {
        expect(METHODS).toContain(method);
        expect(Object.keys(op.responses ?? {}).length, `${method} ${path} responses`).toBeGreaterThan(0);
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          expect(status).toMatch(/^(default|[1-5]XX|[1-5]\d\d)$/);
          expect(typeof response.description).toBe('string');
        }
        const declared = new Set((op.parameters ?? []).filter((p: Json) => p.in === 'path').map((p: Json) => p.name));
        for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) expect(declared.has(name), `${method} ${path} declares {${name}}`).toBe(true);
      }
    }
    for (const [pointer, node] of walk(doc)) {
      if (node && typeof node === 'object' && typeof (node as Json).$ref === 'string') {
        expect(resolvePointer(doc, (node as Json).$ref), `${pointer}: ${(node as Json).$ref}`).toBeTypeOf('object');
      }
      if (/\/schema$/.test(pointer) || /^\/components\/schemas\/[^/]+$/.test(pointer)) {
        expect(node !== null && typeof node === 'object' && !Array.isArray(node), `${pointer} is a schema object`).toBe(true);
      }
    }
    // Each component schema compiles as JSON Schema 2020-12.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema({ $id: 'https://reference.local/openapi.json', components: doc.components }, 'https://reference.local/openapi.json');
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`https://reference.local/openapi.json#/components/schemas/${name}`), name).not.toThrow();
    }
  });

  it('marks the main routes with their request schema, their 200 and their dialect error envelope', () => {
    const messages = doc.paths['/v1/messages'].post;
    expect(messages.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/AnthropicMessage');
    expect(messages.responses['4XX'].content['application/json'].schema.$ref).toBe('#/components/schemas/AnthropicError');
    expect(doc.paths['/v1/chat/completions'].post.responses['5XX'].content['application/json'].schema.$ref).toBe('#/components/schemas/OpenAIError');
    expect(doc.paths['/embed'].post.responses['4XX'].content['application/json'].schema.$ref).toBe('#/components/schemas/TeiError');
    expect(doc.components.schemas.MessagesRequest.required).toEqual(expect.arrayContaining(['model', 'messages', 'max_tokens']));
  });

  // Bodies as the suite sends them (anthropic.test.ts, openai.test.ts, responses.test.ts, retrieval.test.ts).
  const samples: Array<[string, string, Record<string, string>, unknown]> = [
    ['/v1/messages', 'post', ANTHROPIC_HEADERS, { model: 'fake-chat', max_tokens: 5, messages: [{ role: 'user', content: 'one two three' }] }],
    ['/v1/messages', 'post', ANTHROPIC_HEADERS, { model: 'fake-chat', max_tokens: 5, system: 'Be brief.', stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'one two' }] }],
    ['/v1/chat/completions', 'post', JSON_HEADERS, { model: 'fake-chat', messages: [{ role: 'system', content: 'Rule one.' }, { role: 'user', content: 'hi there' }], max_tokens: 5, temperature: 0 }],
    ['/v1/chat/completions', 'post', JSON_HEADERS, { model: 'fake-chat', messages: [{ role: 'user', content: 'one two three' }], stream: true, stream_options: { include_usage: true } }],
    ['/v1/embeddings', 'post', JSON_HEADERS, { model: 'fake-embed', input: ['a b', 'c'] }],
    ['/v1/embeddings', 'post', JSON_HEADERS, { model: 'fake-embed', input: 'a b c', encoding_format: 'base64' }],
    ['/v1/responses', 'post', JSON_HEADERS, { model: 'fake-chat', input: 'one two three', stream: true }],
    ['/v1/responses', 'post', JSON_HEADERS, { model: 'fake-chat', input: 'one two three four five six', max_output_tokens: 2, truncation: 'auto' }],
    ['/v1/rerank', 'post', JSON_HEADERS, { model: 'fake-embed', query: 'a b', documents: ['x', 'y z', 'p q r s'], top_n: 2, return_documents: true }],
  ];

  it.each(samples)('a body the suite sends to %s validates against the document and is served', async (path, method, headers, body) => {
    const validate = requestValidator(path, method);
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    const res = await app.inject({ method: method.toUpperCase() as 'POST', url: path, headers, payload: JSON.stringify(body) });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('rejects, as the server does, a body the server refuses', async () => {
    const validate = requestValidator('/v1/messages', 'post');
    expect(validate({ model: 'fake-chat', messages: [{ role: 'user', content: 'x' }] })).toBe(false); // no max_tokens
    const rerank = requestValidator('/v1/rerank', 'post');
    expect(rerank({ query: 'q', documents: [] })).toBe(false);
  });
});

describe('GET /docs', () => {
  it('is the reference page, HTML under the strict CSP, with its script served', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    const script = /src="(\/web\/docs\.js\?v=[^"]+)"/.exec(res.body)?.[1];
    expect(script).toBeDefined();
    const js = await app.inject({ method: 'GET', url: script! });
    expect(js.statusCode).toBe(200);
    expect(js.body).toContain('/openapi.json');
    expect(js.body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });
});

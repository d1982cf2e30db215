/**
 * The API reference (issue 31): an OpenAPI 3.1 document built from the zod schemas the routes
 * validate their bodies with (converted by `z.toJSONSchema`, io "input") and from the response
 * schemas below (io "output"). One source of truth: nothing here repeats a request schema by hand.
 * The path list is not a hand list either: `collectRoutes` (called by app.ts right after Fastify is
 * created) records every route any plugin registers, and the document lists each of them; a route
 * with no known body schema is listed with a description saying so.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { countTokensSchema, messagesSchema } from '../anthropic/schema.js';
import { chatSchema } from '../openai/chat-schema.js';
import { embeddingsSchema } from '../openai/schema.js';
import { compactSchema, inputTokensSchema, listQuerySchema, responsesSchema } from '../responses/schema.js';
import { rerankSchema } from '../retrieval/cohere/schema.js';
import { llamaTokenizeSchema } from '../retrieval/llama/schema.js';
import { detokenizeSchema } from '../retrieval/schema.js';
import { teiDecodeSchema, teiEmbedSchema, teiRerankSchema, teiTokenizeSchema } from '../retrieval/tei/schema.js';
import { scoreSchema, vllmChatTokenizeSchema, vllmTokenizeSchema } from '../retrieval/vllm/schema.js';
import { modelAdminSchema } from '../shared/model-admin-plugin.js';

/** One registered route as Fastify saw it (HEAD routes Fastify adds for GET are left out). */
export interface RouteRecord {
  method: string;
  url: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered on the app, recorded by collectRoutes. */
    registeredRoutes: RouteRecord[];
  }
}

/** Records every route registered from now on (on the root and in every plugin). Call it before any route or plugin. */
export function collectRoutes(app: FastifyInstance): void {
  const routes: RouteRecord[] = [];
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (options) => {
    const methods = Array.isArray(options.method) ? options.method : [options.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      if (!routes.some((r) => r.method === method && r.url === options.url)) routes.push({ method, url: options.url });
    }
  });
}

/** A Fastify url as an OpenAPI path template: `:id` -> `{id}`, a trailing `*` -> `{path}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

const pathParams = (template: string) => [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

type Json = Record<string, unknown>;

// ---- response schemas (written for the reference; honest about the main fields, not exhaustive) ----

const anthropicUsage = z.object({
  input_tokens: z.number().int(), output_tokens: z.number().int(),
  cache_creation_input_tokens: z.number().int(), cache_read_input_tokens: z.number().int(),
});
const anthropicMessage = z.object({
  id: z.string(), type: z.literal('message'), role: z.literal('assistant'), model: z.string(),
  content: z.array(z.union([
    z.object({ type: z.literal('text'), text: z.string() }),
    z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
    z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.record(z.string(), z.unknown()) }),
  ])),
  stop_reason: z.string().nullable(), stop_sequence: z.string().nullable(), usage: anthropicUsage,
}).meta({ description: 'An Anthropic Messages API message (non-streaming answer; with stream: true the same arrives as SSE events).' });
const anthropicCount = z.object({ input_tokens: z.number().int() });
const anthropicError = z.object({
  type: z.literal('error'), error: z.object({ type: z.string(), message: z.string() }), request_id: z.string(),
}).meta({ description: "Anthropic's error envelope." });

const openAiUsage = z.object({
  prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int() }).partial().optional(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int() }).partial().optional(),
});
const chatCompletion = z.object({
  id: z.string(), object: z.literal('chat.completion'), created: z.number().int(), model: z.string(), system_fingerprint: z.string().optional(),
  choices: z.array(z.object({
    index: z.number().int(),
    message: z.object({
      role: z.literal('assistant'), content: z.string().nullable(), refusal: z.null().optional(),
      tool_calls: z.array(z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) })).optional(),
      reasoning_content: z.string().optional(),
    }),
    logprobs: z.unknown().optional(),
    finish_reason: z.string(),
  })),
  usage: openAiUsage,
}).meta({ description: 'An OpenAI chat.completion (with stream: true, chat.completion.chunk SSE events ending in [DONE]).' });
const embeddingList = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ object: z.literal('embedding'), index: z.number().int(), embedding: z.union([z.array(z.number()), z.string()]) })),
  model: z.string(),
  usage: z.object({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
});
const openAiError = z.object({
  error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }),
}).meta({ description: "OpenAI's error envelope (the Responses dialect, the shared routes and the vLLM / Cohere shapes use it too)." });

const responsesUsage = z.object({
  input_tokens: z.number().int(), output_tokens: z.number().int(), total_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }).partial().optional(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }).partial().optional(),
});
const outputItem = z.union([
  z.object({
    id: z.string(), type: z.literal('message'), role: z.literal('assistant'), status: z.string(),
    content: z.array(z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.unknown()).optional(), logprobs: z.array(z.unknown()).optional() })),
  }),
  z.object({ id: z.string(), type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string(), status: z.string().optional(), namespace: z.string().optional() }),
  z.object({ id: z.string(), type: z.literal('reasoning'), summary: z.array(z.unknown()), content: z.array(z.unknown()).optional(), encrypted_content: z.string().nullable().optional() }),
  z.object({ id: z.string(), type: z.string() }).loose(),
]);
const responseObject = z.object({
  id: z.string(), object: z.literal('response'), created_at: z.number().int(),
  status: z.enum(['in_progress', 'completed', 'incomplete', 'failed']),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  incomplete_details: z.object({ reason: z.string() }).nullable(),
  instructions: z.unknown(), max_output_tokens: z.number().int().nullable(), metadata: z.record(z.string(), z.string()),
  model: z.string(), output: z.array(outputItem), parallel_tool_calls: z.boolean(), previous_response_id: z.string().nullable(),
  store: z.boolean(), temperature: z.number().nullable(), top_p: z.number().nullable(), tools: z.array(z.unknown()),
  tool_choice: z.unknown(), truncation: z.string(), usage: responsesUsage.nullable(),
}).loose().meta({ description: 'An OpenAI Responses API response object (with stream: true, typed SSE events: response.created ... response.completed).' });
const responseInputTokens = z.object({ object: z.literal('response.input_tokens'), input_tokens: z.number().int() });
const responseCompaction = z.object({
  id: z.string(), object: z.literal('response.compaction'), created_at: z.number().int(),
  output: z.array(z.object({ id: z.string(), type: z.string() }).loose()), usage: responsesUsage,
});
const responseDeleted = z.object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) });
const inputItemList = z.object({
  object: z.literal('list'), data: z.array(z.object({ type: z.string() }).loose()), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean(),
});

const model = z.object({
  id: z.string(), object: z.literal('model'), type: z.literal('model'), created: z.number().int(), created_at: z.string(), owned_by: z.string(),
  display_name: z.string(), max_input_tokens: z.number().int(), max_tokens: z.number().int().nullable(), capabilities: z.unknown(),
  tool_format: z.string().optional().meta({ description: "Chat models: the tool-call format read from the template (hermes, qwen3-xml, llama3-json, harmony, mistral, kimi-k2, glm, deepseek-r1, deepseek-v3.1, deepseek-dsml, minimax-m2, lfm2, gemma4; auto:json, auto:tagged: the form the analysis of the template's renders found; generic: the server's own)" }),
  reasoning_format: z.string().optional().meta({ description: 'Chat models: how the model writes thoughts (think-tags, mistral-think, gemma-channel, harmony; auto-tags: markers the analysis of the template found; none)' }),
}).loose().meta({ description: 'A model as both OpenAI and Anthropic clients read it, with its load state.' });
const modelList = z.object({ object: z.literal('list'), data: z.array(model) }).loose();

const modelAdminResult = z.object({
  success: z.literal(true), model: z.string(), state: z.enum(['loaded', 'loading', 'unloaded']), loaded: z.boolean(),
  expires_at: z.string().nullable().meta({ description: 'When the model unloads if left idle (null: pinned, or no idle unload)' }),
}).meta({ description: 'The model loaded or unloaded, and its state now.' });

const rerankResult = z.object({
  id: z.string(), model: z.string(),
  results: z.array(z.object({ index: z.number().int(), relevance_score: z.number(), document: z.object({ text: z.string() }).optional() })),
  meta: z.unknown().optional(), usage: z.object({ total_tokens: z.number().int() }),
}).meta({ description: 'The Cohere v2 / Jina / vLLM / llama-server rerank answer.' });
const teiRerankResult = z.array(z.object({ index: z.number().int(), score: z.number(), text: z.string().optional() })).meta({ description: "TEI's rerank answer (a body with `texts` on /rerank)." });
const scoreList = z.object({
  id: z.string(), object: z.literal('list'), created: z.number().int(), model: z.string(),
  data: z.array(z.object({ index: z.number().int(), object: z.literal('score'), score: z.number() })),
}).loose();
const tokenizeResult = z.union([
  z.object({ count: z.number().int(), max_model_len: z.number().int(), tokens: z.array(z.number().int()), token_strs: z.array(z.string()).nullable() }).meta({ description: "vLLM's answer (a body with `prompt` or `messages`)." }),
  z.object({ tokens: z.union([z.array(z.number().int()), z.array(z.object({ id: z.number().int(), piece: z.string() }))]) }).meta({ description: "llama-server's answer (a body with `content`)." }),
  z.array(z.array(z.object({ id: z.number().int(), text: z.string(), special: z.boolean(), start: z.number().int().nullable(), stop: z.number().int().nullable() }))).meta({ description: "TEI's answer (a body with `inputs`): the tokens of each input." }),
]);
const detokenizeResult = z.union([z.object({ prompt: z.string() }), z.object({ content: z.string() })]);
const teiError = z.object({ error: z.string(), error_type: z.string() }).meta({ description: "TEI's error envelope." });

const RESPONSE_SCHEMAS = {
  AnthropicMessage: anthropicMessage, AnthropicTokenCount: anthropicCount, AnthropicError: anthropicError,
  ChatCompletion: chatCompletion, EmbeddingList: embeddingList, OpenAIError: openAiError,
  Response: responseObject, ResponseInputTokens: responseInputTokens, ResponseCompaction: responseCompaction,
  ResponseDeleted: responseDeleted, ResponseInputItemList: inputItemList, Model: model, ModelList: modelList,
  RerankResult: rerankResult, TeiRerankResult: teiRerankResult, ScoreList: scoreList, TokenizeResult: tokenizeResult,
  DetokenizeResult: detokenizeResult, TeiError: teiError, ModelAdminResult: modelAdminResult,
} satisfies Record<string, z.ZodType>;

/** The request body schemas, each the very zod schema its route parses with (several where the body's shape picks one). */
const REQUEST_SCHEMAS = {
  MessagesRequest: [messagesSchema], CountTokensRequest: [countTokensSchema], ChatCompletionRequest: [chatSchema],
  EmbeddingsRequest: [embeddingsSchema], ResponsesRequest: [responsesSchema], ResponsesInputTokensRequest: [inputTokensSchema],
  ResponsesCompactRequest: [compactSchema], RerankRequest: [rerankSchema, teiRerankSchema], ScoreRequest: [scoreSchema],
  TokenizeRequest: [vllmTokenizeSchema, vllmChatTokenizeSchema, llamaTokenizeSchema, teiTokenizeSchema],
  DetokenizeRequest: [detokenizeSchema], TeiDecodeRequest: [teiDecodeSchema], TeiEmbedRequest: [teiEmbedSchema],
  ModelAdminRequest: [modelAdminSchema],
} satisfies Record<string, z.ZodType[]>;

type SchemaName = keyof typeof RESPONSE_SCHEMAS | keyof typeof REQUEST_SCHEMAS;
type Envelope = 'anthropic' | 'openai' | 'tei' | 'openai-or-tei' | 'shared' | 'none';

interface Operation {
  summary: string;
  request?: keyof typeof REQUEST_SCHEMAS;
  /** The 200 body: a schema name, or a media type with a description for what is not JSON. */
  response?: SchemaName | SchemaName[];
  media?: { type: string; description: string };
  stream?: boolean;
  errors: Envelope;
  query?: z.ZodObject;
}

/** What is known of each route, by `METHOD url` as Fastify registers it. A route missing here is still listed. */
const KNOWN: Record<string, Operation> = {
  'GET /': { summary: 'Server identity (JSON), or the playground page to a browser (Accept: text/html)', media: { type: 'application/json', description: '{"status":"ok","service":...}; text/html to a browser' }, errors: 'shared' },
  'GET /health': { summary: 'Liveness', media: { type: 'application/json', description: '{"status":"ok"}' }, errors: 'shared' },
  'GET /ready': { summary: 'Readiness: 200 when every model has its workers loaded, 503 otherwise', media: { type: 'application/json', description: '{"status":"ready"|"not_ready","models":[...]}' }, errors: 'shared' },
  'GET /metrics': { summary: 'Prometheus metrics', media: { type: 'text/plain', description: 'Prometheus text exposition format' }, errors: 'none' },
  'POST /v1/messages': { summary: 'Anthropic Messages: a chat turn', request: 'MessagesRequest', response: 'AnthropicMessage', stream: true, errors: 'anthropic' },
  'POST /v1/messages/count_tokens': { summary: 'Anthropic: count the prompt tokens of a Messages request', request: 'CountTokensRequest', response: 'AnthropicTokenCount', errors: 'anthropic' },
  'POST /v1/chat/completions': { summary: 'OpenAI chat completions', request: 'ChatCompletionRequest', response: 'ChatCompletion', stream: true, errors: 'openai' },
  'POST /v1/embeddings': { summary: 'OpenAI embeddings', request: 'EmbeddingsRequest', response: 'EmbeddingList', errors: 'openai' },
  'POST /v1/engines/:model/embeddings': { summary: 'OpenAI embeddings (legacy engine path; the model from the path)', request: 'EmbeddingsRequest', response: 'EmbeddingList', errors: 'openai' },
  'POST /v1/engines/:org/:model/embeddings': { summary: 'OpenAI embeddings (legacy engine path with an organisation)', request: 'EmbeddingsRequest', response: 'EmbeddingList', errors: 'openai' },
  'POST /v1/responses': { summary: 'OpenAI Responses: a turn, stored for previous_response_id', request: 'ResponsesRequest', response: 'Response', stream: true, errors: 'openai' },
  'POST /v1/responses/input_tokens': { summary: 'OpenAI Responses: count input tokens', request: 'ResponsesInputTokensRequest', response: 'ResponseInputTokens', errors: 'openai' },
  'POST /v1/responses/compact': { summary: 'OpenAI Responses: compact a conversation', request: 'ResponsesCompactRequest', response: 'ResponseCompaction', errors: 'openai' },
  'GET /v1/responses/:id': { summary: 'OpenAI Responses: retrieve a stored response', response: 'Response', errors: 'openai' },
  'GET /v1/responses/:id/input_items': { summary: 'OpenAI Responses: the input items of a stored response', response: 'ResponseInputItemList', errors: 'openai', query: listQuerySchema },
  'DELETE /v1/responses/:id': { summary: 'OpenAI Responses: delete a stored response', response: 'ResponseDeleted', errors: 'openai' },
  'POST /v1/responses/:id/cancel': { summary: 'OpenAI Responses: cancel (background responses are not served, so always an error)', errors: 'openai' },
  'GET /v1/models': { summary: 'The models, with their load state', response: 'ModelList', errors: 'shared' },
  'GET /v1/models/*': { summary: 'One model', response: 'Model', errors: 'shared' },
  'POST /models/load': { summary: "Load a model now (llama-server's router spelling; off with --model-admin false)", request: 'ModelAdminRequest', response: 'ModelAdminResult', errors: 'openai' },
  'POST /v1/models/load': { summary: 'Load a model now (as POST /models/load)', request: 'ModelAdminRequest', response: 'ModelAdminResult', errors: 'openai' },
  'POST /models/unload': { summary: 'Unload a model now; one in use is refused (400). Off with --model-admin false', request: 'ModelAdminRequest', response: 'ModelAdminResult', errors: 'openai' },
  'POST /v1/models/unload': { summary: 'Unload a model now (as POST /models/unload)', request: 'ModelAdminRequest', response: 'ModelAdminResult', errors: 'openai' },
  'POST /v1/rerank': { summary: 'Rerank documents against a query (Cohere / Jina / vLLM / llama-server shapes)', request: 'RerankRequest', response: 'RerankResult', errors: 'openai' },
  'POST /v2/rerank': { summary: 'Rerank (Cohere v2 path)', request: 'RerankRequest', response: 'RerankResult', errors: 'openai' },
  'POST /rerank': { summary: 'Rerank (TEI `texts` or the Cohere / vLLM `documents` shape)', request: 'RerankRequest', response: ['RerankResult', 'TeiRerankResult'], errors: 'openai-or-tei' },
  'POST /score': { summary: "vLLM's score API", request: 'ScoreRequest', response: 'ScoreList', errors: 'openai' },
  'POST /v1/score': { summary: "vLLM's score API", request: 'ScoreRequest', response: 'ScoreList', errors: 'openai' },
  'POST /tokenize': { summary: 'Tokenize (vLLM `prompt`/`messages`, llama-server `content`, TEI `inputs`)', request: 'TokenizeRequest', response: 'TokenizeResult', errors: 'openai-or-tei' },
  'POST /detokenize': { summary: 'Detokenize (vLLM answers {prompt}, llama-server {content})', request: 'DetokenizeRequest', response: 'DetokenizeResult', errors: 'openai' },
  'POST /decode': { summary: "TEI's decode", request: 'TeiDecodeRequest', media: { type: 'application/json', description: 'One string per list of ids' }, errors: 'tei' },
  'POST /embed': { summary: "TEI's embed", request: 'TeiEmbedRequest', media: { type: 'application/json', description: 'One vector (array of numbers) per input' }, errors: 'tei' },
  'POST /': { summary: "TEI's embed at the base URL", request: 'TeiEmbedRequest', media: { type: 'application/json', description: 'One vector (array of numbers) per input' }, errors: 'tei' },
  'GET /info': { summary: "TEI's info about the configured embedding model", media: { type: 'application/json', description: "TEI's info object" }, errors: 'tei' },
  'GET /playground': { summary: 'The playground page', media: { type: 'text/html', description: 'The page' }, errors: 'none' },
  'GET /web/:name': { summary: 'A playground asset (script, style sheet, icon)', media: { type: 'application/octet-stream', description: 'The asset, typed by its extension' }, errors: 'shared' },
  'GET /openapi.json': { summary: 'This document', media: { type: 'application/json', description: 'OpenAPI 3.1' }, errors: 'none' },
  'GET /docs': { summary: 'The API reference page (reads this document)', media: { type: 'text/html', description: 'The page' }, errors: 'none' },
};

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });

/** A zod schema as a standalone JSON Schema (2020-12); one zod cannot express becomes `{}` with the reason. */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output', name: string): Json {
  try {
    const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
    delete converted.$schema;
    // Local definitions move with the schema into components: point their references there.
    return JSON.parse(JSON.stringify(converted).replaceAll('"#/$defs/', `"#/components/schemas/${name}/$defs/`)) as Json;
  } catch (error) {
    return { description: `Not convertible to JSON Schema: ${(error as Error).message}` };
  }
}

function errorContent(envelope: Envelope): Json | undefined {
  const schema =
    envelope === 'anthropic' ? ref('AnthropicError')
      : envelope === 'openai' ? ref('OpenAIError')
        : envelope === 'tei' ? ref('TeiError')
          : envelope === 'openai-or-tei' ? { anyOf: [ref('OpenAIError'), ref('TeiError')] }
            : envelope === 'shared' ? { anyOf: [ref('OpenAIError'), ref('AnthropicError')] }
              : undefined;
  return schema && { 'application/json': { schema } };
}

function operation(method: string, url: string, template: string): Json {
  const known = KNOWN[`${method} ${url}`];
  const parameters: Json[] = pathParams(template).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  if (!known) {
    return {
      summary: `${method} ${url}`,
      description: 'A route the server registers with no request or response schema in the reference.',
      ...(parameters.length ? { parameters } : {}),
      responses: { default: { description: 'See the route\'s documentation.' } },
    };
  }
  if (known.query) {
    const query = jsonSchemaOf(known.query, 'input', 'query') as { properties?: Record<string, Json> };
    for (const [name, schema] of Object.entries(query.properties ?? {})) parameters.push({ name, in: 'query', required: false, schema });
  }
  const okContent: Json = {};
  if (known.response) {
    const names = Array.isArray(known.response) ? known.response : [known.response];
    okContent['application/json'] = { schema: names.length === 1 ? ref(names[0]!) : { anyOf: names.map(ref) } };
  } else if (known.media) {
    okContent[known.media.type] = { schema: { description: known.media.description } };
  }
  if (known.stream) okContent['text/event-stream'] = { schema: { type: 'string', description: 'Server-sent events, when the body asks for stream: true.' } };
  const responses: Json = { 200: { description: known.summary, ...(Object.keys(okContent).length ? { content: okContent } : {}) } };
  const errors = errorContent(known.errors);
  if (errors) {
    responses['4XX'] = { description: 'The request was refused (invalid body, unknown model, missing or wrong API key, too large, rate limited)', content: errors };
    responses['5XX'] = { description: 'The server failed or is unavailable (model not loaded, shutting down, timeout, overloaded)', content: errors };
  }
  return {
    summary: known.summary,
    ...(parameters.length ? { parameters } : {}),
    ...(known.request
      ? { requestBody: { required: true, content: { 'application/json': { schema: ref(known.request) } } } }
      : method === 'POST' ? { description: 'No request body schema.' } : {}),
    responses,
  };
}

let components: Json | undefined;
function schemas(): Json {
  if (components) return components;
  const all: Json = {};
  for (const [name, list] of Object.entries(REQUEST_SCHEMAS)) {
    const converted = (list as z.ZodType[]).map((s, i) => jsonSchemaOf(s, 'input', list.length > 1 ? `${name}/anyOf/${i}` : name));
    all[name] = converted.length === 1 ? converted[0] : { anyOf: converted };
  }
  for (const [name, schema] of Object.entries(RESPONSE_SCHEMAS)) all[name] = jsonSchemaOf(schema, 'output', name);
  return (components = all);
}

/** The document for the routes recorded on this app. */
export function openApiDocument(routes: readonly RouteRecord[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const { method, url } of routes) {
    const template = openApiPath(url);
    const lower = method.toLowerCase();
    if (!['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(lower)) continue;
    (paths[template] ??= {})[lower] = operation(method, url, template);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'local-inference-server',
      version: '1',
      description: 'Anthropic Messages, OpenAI chat completions / embeddings / Responses, and the rerank, score and tokenize APIs of Cohere, vLLM, llama-server and TEI, served from local models. Request schemas are the ones the server validates with.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    components: {
      schemas: schemas(),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
    },
    security: [{}, { bearer: [] }, { apiKey: [] }],
    paths,
  };
}

/**
 * The Responses dialect (OpenAI's `/v1/responses`, what the Codex CLI, the OpenAI Agents SDK and
 * `client.responses` speak), on the same models, workers, templates, tool-call parsers, grammar and
 * prompt cache as the two chat dialects: create (JSON or SSE), read back, list input items, delete,
 * count input tokens, compact. Errors in OpenAI's envelope; Bearer keys as the other OpenAI routes.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { clip } from '../../core/errors.js';
import type { ChatPrompt, ChatRequest, InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { HttpError, invalidRequest, sendError } from '../shared/errors.js';
import { keepAliveOf } from '../shared/keep-alive.js';
import { abortOnDisconnect, streamChat } from '../shared/stream.js';
import { parseBody } from '../shared/validation.js';
import { responsesErrors } from './errors.js';
import { unknownKeysMessage } from '../openai/schema.js';
import { toResponsesRequest } from './convert.js';
import { newItemId, newResponseId, renderResponse, ThoughtSeal, usageOf, type ResponseContext } from './render.js';
import { responseFrames } from './render-stream.js';
import { compactSchema, inputTokensSchema, listQuerySchema, responsesSchema, type InputItem, type ResponsesBody } from './schema.js';
import { ownerOf, ResponseStore } from './store.js';
import { truncated } from './truncation.js';
import { ImageIntake } from '../shared/image-intake.js';
import type { ImageSettings } from '../shared/image-settings.js';

export interface ResponsesPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  pingIntervalMs: number;
  streamBufferLimit: number;
  /** Stored responses: how many, and for how long (0: no age limit). */
  store: { entries: number; maxAgeMs: number };
  /** The key reasoning items' encrypted_content is sealed with; absent: one drawn at start (replicas then cannot read each other's). */
  reasoningKey?: string;
  /** Limits of image input, and whether image URLs are fetched. */
  images: ImageSettings;
}

/** What the model is asked for when a conversation is compacted. */
const COMPACTION_PROMPT = 'Summarize the conversation so far for your own later use: the task, what was decided and done, the facts and file names that matter, and what is left to do. Write only the summary.';
/** Output the summary may take at most (the model's own limit when lower). */
const COMPACTION_MAX_TOKENS = 2048;

/** A response id this key has not stored (or that has expired): 404, as OpenAI answers it. */
const notFound = (id: string) => new HttpError('route_not_found', `No response found with id '${clip(id, 64)}'.`, 'response_id');

/** Items with ids (a message the client sent without one gets one, as OpenAI gives it). */
function withIds(items: InputItem[]): Array<InputItem & { id: string }> {
  return items.map((item) => {
    const id = (item as { id?: string | null }).id;
    if (id) return item as InputItem & { id: string };
    const type = item.type ?? 'message';
    return { ...item, id: newItemId(type === 'function_call' ? 'fc' : type === 'reasoning' ? 'rs' : 'msg') } as InputItem & { id: string };
  });
}

type Owned = Array<InputItem & { id: string }>;

/**
 * A body's conversation and its core request: the previous response's input and output, then this
 * request's input, references resolved; hosted tools logged as left out (once each per process).
 */
function preparer(inference: InferenceService, store: ResponseStore, seal: ThoughtSeal, imageSettings: ImageSettings) {
  const logged = new Set<string>();
  const conversation = (body: Pick<ResponsesBody, 'input' | 'previous_response_id'>, owner: string): { own: Owned; all: InputItem[] } => {
    const own = withIds(typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : (body.input ?? []));
    let previous: InputItem[] = [];
    if (body.previous_response_id) {
      const stored = store.get(body.previous_response_id, owner);
      if (!stored) throw new HttpError('invalid_request', `previous_response_id: no response found with id '${clip(body.previous_response_id, 64)}' (stored responses are kept in memory, bounded; see docs/clients.md)`, 'previous_response_id');
      previous = [...stored.input, ...(stored.response.output as InputItem[])];
    }
    const resolved = own.map((item, i): InputItem => {
      if (item.type !== 'item_reference') return item;
      const found = store.item((item as { id: string }).id, owner);
      if (!found) throw invalidRequest(`input[${i}].id: no stored item with id '${clip((item as { id: string }).id, 64)}'`, `input[${i}].id`);
      return found;
    });
    return { own, all: [...previous, ...resolved] };
  };
  return async (request: FastifyRequest, body: Omit<ResponsesBody, 'stream'>, owner: string) => {
    const { own, all } = conversation(body, owner);
    const model = inference.findModel(body.model);
    const images = new ImageIntake(imageSettings);
    const converted = toResponsesRequest(body, all, { defaultMaxTokens: model?.maxOutputTokens ?? 1, readSealed: (sealed, kind) => seal.open(sealed, kind), images });
    await images.admit(model);
    for (const type of converted.skippedTools) {
      if (logged.has(type)) continue;
      logged.add(type);
      request.log.info({ tool: type }, `responses: the hosted tool ${type} is left out of the prompt (no hosted service here)`);
    }
    return { own, all, converted };
  };
}

export const responsesPlugin: FastifyPluginAsync<ResponsesPluginOptions> = async (app, options) => {
  const { inference, checkKey } = options;
  const store = new ResponseStore(options.store);
  const seal = ThoughtSeal.withKey(options.reasoningKey);
  const owner = ownerOf(checkKey);
  const prepare = preparer(inference, store, seal, options.images);
  app.setErrorHandler((error, request, reply) => sendError(responsesErrors, error, request, reply));
  app.addHook('onRequest', requireKey({ checkKey, allowXApiKey: false, missing: "You didn't provide an API key. Send it as `Authorization: Bearer KEY`.", invalid: 'Incorrect API key provided.' }));

  app.post('/v1/responses', async (request, reply) => {
    const body = parseBody(responsesSchema, request.body, { unknownKeys: unknownKeysMessage });
    const { own, all, converted } = await prepare(request, body, owner(request));
    const chatRequest = await truncated(inference, converted.request, body.truncation === 'auto', reply);
    const context: ResponseContext = { id: newResponseId(), createdAt: Math.floor(Date.now() / 1000), body, namespaced: converted.namespaced, seal };
    const keep = (response: ReturnType<typeof renderResponse>) => {
      if (body.store !== false) store.put({ owner: owner(request), response, input: [...(all.slice(0, all.length - own.length) as Owned), ...own] });
    };
    const call = { signal: abortOnDisconnect(reply).signal, ...keepAliveOf(request) };
    if (!body.stream) {
      const response = renderResponse(context, await inference.chat(chatRequest, call));
      keep(response);
      return response;
    }
    return streamChat(request, reply, {
      inference, chatRequest, call, pingIntervalMs: options.pingIntervalMs, bufferLimit: options.streamBufferLimit,
      frames: responseFrames(context, request.id, keep),
    });
  });

  // The SDK's responses.inputTokens.count: what the response's usage.input_tokens would say.
  app.post('/v1/responses/input_tokens', async (request) => {
    const body = parseBody(inputTokensSchema, request.body, { unknownKeys: unknownKeysMessage });
    const { converted } = await prepare(request, body, owner(request));
    const { model, system, messages, tools, toolChoice, thinking } = converted.request;
    const prompt: ChatPrompt = { model, messages, ...(system !== undefined ? { system } : {}), ...(tools ? { tools } : {}), ...(toolChoice ? { toolChoice } : {}), ...(thinking ? { thinking } : {}) };
    return { object: 'response.input_tokens', input_tokens: await inference.countTokens(prompt, keepAliveOf(request)) };
  });

  // Compaction (the SDK's responses.compact; Ollama serves it too): the model summarises the
  // conversation, and the answer is every user message followed by one compaction item whose
  // encrypted_content carries that summary; sent back as input, it stands for what it replaced.
  app.post('/v1/responses/compact', async (request, reply) => {
    const body = parseBody(compactSchema, request.body, { unknownKeys: unknownKeysMessage });
    const { all, converted } = await prepare(request, body, owner(request));
    const summaryRequest: ChatRequest = {
      ...converted.request,
      messages: [...converted.request.messages, { role: 'user', content: COMPACTION_PROMPT }],
      toolChoice: { mode: 'none', parallel: false },
      maxTokens: Math.min(converted.request.maxTokens, COMPACTION_MAX_TOKENS),
    };
    delete summaryRequest.output;
    const result = await inference.chat(summaryRequest, { signal: abortOnDisconnect(reply).signal, ...keepAliveOf(request) });
    const users = withIds(all.filter((item) => (item.type ?? 'message') === 'message' && (item as { role?: string }).role === 'user'))
      .map((item) => ({ ...item, type: 'message' as const }));
    return {
      id: newResponseId(), object: 'response.compaction', created_at: Math.floor(Date.now() / 1000),
      output: [...users, { id: newItemId('cmp'), type: 'compaction', encrypted_content: seal.seal(result.text.trim(), 'summary') }],
      usage: usageOf(result),
    };
  });

  storedRoutes(app, store, owner);
};

/** A stored response read back, its input items listed, deleted; cancel (no background responses here). */
function storedRoutes(app: FastifyInstance, store: ResponseStore, owner: (request: FastifyRequest) => string): void {
  const stored = (request: FastifyRequest<{ Params: { id: string } }>) => {
    const found = store.get(request.params.id, owner(request));
    if (!found) throw notFound(request.params.id);
    return found;
  };
  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request) => stored(request).response);

  app.get<{ Params: { id: string } }>('/v1/responses/:id/input_items', async (request) => {
    const { input } = stored(request);
    const query = parseBody(listQuerySchema, request.query);
    const ordered = query.order === 'asc' ? input : [...input].reverse();
    const from = query.after ? ordered.findIndex((item) => item.id === query.after) + 1 : 0;
    const page = ordered.slice(from, from + query.limit);
    return { object: 'list', data: page, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null, has_more: from + page.length < ordered.length };
  });

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (request) => {
    if (!store.delete(request.params.id, owner(request))) throw notFound(request.params.id);
    return { id: request.params.id, object: 'response', deleted: true };
  });

  app.post<{ Params: { id: string } }>('/v1/responses/:id/cancel', async (request) => {
    stored(request);
    throw new HttpError('unsupported_feature', 'cancel: only background responses can be cancelled, and this server does not serve background responses (a streamed response is cancelled by closing its connection)', 'response_id');
  });
}

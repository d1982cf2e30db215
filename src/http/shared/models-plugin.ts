/**
 * GET /v1/models and GET /v1/models/{id}, in one shape both the Anthropic and the OpenAI clients
 * accept (../shared/API.md), plus liveness routes that clients probe (HEAD / and GET /).
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { modelNotFound } from '../../core/errors.js';
import type { InferenceService, ModelStatus } from '../../core/types.js';
import type { ModelDescription } from '../../core/model.js';
import { requireKey, type KeyChecker } from './auth.js';
import type { DialectOf } from './dialect.js';
import { invalidRequest, sendError } from './errors.js';

export interface ModelsPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** The envelope a request's errors are answered in (these routes serve every dialect). */
  dialectOf: DialectOf;
}

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(1000),
  after_id: z.string().optional(),
  before_id: z.string().optional(),
});

const no = { supported: false } as const;
const yes = { supported: true } as const;
const support = (supported: boolean) => (supported ? yes : no);

/**
 * What Anthropic's Models API says of a model, true for this local one: its window, its output
 * limit, and what it can do (thinking only where its chat template has a switch; structured outputs
 * by grammar on chat models; images where the model takes them; no PDFs, server tools, batches or
 * context management here).
 */
function capabilities(model: ModelDescription) {
  const chat = model.task === 'chat';
  return {
    batch: no,
    citations: no,
    code_execution: no,
    context_management: { supported: false, clear_thinking_20251015: no, clear_tool_uses_20250919: no, compact_20260112: no },
    // A template that takes a reasoning level (gpt-oss) gets the request's effort as low / medium / high.
    effort: effortSupport(chat && (model.chatFormat?.effortLevels ?? false)),
    // Images (issue 42): split Qwen-VL ONNX exports take them (the playground offers its attach control by this).
    image_input: support(chat && model.imageInput === true),
    pdf_input: no,
    server_tools: { supported: false, code_execution: no, web_search: no },
    structured_outputs: support(chat),
    // `supported`: the model really thinks. `types`: what a request may send without a 400 — every
    // type, on every chat model (one without a switch answers without thinking).
    thinking: { supported: chat && model.thinking, types: { enabled: support(chat), adaptive: support(chat), disabled: support(chat), between_tools: no } },
  };
}

function effortSupport(supported: boolean) {
  const s = support(supported);
  return { supported, low: s, medium: s, high: s, max: s, xhigh: s };
}

/**
 * Where the model is in its lifecycle (an extension: neither dialect has it): loaded or not, since
 * when, when it unloads if left idle, the bytes of its files, and why its last load failed.
 */
function lifecycle(status: ModelStatus | undefined) {
  if (!status) return {};
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  const state = status.state ?? 'loaded';
  return {
    loaded: state === 'loaded',
    state,
    pinned: status.pinned ?? true,
    file_bytes: status.fileBytes ?? null,
    device: status.device ?? null,
    // A loaded GGUF chat model: the KV cache its sequences take, and their sizes in tokens (the
    // longest is context_length; src/engines/llama/layout.ts).
    kv_bytes: status.kvBytes ?? null,
    sequences: status.sequences ?? null,
    loaded_at: iso(status.loadedAt),
    last_used_at: iso(status.lastUsed || undefined),
    expires_at: iso(status.expiresAt),
    // The last load failed (requests get this failure until retry_at, then load it again).
    load_error: status.loadError ? { message: status.loadError.message, retry_at: iso(status.loadError.retryAt) } : null,
  };
}

export function renderModel(model: ModelDescription, status?: ModelStatus) {
  return {
    id: model.id,
    object: 'model' as const,
    type: 'model' as const,
    created: model.created,
    created_at: new Date(model.created * 1000).toISOString(),
    owned_by: 'local',
    display_name: model.displayName,
    max_input_tokens: model.contextLength,
    max_tokens: model.task === 'chat' ? model.maxOutputTokens : null,
    capabilities: model.task === 'chat' ? capabilities(model) : null,
    lifecycle: 'active' as const,
    deprecated_at: null,
    retires_at: null,
    line: null,
    // Not in either dialect; clients ignore them and people find them useful.
    task: model.task,
    /** onnx (onnxruntime) or llama (llama.cpp, a GGUF file). */
    engine: model.engine,
    context_length: model.contextLength,
    // Chat models: the tool-call format and reasoning style the server reads from the template.
    ...(model.task === 'chat' && model.chatFormat ? { tool_format: model.chatFormat.toolFormat, reasoning_format: model.chatFormat.reasoning } : {}),
    ...lifecycle(status),
  };
}

export const modelsPlugin: FastifyPluginAsync<ModelsPluginOptions> = async (app, { inference, checkKey, dialectOf }) => {
  app.setErrorHandler((error, request, reply) => sendError(dialectOf(request), error, request, reply));
  app.addHook('onRequest', requireKey({ checkKey, allowXApiKey: true, missing: 'An API key is required.', invalid: 'Incorrect API key provided.' }));

  app.get('/v1/models', async (request) => {
    const parsed = listQuery.safeParse(request.query);
    if (!parsed.success) throw invalidRequest(`query: ${parsed.error.issues[0]!.message}`);
    const { limit, after_id, before_id } = parsed.data;
    const models = inference.listModels();
    const statuses = new Map(inference.status().models.map((m) => [m.id, m]));
    const at = (id: string, field: string) => {
      const index = models.findIndex((m) => m.id === id);
      if (index === -1) throw invalidRequest(`${field}: no model \`${id}\` in the list; use an id from a previous page.`, field);
      return index;
    };
    // Anthropic's paging: after_id gives the `limit` models after it; before_id the `limit` just before it.
    let start = 0;
    let end = models.length;
    if (after_id !== undefined) start = at(after_id, 'after_id') + 1;
    if (before_id !== undefined) end = at(before_id, 'before_id');
    if (before_id !== undefined && after_id === undefined) start = Math.max(0, end - limit);
    const page = models.slice(start, Math.min(end, start + limit));
    const hasMore = before_id !== undefined && after_id === undefined ? start > 0 : start + page.length < end;
    return {
      object: 'list',
      data: page.map((m) => renderModel(m, statuses.get(m.id))),
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: hasMore,
    };
  });

  // A wildcard, not `:id`: Hugging Face cache models are named `org/name`, and clients send that
  // slash as it is (curl) or encoded as %2F (the OpenAI and Anthropic SDKs); the router decodes both.
  app.get<{ Params: { '*': string } }>('/v1/models/*', async (request) => {
    const id = request.params['*'];
    const model = inference.findModel(id);
    if (!model) throw modelNotFound(id);
    return renderModel(model, inference.status().models.find((m) => m.id === model.id));
  });
};

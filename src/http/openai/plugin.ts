/**
 * The OpenAI dialect: chat (POST /v1/chat/completions, JSON or SSE) and embeddings (POST
 * /v1/embeddings and POST /v1/engines/{model}/embeddings, one handler). Its own error handler renders
 * every failure in OpenAI's envelope.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { sendError } from '../shared/errors.js';
import { openAiErrors } from './errors.js';
import { parseBody } from '../shared/validation.js';
import { renderEmbeddings, toEmbedRequest } from './convert.js';
import { embeddingsSchema, unknownKeysMessage } from './schema.js';
import { chatSchema } from './chat-schema.js';
import { toChatCompletionRequest } from './chat-convert.js';
import { chunkFrames, newCompletionId, renderCompletion } from './chat-render.js';
import { abortOnDisconnect, streamChat } from '../shared/stream.js';
import { keepAliveOf } from '../shared/keep-alive.js';
import { ImageIntake } from '../shared/image-intake.js';
import type { ImageSettings } from '../shared/image-settings.js';

export interface OpenAiPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** Interval of SSE comment pings on an open stream. */
  pingIntervalMs: number;
  /** Bytes a stream may have queued for a client that does not read before it is dropped. */
  streamBufferLimit: number;
  /** Limits of image input, and whether image URLs are fetched. */
  images: ImageSettings;
}

export const openAiPlugin: FastifyPluginAsync<OpenAiPluginOptions> = async (app, options) => {
  const { inference, checkKey } = options;
  app.setErrorHandler((error, request, reply) => sendError(openAiErrors, error, request, reply));

  app.addHook(
    'onRequest',
    requireKey({ checkKey, allowXApiKey: false, missing: "You didn't provide an API key. Send it as `Authorization: Bearer KEY`.", invalid: 'Incorrect API key provided.' }),
  );

  const handler = async (request: FastifyRequest<{ Params: { model?: string; org?: string } }>) => {
    const body = parseBody(embeddingsSchema, request.body, { unknownKeys: unknownKeysMessage });
    const { org, model } = request.params;
    const { request: embedRequest, encodingFormat } = toEmbedRequest(body, org !== undefined && model !== undefined ? `${org}/${model}` : model);
    const result = await inference.embed(embedRequest, keepAliveOf(request));
    return renderEmbeddings(embedRequest.model, result, encodingFormat);
  };
  app.post('/v1/embeddings', handler);

  app.post('/v1/chat/completions', async (request, reply) => {
    const body = parseBody(chatSchema, request.body, { unknownKeys: unknownKeysMessage });
    // No limit asked for: the model's output limit, which the window then bounds (as the peers do).
    const model = inference.findModel(body.model);
    const images = new ImageIntake(options.images);
    const chatRequest = toChatCompletionRequest(body, model?.maxOutputTokens ?? 1, images);
    await images.admit(model);
    const abort = abortOnDisconnect(reply);
    const call = { signal: abort.signal, ...keepAliveOf(request) };
    const id = newCompletionId();
    if (!body.stream) return renderCompletion(id, body.model, await inference.chat(chatRequest, call));
    return streamChat(request, reply, {
      inference, chatRequest, call, pingIntervalMs: options.pingIntervalMs, bufferLimit: options.streamBufferLimit,
      frames: chunkFrames(id, body.model, body.stream_options?.include_usage === true, request.id),
    });
  });
  app.post('/v1/engines/:model/embeddings', handler);
  // A Hugging Face cache model (`org/name`) in an SDK baseURL: the slash arrives as it is.
  app.post('/v1/engines/:org/:model/embeddings', handler);
};

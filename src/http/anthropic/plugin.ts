/**
 * The Anthropic Messages dialect: POST /v1/messages (JSON or SSE) and /v1/messages/count_tokens.
 * Its own error handler renders every failure in Anthropic's envelope.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { invalidRequest, sendError } from '../shared/errors.js';
import { abortOnDisconnect, streamChat } from '../shared/stream.js';
import { keepAliveOf } from '../shared/keep-alive.js';
import { parseBody } from '../shared/validation.js';
import { anthropicErrors } from './errors.js';
import { toChatPrompt, toChatRequest } from './convert.js';
import { BlockEvents, newMessageId, renderMessage, streamEvents } from './render.js';
import { countTokensSchema, messagesSchema } from './schema.js';
import { ImageIntake } from '../shared/image-intake.js';
import type { ImageSettings } from '../shared/image-settings.js';

export interface AnthropicPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** Interval of `ping` events on an open stream. */
  pingIntervalMs: number;
  /** Bytes a stream may have queued for a client that does not read before it is dropped. */
  streamBufferLimit: number;
  /** Limits of image input, and whether image URLs are fetched. */
  images: ImageSettings;
}

export const anthropicPlugin: FastifyPluginAsync<AnthropicPluginOptions> = async (app, options) => {
  const { inference, checkKey } = options;

  app.setErrorHandler((error, request, reply) => sendError(anthropicErrors, error, request, reply));

  app.addHook('onRequest', requireKey({ checkKey, allowXApiKey: true, missing: 'x-api-key header is required', invalid: 'invalid x-api-key' }));
  app.addHook('onRequest', async (request) => {
    const version = request.headers['anthropic-version'] ?? request.headers['vendor-version'];
    if (typeof version !== 'string' || version.trim() === '') {
      throw invalidRequest('anthropic-version: header is required (vendor-version is accepted too)');
    }
  });

  app.post('/v1/messages/count_tokens', async (request) => {
    const body = parseBody(countTokensSchema, request.body);
    const images = new ImageIntake(options.images);
    const prompt = toChatPrompt(body, images);
    await images.admit(inference.findModel(body.model));
    return { input_tokens: await inference.countTokens(prompt, keepAliveOf(request)) };
  });

  app.post('/v1/messages', async (request, reply) => {
    const body = parseBody(messagesSchema, request.body);
    const images = new ImageIntake(options.images);
    const chatRequest = toChatRequest(body, images);
    await images.admit(inference.findModel(body.model));
    const abort = abortOnDisconnect(reply);
    const call = { signal: abort.signal, ...keepAliveOf(request) };
    const id = newMessageId();
    if (!body.stream) return renderMessage(id, body.model, await inference.chat(chatRequest, call));
    const blocks = new BlockEvents();
    return streamChat(request, reply, {
      inference, chatRequest, call, pingIntervalMs: options.pingIntervalMs, bufferLimit: options.streamBufferLimit,
      frames: {
        start: (event) => streamEvents.messageStart(id, body.model, event),
        part: (event) => blocks.frames(event),
        end: (result) => streamEvents.messageDelta(result) + streamEvents.messageStop(),
        error: (error) => streamEvents.error(error, request.id),
        ping: streamEvents.ping,
      },
    });
  });
};

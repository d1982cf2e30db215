/**
 * The Anthropic Messages dialect: POST /v1/messages (JSON or SSE) and /v1/messages/count_tokens.
 * Its own error handler renders every failure in Anthropic's envelope.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { classify, invalidRequest, sendError } from '../shared/errors.js';
import { parseBody } from '../shared/validation.js';
import { anthropicErrors } from './errors.js';
import { toChatPrompt, toChatRequest } from './convert.js';
import { BlockEvents, newMessageId, renderMessage, streamEvents } from './render.js';
import { countTokensSchema, messagesSchema } from './schema.js';

export interface AnthropicPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** Interval of `ping` events on an open stream. */
  pingIntervalMs: number;
  /** Bytes a stream may have queued for a client that does not read before it is dropped. */
  streamBufferLimit: number;
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
    const prompt = toChatPrompt(parseBody(countTokensSchema, request.body));
    return { input_tokens: await inference.countTokens(prompt) };
  });

  app.post('/v1/messages', async (request, reply) => {
    const body = parseBody(messagesSchema, request.body);
    const chatRequest = toChatRequest(body);
    const abort = abortOnDisconnect(reply);
    if (!body.stream) {
      const result = await inference.chat(chatRequest, { signal: abort.signal });
      return renderMessage(newMessageId(), body.model, result);
    }
    return stream(request, reply, { inference, model: body.model, chatRequest, signal: abort.signal, pingIntervalMs: options.pingIntervalMs, bufferLimit: options.streamBufferLimit });
  });
};

/** An AbortSignal that fires when the client goes away before the response is complete. */
function abortOnDisconnect(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller;
}

interface StreamOptions {
  inference: InferenceService;
  model: string;
  chatRequest: ReturnType<typeof toChatRequest>;
  signal: AbortSignal;
  pingIntervalMs: number;
  bufferLimit: number;
}

/**
 * Streams a message as SSE. Headers go out only when the worker has accepted the prompt (the
 * `start` event), so a prompt error is still an ordinary 4xx; after that, failures are `error` events.
 */
async function stream(request: FastifyRequest, reply: FastifyReply, options: StreamOptions): Promise<FastifyReply> {
  const raw = reply.raw;
  const id = newMessageId();
  const write = (frame: string) => {
    if (raw.destroyed || raw.writableEnded) return;
    raw.write(frame);
    // A client that stops reading would grow this queue without bound: past the limit the
    // connection is dropped, which cancels the generation (abortOnDisconnect).
    if (raw.writableLength > options.bufferLimit) {
      request.log.warn({ queued: raw.writableLength }, 'stream dropped: the client does not read');
      raw.destroy();
    }
  };
  let started = false;
  const blocks = new BlockEvents();
  let ping: NodeJS.Timeout | undefined;
  try {
    const result = await options.inference.chat(options.chatRequest, {
      signal: options.signal,
      onEvent: (event) => {
        if (event.type === 'start') {
          started = true;
          reply.hijack();
          // No Connection header of our own: Node answers keep-alive, or close when the client asked for it.
          raw.writeHead(200, {
            'content-type': 'text/event-stream; charset=utf-8',
            'cache-control': 'no-cache',
            'x-accel-buffering': 'no',
            'request-id': request.id,
          });
          write(streamEvents.messageStart(id, options.model, event));
          // The prompt is being processed now: a ping tells proxies and clients the stream is alive.
          write(streamEvents.ping());
          ping = setInterval(() => write(streamEvents.ping()), options.pingIntervalMs);
        } else {
          write(blocks.frames(event));
        }
      },
    });
    write(streamEvents.messageDelta(result));
    write(streamEvents.messageStop());
    raw.end();
  } catch (error) {
    if (!started) throw error;
    const known = classify(error);
    if (known.code === 'internal' || known.code === 'worker_failed') request.log.error({ err: error }, 'stream failed');
    write(streamEvents.error(known, request.id));
    raw.end();
  } finally {
    clearInterval(ping);
  }
  return reply;
}

/**
 * A chat generation streamed as server-sent events, for either dialect: the dialect gives the frames
 * (the first once the worker has accepted the prompt, one per part event, the last with the result,
 * pings, an error after the start), this writes them with the parts every stream needs.
 *
 * - Headers go out when the worker has accepted the prompt (the core's `start` event), so a prompt
 *   the model refuses is still an ordinary 4xx; after that, a failure is an error frame. A request
 *   that waits longer than one ping interval for that (its model loading, a queue) opens the stream
 *   then, with pings, so clients and proxies see it alive; a refusal after that is an error frame.
 * - A ping frame right after the start (the prompt is being processed) and then on an interval.
 * - A client that stops reading would grow the write queue without bound: past `bufferLimit` bytes
 *   queued the connection is dropped, which cancels the generation.
 * - A client that leaves cancels the generation (abortOnDisconnect).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CallOptions, ChatEvent, ChatRequest, ChatResult, InferenceService } from '../../core/types.js';
import { classify, type KnownError } from './errors.js';

export type PartEvent = Exclude<ChatEvent, { type: 'start' }>;
export type StartEvent = Extract<ChatEvent, { type: 'start' }>;

/** What a dialect writes for each moment of a stream (each a complete SSE frame or several). */
export interface StreamFrames {
  start(event: StartEvent): string;
  part(event: PartEvent): string;
  end(result: ChatResult): string;
  error(error: KnownError): string;
  ping(): string;
}

/** An AbortSignal that fires when the client goes away before the response is complete. */
export function abortOnDisconnect(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller;
}

export interface StreamOptions {
  inference: InferenceService;
  chatRequest: ChatRequest;
  /** The abort signal (client gone) and the request's keep-alive. */
  call: CallOptions & { signal: AbortSignal };
  pingIntervalMs: number;
  bufferLimit: number;
  frames: StreamFrames;
}

export async function streamChat(request: FastifyRequest, reply: FastifyReply, options: StreamOptions): Promise<FastifyReply> {
  const raw = reply.raw;
  const { frames } = options;
  const write = (frame: string) => {
    if (frame === '' || raw.destroyed || raw.writableEnded) return;
    raw.write(frame);
    if (raw.writableLength > options.bufferLimit) {
      request.log.warn({ queued: raw.writableLength }, 'stream dropped: the client does not read');
      raw.destroy();
    }
  };
  let opened = false;
  let ping: NodeJS.Timeout | undefined;
  const open = () => {
    if (opened) return;
    opened = true;
    reply.hijack();
    // No Connection header of our own: Node answers keep-alive, or close when the client asked for it.
    // Headers the route set before the stream opened (e.g. a dialect's own) go out with it.
    raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'request-id': request.id,
    });
  };
  const pinging = () => {
    write(frames.ping());
    ping ??= setInterval(() => write(frames.ping()), options.pingIntervalMs);
  };
  const early = setTimeout(() => (open(), pinging()), options.pingIntervalMs);
  try {
    const result = await options.inference.chat(options.chatRequest, {
      ...options.call,
      onEvent: (event) => {
        if (event.type !== 'start') return write(frames.part(event));
        clearTimeout(early);
        open();
        write(frames.start(event));
        pinging();
      },
    });
    write(frames.end(result));
    raw.end();
  } catch (error) {
    clearTimeout(early);
    if (!opened) throw error;
    const known = classify(error);
    if (known.code === 'internal' || known.code === 'worker_failed') request.log.error({ err: error }, 'stream failed');
    write(frames.error(known));
    raw.end();
  } finally {
    clearTimeout(early);
    clearInterval(ping);
  }
  return reply;
}

/**
 * buildApp: the HTTP application, built from its dependencies. It never reads the environment and
 * never listens; main.ts does both, and tests drive it with app.inject.
 */
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { configSchema, type Config } from './config.js';
import { clip } from './core/errors.js';
import type { InferenceService } from './core/types.js';
import { anthropicClaim, anthropicPaths } from './http/anthropic/errors.js';
import { anthropicPlugin } from './http/anthropic/plugin.js';
import { openAiErrors, openAiPaths } from './http/openai/errors.js';
import { openAiPlugin } from './http/openai/plugin.js';
import { responsesPaths } from './http/responses/errors.js';
import { responsesPlugin } from './http/responses/plugin.js';
import { makeKeyChecker } from './http/shared/auth.js';
import { answerExpectation, capConnections, clientErrorHandler, lingerOnClose, refuseTunnel } from './http/shared/connection.js';
import { dialectChooser } from './http/shared/dialect.js';
import { HttpError, sendError } from './http/shared/errors.js';
import { modelAdminPlugin } from './http/shared/model-admin-plugin.js';
import { modelsPlugin } from './http/shared/models-plugin.js';
import { teiPaths } from './http/retrieval/errors.js';
import { retrievalPlugin } from './http/retrieval/plugin.js';
import { createMetrics, type Metrics } from './metrics.js';
import { collectRoutes } from './http/reference/openapi.js';
import { referencePlugin } from './http/reference/plugin.js';
import { sendPage, wantsPage, webPlugin } from './web/plugin.js';
import { imageSettingsSchema, type ImageSettings } from './http/shared/image-settings.js';

/** The settings the HTTP layer reads; those not given take the configuration's defaults. */
type HttpSettings = Pick<Config, 'apiKeys' | 'bodyLimit' | 'pingIntervalMs'> &
  Partial<ImageSettings> &
  Partial<Pick<Config, 'headersTimeoutMs' | 'bodyTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections' | 'streamBufferLimit' | 'responsesStoreEntries' | 'responsesStoreMaxAgeMs' | 'responsesReasoningKey'>> &
  Partial<Pick<Config, 'teiModel' | 'modelAdmin'>>;

export interface AppDeps {
  config: HttpSettings;
  inference: InferenceService;
  /** The server's pino logger (main.ts shares it with the inference core); none by default. */
  logger?: FastifyBaseLogger;
  /** The server's metrics (main.ts shares them with the inference core); a fresh set otherwise. */
  metrics?: Metrics;
}

declare module 'fastify' {
  interface FastifyInstance {
    inflightRequests(): number;
    /** Set by closeApp: requests still arriving on open connections are answered 503 with Connection: close. */
    closing: boolean;
  }
}

/**
 * Stops accepting connections, lets in-flight requests (streams included) finish for up to
 * `graceMs`, then drops every remaining connection. Node keeps a connection whose client hung up
 * mid-request on its books until a timeout; without the last step close() would wait for it.
 */
export async function closeApp(app: FastifyInstance, graceMs: number): Promise<void> {
  app.closing = true;
  const closed = app.close();
  const deadline = Date.now() + graceMs;
  while (app.inflightRequests() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  app.server.closeAllConnections();
  await closed;
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('hex')}`;
}

const DEFAULTS = configSchema.parse({});

export async function buildApp({ config: given, inference, logger, metrics = createMetrics() }: AppDeps): Promise<FastifyInstance> {
  const config = { ...DEFAULTS, ...given };
  // Routes every dialect shares answer in the envelope of the dialect that claims the request; OpenAI's otherwise.
  const dialectOf = dialectChooser([anthropicClaim], openAiErrors);
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: config.bodyLimit,
    genReqId: newRequestId,
    // A client may send its own id for tracing, but we always answer with ours.
    requestIdHeader: false,
    // Prototype keys never reach handlers; nesting depth is checked before validation (parseBody).
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    // Slow clients are bounded: headers, then the whole request, must arrive in time (408 and
    // disconnected otherwise); idle keep-alive connections close. Node checks these timers every
    // `connectionsCheckingInterval`, so it is kept well under the shortest of them.
    requestTimeout: config.bodyTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
      // A request without Host gets the envelope from the onRequest hook below, not Node's empty 400.
      requireHostHeader: false,
    },
    // Errors Fastify raises before a route runs (bad percent-encoding, an over-long path parameter)
    // and malformed HTTP get envelopes too; see sendError and connection.ts.
    frameworkErrors: (error, request, reply) => sendError(dialectOf(request), error, request, reply),
    clientErrorHandler,
  });
  collectRoutes(app); // every route registered from here on, for the API reference (/openapi.json)
  // An unmet Expect is answered before routing, in the envelope of the dialect its path names.
  app.server.on('checkExpectation', answerExpectation([anthropicPaths, openAiPaths, responsesPaths, teiPaths]));
  app.server.on('connect', refuseTunnel);
  capConnections(app.server, config.maxConnections);
  lingerOnClose(app.server);
  app.decorate('closing', false);
  const checkKey = makeKeyChecker(config.apiKeys);
  // Both dialects speak JSON only; any other body type is a 415.
  app.removeContentTypeParser('text/plain');

  // In-flight requests, streams included: a response's 'close' fires once, when it finished or the client left.
  let inflight = 0;
  app.decorate('inflightRequests', () => inflight);
  metrics.bind(inference);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('request-id', request.id);
    if (app.closing) {
      reply.header('connection', 'close');
      throw new HttpError('shutting_down', 'The server is shutting down; retry on another replica or shortly.');
    }
    // A protocol upgrade (websocket, h2c) is not done: the request is served as plain HTTP/1.1 and its
    // connection closed after, since Node's parser reads nothing more on a connection that asked to upgrade.
    if (request.headers.upgrade !== undefined) reply.raw.shouldKeepAlive = false;
    if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1 && !request.headers.host) {
      reply.header('connection', 'close');
      throw new HttpError('invalid_request', 'The Host header is required (HTTP/1.1).');
    }
    inflight++;
    const started = performance.now();
    reply.raw.once('close', () => {
      inflight--;
      metrics.request(request.method, request.routeOptions.url ?? 'unmatched', reply.raw.statusCode, (performance.now() - started) / 1000);
    });
  });

  // A browser (Accept: text/html) gets the playground page; every other client the JSON it always got.
  app.get('/', async (request, reply) => {
    if (wantsPage(request)) return sendPage(request, reply);
    reply.header('vary', 'Accept');
    return { status: 'ok', service: 'local-inference-server' };
  });
  // Liveness: the process answers. Readiness: every model has all its workers loaded.
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    const { models } = inference.status();
    const ready = models.every((m) => m.ready);
    return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', models });
  });
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  // Image limits and URL fetching: the same settings for every chat dialect.
  const images = Object.fromEntries(Object.keys(imageSettingsSchema.shape).map((key) => [key, config[key as keyof ImageSettings]])) as ImageSettings;
  await app.register(anthropicPlugin, { inference, checkKey, pingIntervalMs: config.pingIntervalMs, streamBufferLimit: config.streamBufferLimit, images });
  await app.register(openAiPlugin, { inference, checkKey, pingIntervalMs: config.pingIntervalMs, streamBufferLimit: config.streamBufferLimit, images });
  await app.register(responsesPlugin, {
    inference, checkKey, pingIntervalMs: config.pingIntervalMs, streamBufferLimit: config.streamBufferLimit, images,
    store: { entries: config.responsesStoreEntries, maxAgeMs: config.responsesStoreMaxAgeMs },
    ...(config.responsesReasoningKey ? { reasoningKey: config.responsesReasoningKey } : {}),
  });
  await app.register(modelsPlugin, { inference, checkKey, dialectOf });
  // Load and unload on request (the playground's buttons), in OpenAI's envelope as llama-server answers.
  if (config.modelAdmin) await app.register(modelAdminPlugin, { inference, checkKey, errors: openAiErrors });
  await app.register(webPlugin);
  await app.register(referencePlugin);
  await app.register(retrievalPlugin, { inference, checkKey, images, ...(config.teiModel !== undefined ? { defaultModel: config.teiModel } : {}) });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      dialectOf(request),
      new HttpError('route_not_found', `No route for ${request.method} ${clip(request.url.split('?')[0]!)}.`),
      request,
      reply,
    ),
  );
  app.setErrorHandler((error, request, reply) => sendError(dialectOf(request), error, request, reply));
  return app;
}

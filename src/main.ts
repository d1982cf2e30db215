/**
 * Process entry: parse configuration -> say which bundled models are missing or stale (built at
 * install and by `npm run build:models`, never here) -> scan models/ -> start a
 * worker pool per model -> buildApp -> listen. SIGTERM/SIGINT close the server, then the pools.
 */
import path from 'node:path';
import { pino } from 'pino';
import { buildApp, closeApp } from './app.js';
import { ConfigError, isLoopback, loadConfig, modelSources, usage } from './config.js';
import { engineSettingsOf } from './core/engine-settings.js';
import { LocalInferenceService } from './inference/service.js';
import { createMetrics } from './metrics.js';
import { checkBundledModels } from './models/bundled-check.js';
import { scanModelSources } from './models/sources.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.argv.slice(2), process.env);
  } catch (error) {
    const message = error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? (error as Error).message : String(error);
    process.stderr.write(`${message}\nRun with --help for every flag, its default and its meaning.\n`);
    process.exit(2);
  }
  if (config.help) {
    process.stdout.write(`${usage()}\n`);
    return;
  }
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const modelsDir = path.resolve(config.modelsDir);
  for (const line of checkBundledModels(modelsDir)) say(line);

  const sources = modelSources(config);
  const scan = scanModelSources(sources);
  for (const skipped of scan.skipped) say(`[models] skipped ${skipped.folder}: ${skipped.reason}`);
  for (const held of scan.notServedYet ?? []) say(`[models] not serving ${held.folder} yet: ${held.reason}`);
  if (scan.models.length === 0 && config.modelsRescanMs === 0) {
    say(`[models] no usable model folders in ${modelsDir}`);
    process.exit(1);
  }
  if (scan.models.length === 0) say(`[models] no usable model folders in ${modelsDir} yet: models added there are served without a restart`);

  let host = config.host;
  if (config.apiKeys.length === 0) {
    if (!isLoopback(host) && !config.allowUnauthenticated) {
      say(`[auth] no API keys configured: binding to 127.0.0.1 instead of ${host}. Set API_KEYS (or --api-key) to serve other hosts, or --allow-unauthenticated to serve them without keys.`);
      host = '127.0.0.1';
    } else {
      say(`[auth] no API keys configured: any client that can reach ${host}:${config.port} may use the models.`);
    }
  }

  const metrics = createMetrics();
  // One JSON log for the HTTP layer, the pools and the workers. Keys never reach it, whatever the level.
  const logger = pino({ level: config.logLevel, redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], remove: true } });
  const inference = await LocalInferenceService.start({
    hooks: { observers: [metrics.observer] },
    logger,
    models: scan.models,
    aliases: config.modelAliases,
    engine: engineSettingsOf(config),
    maxQueue: config.maxQueue,
    requestTimeoutMs: config.requestTimeoutMs,
    embedBatching: { enabled: config.embedBatching, maxBatchTokens: config.embedBatchTokens, maxWaitMs: config.embedBatchWaitMs, truncate: config.embedTruncate },
    lifecycle: {
      pinned: config.preload,
      keepAliveMs: config.keepAlive,
      modelKeepAliveMs: config.modelKeepAlive,
      maxLoadedModels: config.maxLoadedModels,
      loadTimeoutMs: config.modelLoadTimeoutMs,
      rescan: { scan: () => scanModelSources(sources).models, intervalMs: config.modelsRescanMs },
    },
  });
  const app = await buildApp({ config, inference, metrics, logger });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    say(`[server] ${signal}: no new connections; finishing ${app.inflightRequests()} in-flight request(s) (grace ${config.shutdownGraceMs} ms)`);
    await closeApp(app, config.shutdownGraceMs);
    await inference.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  const address = await app.listen({ host, port: config.port });
  const pinned = (id: string) => config.preload.includes('*') || config.preload.includes(id);
  say(`[server] listening on ${address} with ${scan.models.map((m) => `${m.id} (${m.task}${pinned(m.id) ? ', loaded' : ', loads on first request'})`).join(', ')}`);
}

main().catch((error) => {
  process.stderr.write(`fatal: ${(error as Error).stack ?? error}\n`);
  process.exit(1);
});

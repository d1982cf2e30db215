/**
 * The inference core: model registry (id or alias -> pool), one ModelPool per model.
 */
import { CoreError, modelNotFound, wrongModelTask } from '../core/errors.js';
import type { InferenceHooks } from '../core/hooks.js';
import { silentLogger, type Logger } from '../core/log.js';
import type { CallOptions, ChatCallOptions, ChatPrompt, ChatRequest, ChatResult, EmbedRequest, EmbedResult, InferenceService, ModelStatus } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import { EmbedBatcher, type EmbedBatchingOptions } from '../pool/embed-batcher.js';
import { ModelPool, type ModelPoolOptions, type PoolContext } from '../pool/model-pool.js';
import { listenToWorkerLogs, type WorkerLogs } from '../pool/worker-logs.js';

export interface LocalServiceOptions extends ModelPoolOptions {
  models: ModelInfo[];
  embedBatching: Omit<EmbedBatchingOptions, 'maxQueue'>;
  /**
   * Extra names for models, from configuration: alias -> model id. An alias with `*` is a pattern
   * (`claude-haiku-*`), so the model names a client has hard-wired land on a local model.
   */
  aliases?: Record<string, string>;
  /** The server's logger; worker lines reach it too, with the model id. */
  logger?: Logger;
  /** Observers (metrics, test counters) and test-only fault injection. */
  hooks?: InferenceHooks;
}

export class LocalInferenceService implements InferenceService {
  private readonly pools = new Map<string, ModelPool>();
  /** Tokenizer-only pools of chat models: token counting never waits behind generations. */
  private readonly tokenizerPools = new Map<string, ModelPool>();
  private readonly batchers = new Map<string, EmbedBatcher>();
  private readonly names = new Map<string, ModelInfo>();
  /** Alias patterns, in configuration order; an exact name always wins over a pattern. */
  private readonly patterns: Array<{ pattern: RegExp; model: ModelInfo }> = [];
  private readonly workerLogs: WorkerLogs;
  private readonly context: PoolContext;

  private constructor(private readonly options: LocalServiceOptions) {
    const logger = options.logger ?? silentLogger;
    this.workerLogs = listenToWorkerLogs(logger);
    this.context = { logger, hooks: options.hooks ?? {}, logChannel: this.workerLogs.channel };
    for (const model of options.models) {
      for (const name of [model.id, ...model.aliases]) this.names.set(name, model);
    }
    for (const [alias, target] of Object.entries(options.aliases ?? {})) {
      const model = this.names.get(target);
      if (!model) throw new Error(`alias ${alias} points to unknown model ${target}`);
      if (alias.includes('*')) this.patterns.push({ pattern: globPattern(alias), model });
      else this.names.set(alias, model);
    }
  }

  /** Starts one pool per model and waits until every worker has loaded its model. */
  static async start(options: LocalServiceOptions): Promise<LocalInferenceService> {
    const service = new LocalInferenceService(options);
    const { logger } = service.context;
    try {
      await Promise.all(
        options.models.map(async (model) => {
          const started = Date.now();
          const pool = new ModelPool(model, options, service.context);
          service.pools.set(model.id, pool);
          const pools = [pool];
          if (model.task === 'chat') {
            const counter = new ModelPool(model, options, service.context, 'tokenizer');
            service.tokenizerPools.set(model.id, counter);
            pools.push(counter);
          } else {
            service.batchers.set(model.id, new EmbedBatcher(pool, { ...options.embedBatching, maxQueue: options.maxQueue }));
          }
          const [notes = []] = await Promise.all(pools.map((p) => p.start()));
          const { id, task, dtype, poolSize: workers } = model;
          logger.info({ model: id, task, dtype, workers, ms: Date.now() - started, notes }, `model ${id} loaded`);
        }),
      );
    } catch (error) {
      await service.close();
      throw error;
    }
    return service;
  }

  status(): { models: ModelStatus[] } {
    return {
      models: this.options.models.map((model) => {
        const pool = this.pools.get(model.id);
        return {
          id: model.id,
          task: model.task,
          ready: pool?.ready ?? false,
          queued: (pool?.queueSize ?? 0) + (this.batchers.get(model.id)?.queued ?? 0),
          workers: pool?.size ?? 0,
          workerRestarts: pool?.workerRestarts ?? 0,
        };
      }),
    };
  }

  listModels(): ModelInfo[] {
    return this.options.models;
  }

  findModel(name: string): ModelInfo | undefined {
    return this.names.get(name) ?? this.patterns.find((p) => p.pattern.test(name))?.model;
  }

  async chat(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResult> {
    const pool = this.pool(request.model, 'chat');
    const { id, maxOutputTokens } = pool.model;
    if (request.maxTokens > maxOutputTokens) {
      throw new CoreError('output_limit_exceeded', `${request.maxTokens} output tokens asked for; the model \`${id}\` gives at most ${maxOutputTokens}.`, {
        model: request.model,
        limit: maxOutputTokens,
        requested: request.maxTokens,
      });
    }
    return pool.generate(request, options);
  }

  async countTokens(prompt: ChatPrompt, _options: CallOptions = {}): Promise<number> {
    const pool = this.pool(prompt.model, 'chat');
    return (this.tokenizerPools.get(pool.model.id) ?? pool).countTokens(prompt);
  }

  async embed(request: EmbedRequest, _options: CallOptions = {}): Promise<EmbedResult> {
    const pool = this.pool(request.model, 'embedding');
    return this.batchers.get(pool.model.id)!.embed({ inputs: request.inputs, dimensions: request.dimensions });
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values(), ...this.tokenizerPools.values()].map((pool) => pool.close()));
    this.pools.clear();
    this.tokenizerPools.clear();
    this.workerLogs.close();
  }

  private pool(name: string, task: ModelInfo['task']): ModelPool {
    const model = this.findModel(name);
    if (!model) throw modelNotFound(name);
    if (model.task !== task) throw wrongModelTask(name, model.task);
    const pool = this.pools.get(model.id);
    if (!pool) throw new CoreError('model_unavailable', `The model \`${name}\` is not loaded.`, { model: name });
    return pool;
  }
}

/** `claude-haiku-*` -> /^claude-haiku-.*$/: `*` matches any run of characters, everything else itself. */
function globPattern(glob: string): RegExp {
  return new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

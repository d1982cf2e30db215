/**
 * The inference core's face: each route is one call on the model it names, held while it runs.
 * Which models are in memory, and when they load and unload, is the residency module's
 * (./residency.ts); what a loaded model holds, ./model-pools.ts.
 */
import { CoreError, imageInputUnsupported, modelNotFound, wrongModelTask } from '../core/errors.js';
import type { InferenceHooks } from '../core/hooks.js';
import { describedAs, hasImages, type ModelDescription } from '../core/model.js';
import { silentLogger, type Logger } from '../core/log.js';
import type { CallOptions, ChatCallOptions, ChatPrompt, ChatRequest, ChatResult, DefaultModel, DetokenizeRequest, EmbedRequest, EmbedResult, InferenceService, ModelStatus, ModelUse, RerankRequest, RerankResult, ScoreRequest, ScoreResult, TokenizeRequest, TokenizeResult } from '../core/types.js';
import type { ModelInfo } from '../models/registry.js';
import type { EmbedBatchingOptions } from '../pool/embed-batcher.js';
import type { ModelPoolOptions } from '../pool/pool.js';
import { listenToWorkerLogs, type WorkerLogs } from '../pool/worker-logs.js';
import { servedFormat } from './chat-format.js';
import { defaultModelAmong, scoreDocuments } from './ranking.js';
import { statusOf, type ModelEntry } from './residence.js';
import { Residency, type LifecycleOptions } from './residency.js';

// Named here since the service began; the server, the benchmarks and the tests import them from here.
export { LOAD_RETRY_MS } from './residence.js';
export type { LifecycleOptions } from './residency.js';

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
  lifecycle?: LifecycleOptions;
}

export class LocalInferenceService implements InferenceService {
  private readonly residency: Residency;
  private readonly workerLogs: WorkerLogs;

  private constructor(options: LocalServiceOptions) {
    const logger = options.logger ?? silentLogger;
    this.workerLogs = listenToWorkerLogs(logger);
    const context = { logger, hooks: options.hooks ?? {}, logChannel: this.workerLogs.channel };
    this.residency = new Residency({
      models: options.models,
      aliases: options.aliases ?? {},
      lifecycle: options.lifecycle ?? { pinned: ['*'], keepAliveMs: -1, maxLoadedModels: 0, loadTimeoutMs: 0 },
      pools: { options, context },
    });
  }

  /** Starts the service: pinned models (every model, without lifecycle options) are loaded before it returns. */
  static async start(options: LocalServiceOptions): Promise<LocalInferenceService> {
    const service = new LocalInferenceService(options);
    try {
      await service.residency.start();
    } catch (error) {
      await service.close();
      throw error;
    }
    return service;
  }

  status(): { models: ModelStatus[] } {
    return { models: this.residency.models().map(statusOf) };
  }

  listModels(): ModelDescription[] {
    return this.residency.models().map((e) => describedAs(servedFormat(e.info)));
  }

  findModel(name: string): ModelDescription | undefined {
    const entry = this.residency.named(name);
    return entry && describedAs(servedFormat(entry.info));
  }

  async chat(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResult> {
    const entry = this.entryFor(request.model, 'chat');
    const { id, maxOutputTokens } = entry.info;
    if (request.maxTokens > maxOutputTokens) {
      throw new CoreError('output_limit_exceeded', `${request.maxTokens} output tokens asked for; the model \`${id}\` gives at most ${maxOutputTokens}.`, {
        model: request.model,
        limit: maxOutputTokens,
        requested: request.maxTokens,
      });
    }
    refuseImages(entry.info, request.messages);
    return this.residency.using(entry, options, ({ pool }) => pool.generate(request, options));
  }

  async countTokens(prompt: ChatPrompt, options: CallOptions = {}): Promise<number> {
    const entry = this.entryFor(prompt.model, 'chat');
    refuseImages(entry.info, prompt.messages);
    return this.residency.using(entry, options, (pools) => pools.tokenizerPool().countTokens(prompt));
  }

  /** A cross-encoder's scores: concurrent requests' pairs are gathered into shared forward passes, as embeddings are. */
  async rerank(request: RerankRequest, options: CallOptions = {}): Promise<RerankResult> {
    const { model: _model, ...pairs } = request;
    return this.residency.using(this.entryFor(request.model, 'rerank'), options, ({ ranker }) => ranker!.submit(pairs));
  }

  score(request: ScoreRequest, options: CallOptions = {}): Promise<ScoreResult> {
    return scoreDocuments(this, request, options);
  }

  defaultModel(use: ModelUse): DefaultModel {
    return defaultModelAmong(this.residency.models().map((e) => e.info), use);
  }

  async tokenize(request: TokenizeRequest, options: CallOptions = {}): Promise<TokenizeResult> {
    const entry = request.input.kind === 'chat' ? this.entryFor(request.model, 'chat') : this.anyEntry(request.model);
    if (request.input.kind === 'chat') refuseImages(entry.info, request.input.prompt.messages);
    return this.residency.using(entry, options, (pools) => pools.tokenizerPool().tokenize({ input: request.input, pieces: request.pieces ?? false }));
  }

  async detokenize(request: DetokenizeRequest, options: CallOptions = {}): Promise<string> {
    return this.residency.using(this.anyEntry(request.model), options, (pools) => pools.tokenizerPool().detokenize(request.tokens, request.skipSpecial ?? false));
  }

  async embed(request: EmbedRequest, options: CallOptions = {}): Promise<EmbedResult> {
    return this.residency.using(this.entryFor(request.model, 'embedding'), options, ({ batcher }) => batcher!.embed({ inputs: request.inputs, dimensions: request.dimensions, truncate: request.truncate, maxTokens: request.maxTokens, normalize: request.normalize }));
  }

  /** Unloads a model now if no request holds it (as `keep_alive: 0` does); false when it is busy or not loaded. */
  async unload(id: string): Promise<boolean> {
    const entry = this.residency.byId(id);
    return entry ? this.residency.unload(entry, 'asked') : false;
  }

  /**
   * Loads a model now, as its first request would (the load route, POST /models/load), and resolves
   * once it is loaded; its idle timer then runs (again) as after a request. An unknown name: model_not_found;
   * a failed load: model_unavailable with the reason.
   */
  async loadModel(name: string): Promise<ModelStatus> {
    const entry = this.anyEntry(name);
    await this.residency.loadNow(entry);
    return statusOf(entry);
  }

  /**
   * Unloads a model now (the unload route, POST /models/unload), after a load under way ends. A model
   * that requests hold is not taken from under them: `busy` says so and it stays loaded. A pinned
   * model is unloaded too; its next request loads it again. An unknown name: model_not_found.
   */
  async unloadModel(name: string): Promise<{ busy: boolean; status: ModelStatus }> {
    const entry = this.anyEntry(name);
    const { busy } = await this.residency.unloadNow(entry);
    return { busy, status: statusOf(entry) };
  }

  /** Takes in the models available now (the rescan does this on its timer): see Residency.refresh. */
  refresh(scan: () => ModelInfo[]): void {
    this.residency.refresh(scan);
  }

  async close(): Promise<void> {
    await this.residency.close();
    this.workerLogs.close();
  }

  private anyEntry(name: string): ModelEntry {
    const entry = this.residency.named(name);
    if (!entry) throw modelNotFound(name);
    return entry;
  }

  private entryFor(name: string, task: ModelInfo['task']): ModelEntry {
    const entry = this.anyEntry(name);
    if (entry.info.task !== task) throw wrongModelTask(name, entry.info.task);
    return entry;
  }
}

/**
 * Images never cross to the workers of a model that takes none (every model today: the HTTP edge
 * refuses them first, naming the block; this holds for any other caller of the service).
 */
function refuseImages(model: ModelInfo, messages: ChatPrompt['messages']): void {
  if (!model.imageInput && hasImages(messages)) throw imageInputUnsupported(model);
}

/**
 * A scripted InferenceService for HTTP-tier tests: no workers, no models. Chat replies echo the last
 * user message word by word (one "token" per word); counts are words. Real-model behaviour is
 * proven in test/model and test/clients.
 */
import { CoreError, modelNotFound, wrongModelTask } from '../../src/core/errors.js';
import type { AnswerPart, CallOptions, ChatCallOptions, ChatEvent, ChatPrompt, ChatRequest, ChatResult, DefaultModel, DetokenizeRequest, EmbedRequest, EmbedResult, InferenceService, ModelUse, RerankRequest, RerankResult, ScoreRequest, ScoreResult, TokenizeRequest, TokenizeResult } from '../../src/core/types.js';
import { defaultModelAmong, scoreDocuments } from '../../src/inference/ranking.js';
import type { ModelInfo } from '../../src/models/registry.js';

export const FAKE_CHAT: ModelInfo = {
  id: 'fake-chat', task: 'chat', engine: 'onnx', dir: '/nonexistent/fake-chat', dtype: 'fp32', onnxFile: 'onnx/model.onnx', externalDataChunks: 0,
  contextLength: 64, maxOutputTokens: 64, thinking: false, poolSize: 1, pooling: 'mean', normalize: true, matryoshka: false, prefix: '', aliases: ['fake-alias'], displayName: 'Fake chat', created: 1_700_000_000,
};
export const FAKE_EMBED: ModelInfo = { ...FAKE_CHAT, id: 'fake-embed', task: 'embedding', aliases: [], displayName: 'Fake embed' };

export const words = (text: string) => text.split(/\s+/).filter(Boolean);

export class FakeInference implements InferenceService {
  /** Set to make the next chat call fail after `afterTokens` streamed tokens. */
  failAfterTokens: number | null = null;
  /** Pause between generated words, to let a stream stay open. */
  tokenDelayMs = 0;
  readonly calls: { chat: ChatRequest[]; embed: EmbedRequest[] } = { chat: [], embed: [] };

  /** Set to mark a model not ready. */
  notReady = new Set<string>();

  status() {
    return {
      models: this.listModels().map((m) => ({ id: m.id, task: m.task, ready: !this.notReady.has(m.id), queued: 0, workers: 1, workerRestarts: 0 })),
    };
  }

  listModels(): ModelInfo[] {
    return [FAKE_CHAT, FAKE_EMBED];
  }

  findModel(name: string): ModelInfo | undefined {
    return this.listModels().find((m) => m.id === name || m.aliases.includes(name));
  }

  private require(name: string, task: ModelInfo['task']): ModelInfo {
    const model = this.findModel(name);
    if (!model) throw modelNotFound(name);
    if (model.task !== task) throw wrongModelTask(name, model.task);
    return model;
  }

  /** As the real service: a prompt longer than the context is refused rather than counted. */
  async countTokens(prompt: ChatPrompt): Promise<number> {
    const count = this.count(prompt);
    if (count >= FAKE_CHAT.contextLength) throw new CoreError('prompt_too_long', 'too long', { limit: FAKE_CHAT.contextLength, promptTokens: count });
    return count;
  }

  private count(prompt: ChatPrompt): number {
    this.require(prompt.model, 'chat');
    return words([prompt.system ?? '', ...prompt.messages.map((m) => m.content)].join(' ')).length;
  }

  async chat(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResult> {
    this.calls.chat.push(request);
    const inputTokens = this.count(request);
    if (request.maxTokens > FAKE_CHAT.maxOutputTokens) {
      throw new CoreError('output_limit_exceeded', 'too many', { model: request.model, limit: FAKE_CHAT.maxOutputTokens, requested: request.maxTokens });
    }
    if (inputTokens >= FAKE_CHAT.contextLength) throw new CoreError('prompt_too_long', 'too long', { limit: FAKE_CHAT.contextLength, promptTokens: inputTokens });
    options.onEvent?.({ type: 'start', inputTokens });
    const send = (event: ChatEvent) => options.onEvent?.(event);
    const parts: AnswerPart[] = [];
    let produced = 0;
    const part = (kind: 'text' | 'thinking', text: string) => {
      const index = parts.length;
      parts.push({ kind, text });
      send({ type: 'part_start', index, part: { kind } });
      if (text) send({ type: 'part_delta', index, text, outputTokens: produced });
      send({ type: 'part_stop', index });
    };
    // Thinking on: one thinking part first, "thinking about <the user's words>".
    const lastUser = request.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    if (request.thinking?.enabled) {
      produced += 2;
      part('thinking', `thinking about ${lastUser}`);
    }
    // With tools, a user message "call NAME {json}" is answered by that call (finish tool_call).
    const scripted = /^call (\S+) (\{.*\})$/.exec(lastUser);
    if (request.tools?.length && scripted) {
      const call = { id: 'fake0001', name: scripted[1]!, input: JSON.parse(scripted[2]!) as Record<string, unknown> };
      const index = parts.length;
      parts.push({ kind: 'tool_call', call });
      send({ type: 'part_start', index, part: { kind: 'tool_call', id: call.id, name: call.name } });
      const json = JSON.stringify(call.input);
      send({ type: 'part_delta', index, text: json.slice(0, 5), outputTokens: produced });
      send({ type: 'part_delta', index, text: json.slice(5), outputTokens: produced });
      send({ type: 'part_stop', index });
      return { parts, text: '', finish: 'tool_call', stopString: null, inputTokens, outputTokens: produced + 3 };
    }
    const reply = words(lastUser);
    const out: string[] = [];
    const index = parts.length;
    parts.push({ kind: 'text', text: '' });
    send({ type: 'part_start', index, part: { kind: 'text' } });
    for (const word of reply) {
      if (out.length === request.maxTokens) break;
      if (this.failAfterTokens !== null && out.length === this.failAfterTokens) {
        throw new CoreError('worker_failed', 'The model worker failed while handling the request.');
      }
      if (this.tokenDelayMs > 0) await new Promise((r) => setTimeout(r, this.tokenDelayMs));
      const piece = out.length === 0 ? word : ` ${word}`;
      out.push(word);
      send({ type: 'part_delta', index, text: piece, outputTokens: produced + out.length });
    }
    send({ type: 'part_stop', index });
    const text = out.join(' ');
    parts[index] = { kind: 'text', text };
    return {
      parts,
      text,
      finish: out.length === request.maxTokens && out.length > 0 ? 'length' : 'eos',
      stopString: null,
      inputTokens,
      outputTokens: produced + out.length,
    };
  }

  async embed(request: EmbedRequest): Promise<EmbedResult> {
    this.calls.embed.push(request);
    this.require(request.model, 'embedding');
    if (request.dimensions !== undefined && request.dimensions !== 2) {
      throw new CoreError('dimensions_unsupported', 'dimensions not supported', { model: request.model, limit: 2, requested: request.dimensions, shortenable: false });
    }
    const vectors = request.inputs.map((input) => {
      const n = typeof input === 'string' ? words(input).length : input.length;
      return Float32Array.from([Math.cos(n), Math.sin(n)]);
    });
    const promptTokens = request.inputs.reduce((sum, input) => sum + (typeof input === 'string' ? words(input).length : input.length), 0);
    return { vectors, promptTokens };
  }

  /** One token per word, its id the word's length; a chat prompt counts as countTokens does. */
  async tokenize(request: TokenizeRequest): Promise<TokenizeResult> {
    if (request.input.kind === 'chat') {
      const count = await this.countTokens(request.input.prompt);
      return { tokens: Array.from({ length: count }, (_, i) => i + 1) };
    }
    if (!this.findModel(request.model)) throw modelNotFound(request.model);
    const tokens = words(request.input.text).map((w) => w.length);
    if (!request.pieces) return { tokens };
    let cursor = 0;
    const pieces = words(request.input.text).map((w) => {
      const start = request.input.kind === 'text' ? request.input.text.indexOf(w, cursor) : 0;
      cursor = start + w.length;
      return { id: w.length, text: w, token: w, special: false, start, stop: cursor };
    });
    return { tokens, pieces };
  }

  /** Each id decodes to that many x's; ids over 1000 are outside the vocabulary. */
  async detokenize(request: DetokenizeRequest): Promise<string> {
    if (!this.findModel(request.model)) throw modelNotFound(request.model);
    const bad = request.tokens.findIndex((t) => t >= 1000);
    if (bad >= 0) throw new CoreError('token_out_of_vocabulary', 'out of vocabulary', { item: bad, limit: 1000 });
    return request.tokens.map((t) => 'x'.repeat(t)).join(' ');
  }

  /** The fake has no cross-encoder: every rerank is a wrong task. */
  async rerank(request: RerankRequest): Promise<RerankResult> {
    const model = this.findModel(request.model);
    if (!model) throw modelNotFound(request.model);
    throw wrongModelTask(request.model, model.task);
  }

  /** Ranking and the default model as the real service has them (src/inference/ranking.ts), over this fake's models and calls. */
  score(request: ScoreRequest, options?: CallOptions): Promise<ScoreResult> {
    return scoreDocuments(this, request, options);
  }

  defaultModel(use: ModelUse): DefaultModel {
    return defaultModelAmong(this.listModels(), use);
  }

  async close(): Promise<void> {}
}

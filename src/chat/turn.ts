/**
 * One chat turn: built from (model, request), it owns the rendered prompt, the thinking plan, the
 * grammar guide, the tool-call parser, the answer builder and the finish reason, and hands an engine
 * one sequence spec (src/engines/sequence.ts). It knows no engine: the worker runs its sequence on
 * whichever engine the model has (src/worker/chat-task.ts).
 *
 * A turn stops at the model's end-of-sequence ids, at its output limit, at a stop string, at the
 * first tool call when parallel calls are off, or where the grammar is complete; the engine stops it
 * when cancelled. With `ignoreEos` (a benchmark's fixed output length) the end ids are disallowed in
 * free text, as llama-server's logit bias does, and one that comes anyway (a script) does not end
 * it, as in vLLM; where a grammar governs, its end still ends the turn. Events (the answer's parts as they grow, log probabilities) go to `send` as they
 * happen; `result` gives the whole answer once the engine has run the sequence.
 *
 * Contract: worker thread; one turn per request, `dispose` once its sequence has ended.
 */
import type { ChatEvent, ChatRequest, ChatResult, FinishReason, TokenLogprob } from '../core/types.js';
import type { LogFn } from '../core/log.js';
import type { LogitsMask, SequenceImage, SequenceSpec } from '../engines/sequence.js';
import { stepLogprobs, type StepLogprobs } from '../engines/logprobs.js';
import { AnswerBuilder } from './answer.js';
import { guideFor, type Guide } from './grammar/guide.js';
import type { ChatModel } from './model.js';
import { familyOf, turnEndIds } from './family.js';
import { renderPrompt } from './prompt.js';
import { samplingFor } from './sampling.js';
import { TextStream } from './text-stream.js';
import { ThinkingPlan } from './thinking.js';
import { createToolCallParser } from './tools/parser.js';

export interface TurnOptions {
  /** Where the turn's events go as they happen (a streaming reply's port); ignored when absent. */
  send?: (event: ChatEvent) => void;
  /** The engine applies asynchronous logits masks: a constrained request can be served. */
  constrains: boolean;
  /** Where warnings go (a tool schema feature the grammar does not enforce). */
  log?: LogFn;
}

/** A turn's sequence as it stands: what the engine has generated and what the turn made of it. */
interface Progress {
  generated: number[];
  thinkingTokens: number;
  stopString: string | null;
  /** The grammar was complete and the model cannot write its end token: the answer ended there. */
  grammarEnded: boolean;
  /** The last token was an end token that ends the turn (not one `ignoreEos` passes over). */
  ended: boolean;
  logprobs: TokenLogprob[];
  /** The step's log probabilities (from `observe`), until its token arrives. */
  step?: StepLogprobs;
}

export class ChatTurn {
  private readonly progress: Progress = { generated: [], thinkingTokens: 0, stopString: null, grammarEnded: false, ended: false, logprobs: [] };
  private readonly eos: ReadonlySet<number>;
  private readonly stream: TextStream;
  private readonly answer: AnswerBuilder;
  private readonly send: (event: ChatEvent) => void;
  private readonly thinking: ThinkingPlan | undefined;
  /** With ignoreEos: every token but the end ids, and the thinking masks so narrowed (made once each). */
  private readonly noEnd: { all: LogitsMask; narrowed: WeakMap<LogitsMask, LogitsMask> } | undefined;

  private constructor(
    private readonly model: ChatModel,
    private readonly request: ChatRequest,
    readonly promptIds: number[],
    /** The prompt's images and the tokens they fill in promptIds (a vision-language model's). */
    readonly images: SequenceImage[] | undefined,
    private readonly guide: Guide | undefined,
    options: TurnOptions & { opensThought: boolean },
  ) {
    const family = familyOf(model);
    this.eos = new Set(turnEndIds(model));
    this.send = options.send ?? (() => {});
    if (request.ignoreEos) this.noEnd = { all: this.withoutEnd(new Uint32Array(Math.ceil(model.vocabSize / 32)).fill(-1 >>> 0)), narrowed: new WeakMap() };
    // The parser reads the family's markers, so the text keeps them (special or not); the answer
    // builder keeps them from the client's text.
    this.stream = new TextStream(family.decode, request.stopStrings);
    const tools = request.tools?.length && request.toolChoice?.mode !== 'none' ? request.tools : undefined;
    this.thinking = ThinkingPlan.for(model, request, options.opensThought, guide !== undefined);
    const format = family.features.toolFormat;
    // Harmony's parser reads its channels whether or not the request has tools.
    const parser = tools || format === 'harmony' ? createToolCallParser(format, tools ?? [], family.features.auto?.calls) : undefined;
    // A thought is looked for when thinking was asked for or planned, the prompt opened it, or the
    // template has no switch (the model decides: Kimi K2 Thinking, the R1 family); not when thinking
    // was switched off. (Gemma 4's opening tag is two tokens: no plan forces it, the model writes it.)
    const lookForThought = family.tags && (request.thinking?.enabled || this.thinking || options.opensThought || !family.features.thinkingSwitch);
    this.answer = new AnswerBuilder({
      send: this.send,
      ...(lookForThought ? { reasoning: family.tags, startsInThought: options.opensThought } : {}),
      ...(parser ? { tools: parser } : {}),
      markers: family.markers,
    });
  }

  /**
   * Renders the prompt (refused, prompt_too_long, when it leaves no room for output) and builds the
   * grammar (refused, schema_unsupported, when the schema cannot be expressed or the engine cannot
   * constrain), before anything is sent.
   */
  static async start(model: ChatModel, request: ChatRequest, options: TurnOptions): Promise<ChatTurn> {
    const prompt = renderPrompt(model, request);
    const guide = await guideFor(model, request, { constrains: options.constrains, ...(options.log ? { log: options.log } : {}) });
    return new ChatTurn(model, request, prompt.ids, prompt.images, guide, { ...options, opensThought: prompt.opensThought });
  }

  get inputTokens(): number {
    return this.promptIds.length;
  }

  /**
   * As Anthropic's API does: output the prompt leaves no room for is not refused; the turn stops
   * where the window is full (finish context_full) instead of at the request's own limit.
   */
  private get room(): number {
    return this.model.info.contextLength - this.inputTokens;
  }

  get maxTokens(): number {
    return Math.min(this.request.maxTokens, this.room);
  }

  /** The one sequence the engine runs for this turn (the engine adds cancellation and its watchdog's `busy`). */
  sequence(): Omit<SequenceSpec, 'cancelled' | 'busy'> {
    const top = this.request.logprobs;
    return {
      promptIds: this.promptIds,
      ...(this.images ? { images: this.images } : {}),
      maxTokens: this.maxTokens,
      sampling: samplingFor(this.request.sampling, this.model.generationDefaults),
      onToken: (id) => (this.accept(id), this.shouldStop(id)),
      ...(this.thinking || this.guide || this.noEnd ? { logitsMask: () => this.mask() } : {}),
      ...(top !== undefined ? { observe: (row: Float32Array, token: number) => void (this.progress.step = stepLogprobs(row, token, top)) } : {}),
    };
  }

  /** With thinking, the thought's tags first; then the answer's grammar. */
  private mask(): LogitsMask | null | undefined | Promise<LogitsMask | null> {
    const { thinking, guide, progress } = this;
    const remaining = this.maxTokens - progress.generated.length;
    if (thinking && !thinking.done) {
      const mask = thinking.mask({ generated: progress.generated.length, thinkingTokens: progress.thinkingTokens, remaining, ...(guide ? { reserve: guide.reserve } : {}) });
      return this.noEnd ? this.narrow(mask) : mask;
    }
    if (!guide) return this.noEnd?.all;
    return guide.mask(remaining).then((mask) => {
      if (mask === null) progress.grammarEnded = true;
      return mask;
    });
  }

  /** A thinking mask without the end ids (ignoreEos), unless they are all it allows. */
  private narrow(mask: LogitsMask | undefined): LogitsMask | undefined {
    const { all, narrowed } = this.noEnd!;
    if (!mask) return all;
    let known = narrowed.get(mask);
    if (!known) {
      const without = this.withoutEnd(mask.slice());
      narrowed.set(mask, (known = without.some((word) => word !== 0) ? without : mask));
    }
    return known;
  }

  /** `mask` (changed in place) with the turn's end ids disallowed. */
  private withoutEnd(mask: LogitsMask): LogitsMask {
    for (const id of this.eos) if (id >>> 5 < mask.length) mask[id >>> 5]! &= ~(1 << (id & 31));
    return mask;
  }

  /** A generated token: its log probabilities, the grammar or the thought, then its text into the answer. */
  private accept(id: number): void {
    const { progress } = this;
    if (progress.step && !this.eos.has(id)) this.sendLogprobs(id, progress.step);
    progress.step = undefined;
    const grammar = this.guide !== undefined && (this.thinking?.done ?? true);
    if (grammar) this.guide!.accept(id);
    else this.thinking?.accept(id, progress.generated.length + 1);
    progress.generated.push(id);
    progress.ended = this.eos.has(id) && (!this.request.ignoreEos || grammar);
    if (this.eos.has(id)) return;
    if (this.answer.thinking) progress.thinkingTokens++;
    const step = this.stream.push(id);
    if (step.stopString !== null) progress.stopString = step.stopString;
    if (step.delta) this.answer.push(step.delta, progress.generated.length);
  }

  private sendLogprobs(id: number, step: StepLogprobs): void {
    const text = (token: number) => this.model.tokenizer.decode([token], { skip_special_tokens: false });
    const entry: TokenLogprob = { token: id, text: text(id), logprob: step.logprob, top: step.top.map((t) => ({ ...t, text: text(t.token) })) };
    this.progress.logprobs.push(entry);
    this.send({ type: 'token_logprobs', entry });
  }

  private get parallel(): boolean {
    return this.request.toolChoice?.parallel ?? true;
  }

  private get calls(): number {
    return this.answer.parts.filter((p) => p.kind === 'tool_call').length;
  }

  /** No parallel calls asked for: the answer ends with its first call. */
  private shouldStop(id: number): boolean {
    return this.progress.ended || this.progress.stopString !== null || (!this.parallel && this.calls > 0);
  }

  /** The whole answer, once the sequence has ended; the last text is flushed first, the last chance for a stop string to show. */
  result(cachedInputTokens: number): ChatResult {
    const { progress } = this;
    const tail = this.stream.finish();
    progress.stopString ??= tail.stopString;
    if (tail.delta) this.answer.push(tail.delta, progress.generated.length);
    this.answer.finish(progress.generated.length);
    const text = this.answer.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
    return {
      parts: this.answer.parts, text, finish: this.finishReason(), stopString: progress.stopString,
      inputTokens: this.inputTokens, cachedInputTokens, outputTokens: progress.generated.length,
      ...(this.thinking ? { reasoningTokens: this.thinking.thoughtTokens ?? progress.generated.length } : {}),
      ...(this.request.logprobs !== undefined ? { logprobs: progress.logprobs } : {}),
    };
  }

  private finishReason(): FinishReason {
    const { generated, grammarEnded, stopString } = this.progress;
    const ended = grammarEnded || this.progress.ended;
    if (stopString !== null) return 'stop_string';
    if (this.calls > 0 && (ended || !this.parallel)) return 'tool_call';
    if (ended) return 'eos';
    if (generated.length >= this.room && this.room < this.request.maxTokens) return 'context_full';
    return 'length';
  }

  dispose(): void {
    this.guide?.dispose();
  }
}

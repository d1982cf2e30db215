/**
 * Generation in a worker thread: the batch decoder (every generation of this worker advances in one
 * forward pass per step), or transformers.js `generate` (generate-transformers.ts) for exports it
 * cannot drive. Either way a generation stops at the model's end-of-sequence ids, at the output
 * limit, at a stop string, or at the caller's cancel flag, each checked after every decoding step.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Fault } from '../core/hooks.js';
import type { ChatRequest, FinishReason, TokenLogprob } from '../core/types.js';
import { TaskControl, type PortMessage, type ReplyOf } from './protocol.js';
import { TextStream } from './text-stream.js';
import type { LoadedModel } from './load.js';
import { AnswerBuilder, THINK_CLOSE, THINK_OPEN } from './answer.js';
import { featuresOf, renderPrompt } from './prompt.js';
import { createToolCallParser } from './tools/parser.js';
import { BatchDecoder, type SequenceSpec } from './decode/scheduler.js';
import { onlyToken, seededRandom, TokenPenalties, type SamplingPlan } from './decode/sampler.js';
import { stepLogprobs, type StepLogprobs } from './decode/logprobs.js';
import { cacheShape, supportsBatchDecoding } from './decode/session.js';
import { PrefixCache } from './decode/prefix-cache.js';
import { planConstraint } from './grammar/constraint.js';
import type { ToolFormat } from './tools/types.js';
import { Guide } from './grammar/guide.js';
import { generateWithTransformers } from './generate-transformers.js';
import { CoreError } from '../core/errors.js';
import type { WorkerLog } from './log.js';

export type GenerateOutcome = Omit<ReplyOf<'generate'>, 'threadId' | 'heapUsedBytes'>;

/** Holds this thread, as one long synchronous operation does. */
const block = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Test-only faults (InferenceHooks.fault) committed once the prompt is accepted: a crash, a stuck operation, an exception. */
function commitFault(fault: 'crash' | 'hang' | 'throw'): void {
  if (fault === 'crash') process.exit(70);
  if (fault === 'hang') block(10 * 60_000);
  throw new Error('injected fault');
}

interface Decoding {
  decoder: BatchDecoder;
  /** The decoder's KV store, when the prefix cache is on. */
  cache?: PrefixCache;
}

const decoders = new WeakMap<LoadedModel, Decoding | null>();

/**
 * One batch decoder per loaded model (with its prefix cache when the budget allows one), or null when
 * the export's signature needs transformers.js generate (which never uses the cache).
 */
function batchDecoderFor(loaded: LoadedModel): Decoding | null {
  if (!decoders.has(loaded)) {
    const shape = supportsBatchDecoding(loaded) ? cacheShape(loaded) : undefined;
    // A dynamically quantized graph: reuse only whole, aligned prefill chunks (exact warm = cold).
    const passDependent = loaded.dynamicQuantization;
    const { promptCacheBytes, prefillChunkTokens } = loaded.engine;
    const cache = shape && promptCacheBytes > 0 ? new PrefixCache(shape, promptCacheBytes, passDependent ? prefillChunkTokens : 1) : undefined;
    decoders.set(loaded, shape ? { decoder: new BatchDecoder(loaded, { prefillChunkTokens, passDependent, ...(cache ? { kvStore: cache } : {}) }), ...(cache ? { cache } : {}) } : null);
  }
  return decoders.get(loaded)!;
}

export interface GenerateOptions {
  cancel: Int32Array;
  port?: MessagePort;
  fault?: Fault;
  /** Tests only: the text to force, token by token, then end of sequence (InferenceHooks.script). */
  script?: string;
  log?: WorkerLog;
}

export async function generate(loaded: LoadedModel, request: ChatRequest, options: GenerateOptions): Promise<GenerateOutcome> {
  const started = performance.now();
  const { cancel, port } = options;
  // Refuses (prompt_too_long) a prompt that leaves no room for output.
  const prompt = renderPrompt(loaded, request);
  const inputTokens = prompt.ids.length;
  const context = loaded.info.contextLength;
  // As Anthropic's API does: output the prompt leaves no room for is not refused; the generation
  // stops where the window is full (finish context_full) instead of at the request's own limit.
  const room = context - inputTokens;
  const maxTokens = Math.min(request.maxTokens, room);
  const send = (message: PortMessage) => port?.postMessage(message);
  const decoding = batchDecoderFor(loaded);
  const features = featuresOf(loaded);
  // The grammar is built before the reply starts: a schema it cannot express refuses the request.
  const guide = options.script === undefined ? await guideFor(loaded, request, features.toolFormat, decoding !== null, options.log) : undefined;
  // The cached prefix is looked up now, not when the decoder admits the sequence, so that `start`
  // (sent before the prefill, which may wait behind others) already carries the figure the result
  // will: the decoder is handed this very prefix.
  const cancelledEarly = Atomics.load(cancel, TaskControl.CANCEL) !== 0;
  const prefix = decoding?.cache && !cancelledEarly ? decoding.decoder.lookup(prompt.ids) : undefined;
  const cachedInputTokens = prefix?.length ?? 0;
  send({ type: 'start', inputTokens, cachedInputTokens });
  const slowPrefillMs = typeof options.fault === 'object' ? options.fault.slowPrefillMs : 0;
  if (typeof options.fault === 'string') {
    // A fault is this task's own work: a worker it kills must not run it again.
    Atomics.store(cancel, TaskControl.STARTED, 1);
    Atomics.store(cancel, TaskControl.BUSY, 1);
    commitFault(options.fault);
  }

  const eos = new Set(loaded.eosTokenIds);
  const decode = (ids: number[]) => (ids.length === 0 ? '' : loaded.tokenizer.decode(ids, { skip_special_tokens: true }));
  const stream = new TextStream(decode, request.stopStrings);
  const tools = request.tools?.length && request.toolChoice?.mode !== 'none' ? request.tools : undefined;
  const thinking = thinkingPlan(loaded, request);
  const answer = new AnswerBuilder({
    send,
    thinking: thinking !== undefined,
    ...(tools ? { tools: createToolCallParser(features.toolFormat, tools) } : {}),
  });
  const parallel = request.toolChoice?.parallel ?? true;
  const generated: number[] = [];
  let thinkingTokens = 0;
  let stopString: string | null = null;
  let firstTokenMs: number | null = null;
  // With thinking, the grammar governs the answer after the thought's closing tag.
  let thought = thinking === undefined;
  /** Tokens of the thought, its tags included, once it has closed. */
  let thoughtTokens: number | undefined;
  // Log probabilities, when asked for: worked out from the step's logits (observe), sent before the token's text.
  const logprobs: TokenLogprob[] = [];
  let stepLogprob: StepLogprobs | undefined;
  const tokenText = (id: number) => loaded.tokenizer.decode([id], { skip_special_tokens: false });
  const onToken = (id: number) => {
    firstTokenMs ??= performance.now() - started;
    if (stepLogprob && !eos.has(id)) {
      const entry: TokenLogprob = { token: id, text: tokenText(id), logprob: stepLogprob.logprob, top: stepLogprob.top.map((t) => ({ ...t, text: tokenText(t.token) })) };
      logprobs.push(entry);
      send({ type: 'token_logprobs', entry });
    }
    stepLogprob = undefined;
    if (guide && thought) guide.accept(id);
    else if (id === thinking?.closeId) {
      thought = true;
      thoughtTokens = generated.length + 1;
    }
    generated.push(id);
    plan.penalties?.record(id);
    if (eos.has(id)) return;
    if (answer.thinking) thinkingTokens++;
    const step = stream.push(id);
    if (step.stopString !== null) stopString = step.stopString;
    if (step.delta) answer.push(step.delta, generated.length);
  };
  const calls = () => answer.parts.filter((p) => p.kind === 'tool_call').length;
  const cancelled = () => Atomics.load(cancel, TaskControl.CANCEL) !== 0;
  if (cancelled()) {
    // The client left while the task waited in the queue: skip the prefill entirely.
    return {
      result: { parts: [], text: '', finish: 'length', stopString: null, inputTokens, cachedInputTokens, outputTokens: 0 },
      cancelled: true,
      timing: { firstTokenMs: null, totalMs: performance.now() - started, peakBatch: 0 },
    };
  }

  const { sampling } = request;
  const defaults = loaded.generationDefaults;
  const doSample = sampling.temperature === undefined ? defaults.doSample : sampling.temperature > 0;
  const plan: SamplingPlan = {
    doSample,
    temperature: sampling.temperature || defaults.temperature || 1,
    topK: sampling.topK ?? defaults.topK ?? 0,
    topP: sampling.topP ?? defaults.topP ?? 1,
    ...(sampling.seed !== undefined ? { random: seededRandom(sampling.seed) } : {}),
    ...(penaltiesFor(sampling, defaults.repetitionPenalty, prompt.ids) ?? {}),
  };
  // No parallel calls asked for: the answer ends with its first call.
  const shouldStop = (id: number) => eos.has(id) || stopString !== null || (!parallel && calls() > 0);
  // Through the sampler's logits mask: a test's script, token by token; or, with thinking on a model
  // with a thinking switch, the thought's opening tag first and its closing tag once the budget is
  // spent (or once only the room the constrained answer needs is left); then the answer's grammar.
  const script = options.script === undefined ? undefined : [...loaded.tokenizer.encode(options.script, { add_special_tokens: false }), loaded.eosTokenIds[0]!];
  const remaining = () => maxTokens - generated.length;
  /** The grammar was complete and the model cannot write its end token: the answer ended there. */
  let grammarEnded = false;
  const logitsMask = script
    ? () => onlyToken(vocabSizeOf(loaded), script[Math.min(generated.length, script.length - 1)]!)
    : thinking || guide
      ? () => {
          if (thinking && !thought) {
            if (generated.length === 0) return thinking.open;
            if (answer.thinking && thinking.budget !== undefined && thinkingTokens >= thinking.budget) return thinking.close;
            if (guide && remaining() <= guide.reserve + 1) return thinking.close;
            return undefined;
          }
          return guide?.mask(remaining()).then((mask) => {
            if (mask === null) grammarEnded = true;
            return mask;
          });
        }
      : undefined;
  let prefilled = false;
  const busy = (on: boolean) => {
    Atomics.store(cancel, TaskControl.STARTED, 1);
    Atomics.store(cancel, TaskControl.BUSY, on ? 1 : 0);
    // Test fault: this request's prefill takes long, inside the decoder as a long prompt's would.
    if (on && !prefilled && slowPrefillMs > 0) block(slowPrefillMs);
    prefilled ||= on;
  };
  const top = request.logprobs;
  const observe = top === undefined ? undefined : (row: Float32Array, token: number) => void (stepLogprob = stepLogprobs(row, token, top));
  const spec: SequenceSpec = {
    promptIds: prompt.ids, maxTokens, sampling: plan, onToken: (id) => (onToken(id), shouldStop(id)), cancelled, busy,
    ...(logitsMask ? { logitsMask } : {}), ...(observe ? { observe } : {}), ...(decoding?.cache ? { prefix: prefix ?? null } : {}),
  };
  let peakBatch: number;
  try {
    peakBatch = decoding ? await decoding.decoder.run(spec) : (await generateWithTransformers(loaded, spec, loaded.eosTokenIds), 1);
  } finally {
    guide?.dispose();
  }

  // The reason is decided after the final flush, which is the last chance for a stop string to show.
  const tail = stream.finish();
  stopString ??= tail.stopString;
  if (tail.delta) answer.push(tail.delta, generated.length);
  answer.finish(generated.length);
  const last = generated.at(-1);
  const ended = grammarEnded || (last !== undefined && eos.has(last));
  let finish: FinishReason;
  if (stopString !== null) finish = 'stop_string';
  else if (calls() > 0 && (ended || !parallel)) finish = 'tool_call';
  else if (ended) finish = 'eos';
  else if (generated.length >= room && room < request.maxTokens) finish = 'context_full';
  else finish = 'length';
  const text = answer.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
  return {
    result: {
      parts: answer.parts, text, finish, stopString, inputTokens, cachedInputTokens, outputTokens: generated.length,
      ...(thinking ? { reasoningTokens: thoughtTokens ?? generated.length } : {}),
      ...(top !== undefined ? { logprobs } : {}),
    },
    cancelled: cancelled(),
    timing: { firstTokenMs, totalMs: performance.now() - started, peakBatch },
    ...(decoding?.cache ? { promptCache: decoding.cache.stats() } : {}),
  };
}

/**
 * Thinking for this request, when it asked for it and the model can: the model's template has a
 * thinking switch and its tags are single tokens. `open`/`close` are logits masks allowing only
 * that tag; `budget` is the request's thinking budget, if any.
 */
function thinkingPlan(loaded: LoadedModel, request: ChatRequest): { open: Uint32Array; close: Uint32Array; closeId: number; budget?: number } | undefined {
  if (!request.thinking?.enabled || !featuresOf(loaded).thinkingSwitch) return undefined;
  const single = (tag: string) => {
    const ids = loaded.tokenizer.encode(tag, { add_special_tokens: false });
    return ids.length === 1 ? ids[0]! : undefined;
  };
  const open = single(THINK_OPEN);
  const close = single(THINK_CLOSE);
  if (open === undefined || close === undefined) return undefined;
  return { open: onlyToken(vocabSizeOf(loaded), open), close: onlyToken(vocabSizeOf(loaded), close), closeId: close, ...(request.thinking.budgetTokens !== undefined ? { budget: request.thinking.budgetTokens } : {}) };
}

/**
 * The guide for a request whose output is constrained (an output schema, a forced or strict tool
 * call), its grammar compiled; undefined when the output is free.
 */
async function guideFor(loaded: LoadedModel, request: ChatRequest, format: ToolFormat, batched: boolean, log?: WorkerLog): Promise<Guide | undefined> {
  const constraint = planConstraint(request, format);
  if (!constraint) return undefined;
  const reason = request.output ? 'output' : 'tool';
  if (!batched) {
    throw new CoreError('schema_unsupported', 'This model is served by transformers.js generate (its export is not one the batch decoder drives), which has no constrained decoding', { reason });
  }
  const create = (c: NonNullable<typeof constraint>) => {
    for (const r of c.relaxed) log?.('warn', `tool ${r.tool}: input schema feature ${r.feature} at '${r.path || '/'}' is not enforced by the grammar (the tool is not strict)`);
    return Guide.create(loaded, vocabSizeOf(loaded), c, reason);
  };
  try {
    return await create(constraint);
  } catch (error) {
    // A schema that is not strict is never refused: without its value checks, again.
    const relaxable = request.tools?.some((t) => !t.strict) || request.output?.strict === false;
    const loose = relaxable ? planConstraint(request, format, true) : undefined;
    if (!loose) throw error;
    return create(loose);
  }
}

/** The request's penalties on seen tokens (the repetition penalty defaults to the model's generation_config), when any applies. */
function penaltiesFor(sampling: ChatRequest['sampling'], defaultRepetition: number | undefined, promptIds: readonly number[]): { penalties: TokenPenalties } | undefined {
  const options = { presence: sampling.presencePenalty ?? 0, frequency: sampling.frequencyPenalty ?? 0, repetition: sampling.repetitionPenalty ?? defaultRepetition ?? 1 };
  if (options.presence === 0 && options.frequency === 0 && options.repetition === 1) return undefined;
  return { penalties: new TokenPenalties(options, promptIds) };
}

const vocabSizeOf = (loaded: LoadedModel) => (loaded.model.config as unknown as { vocab_size: number }).vocab_size;

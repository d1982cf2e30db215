/**
 * The llama.cpp engine as the chat layer sees it (../sequence.ts SequenceEngine), llama-server's
 * slots on node-llama-cpp: `generationBatchSize` sequences in one context or two (./layout.ts), whose
 * pending tokens node-llama-cpp decodes in one batch a context each step (continuous batching: a sequence joins or leaves
 * between steps). Which sequence a request runs on and what of its KV is kept is ./slots.ts's;
 * this file feeds the sequence it is handed.
 *
 * - Steps: the decoding sequences ask for their next tokens together (./step-gate.ts), so each step
 *   is one batch of all of them, as llama-server steps its slots.
 * - Claims first: a request claiming a sequence erases its old KV under node-llama-cpp's context
 *   lock, which node-llama-cpp's batch loop holds for as long as anything is queued; a long prefill's
 *   chunks beside another sequence's steps kept it queued, and a 2-token request waited 2.3-3.2 s for
 *   an 8k prefill to end. No chunk or step is queued while a claim erases (./slots.ts erasesDone):
 *   the queue drains, the erase runs, the work resumes (the request then took 0.26-0.43 s).
 * - Sampling: llama.cpp's own samplers (temperature, top-k, top-p, a seed, penalties) on the fast
 *   path; a logits mask (a grammar, a thinking tag) becomes a logit bias of -inf on every token it
 *   disallows, end-of-generation tokens included, handed to the addon as typed arrays made once per
 *   mask (./mask-bias.ts). When the caller reads each step's
 *   distribution (log probabilities), or asks for penalties over different spans than llama.cpp's
 *   one penalty window, the step takes the model's whole distribution from llama.cpp (greedy chain,
 *   no bias: its softmax of the raw logits) and the token is chosen here by the ONNX engine's
 *   sampler (../sampler.ts), with the same mask, seed semantics and penalties; that path is slower
 *   (a vocabulary-sized copy per step).
 *
 * Contract: worker thread; one engine per loaded model, made on its first use and kept with it.
 */
import type { LlamaContextSequence, LlamaContextSequenceRepeatPenalty, Token, TokenBias } from 'node-llama-cpp';
import type { PromptCacheStats } from '../../core/hooks.js';
import { type LookupOptions, type SamplingSettings, type SequenceEngine, type SequencePrefix, type SequenceSpec } from '../sequence.js';
import { sample, samplingPlan } from '../sampler.js';
import { prefillEnd } from './attention-tile.js';
import type { LlamaLoaded } from './load.js';
import { maskBias } from './mask-bias.js';
import { LlamaSlots, type Placement } from './slots.js';
import { StepGate } from './step-gate.js';

const engines = new WeakMap<LlamaLoaded, SequenceEngine>();

export function llamaEngine(loaded: LlamaLoaded): SequenceEngine {
  let engine = engines.get(loaded);
  if (!engine) engines.set(loaded, (engine = new LlamaSequences(loaded)));
  return engine;
}

class LlamaSequences implements SequenceEngine {
  readonly constrains = true;
  private readonly slots: LlamaSlots;
  private readonly gate = new StepGate();
  private running = 0;

  constructor(private readonly loaded: LlamaLoaded) {
    this.slots = new LlamaSlots(loaded);
  }

  /** The request's sequence, claimed (waiting for one that fits), with the prefix of the prompt it keeps (./slots.ts). */
  lookup(promptIds: readonly number[], maxTokens = 0, { cancelled }: LookupOptions = {}): Promise<SequencePrefix> {
    return this.slots.place(promptIds, maxTokens, cancelled);
  }

  async run(spec: SequenceSpec, prefix?: SequencePrefix | null): Promise<number> {
    const placement = (prefix as Placement | null | undefined) ?? (await this.slots.place(spec.promptIds, spec.maxTokens, spec.cancelled));
    const { slot, length: reuse } = placement;
    // Shared prefixes (./slots.ts): after each forward pass of this sequence, requests waiting for its prompt's prefix hear of it.
    const busy = (on: boolean) => (spec.busy?.(on), on || placement.evaluated());
    this.running++;
    let peak = this.running;
    try {
      await this.decode(slot.sequence, { ...spec, busy }, spec.promptIds.slice(reuse), () => (peak = Math.max(peak, this.running)));
      return peak;
    } finally {
      this.running--;
      placement.release();
    }
  }

  promptCacheStats(): PromptCacheStats {
    return this.slots.promptCacheStats();
  }

  /**
   * Evaluates `input` up to its last chunk of prefillChunkTokens in chunks of that size, checking
   * for cancellation between them (node-llama-cpp decodes other sequences' steps in between, and a
   * deadline can stop a long prompt at a chunk's end rather than after the whole prompt: the
   * watchdog would otherwise find the sequence stuck in one long pass and end the worker). The last
   * chunk, the prompt's last token with what precedes it, is left to the pass that samples the first
   * output token (one pass for a short prompt, as llama.cpp itself does: a pass of its own for the
   * last token cost a decoding step's time to first token). No chunk is shorter than llama.cpp's
   * attention tile where the prompt allows (./attention-tile.ts prefillEnd). Where the last chunk
   * starts, or -1 when cancelled.
   */
  private async prefill(sequence: LlamaContextSequence, spec: SequenceSpec, input: number[]): Promise<number> {
    const chunk = this.loaded.engine.prefillChunkTokens;
    const last = prefillEnd(input.length, chunk);
    for (let at = 0; at < last; at += chunk) {
      if (spec.cancelled()) return -1;
      await this.slots.erasesDone();
      spec.busy?.(true);
      try {
        await sequence.evaluateWithoutGeneratingNewTokens(input.slice(at, Math.min(at + chunk, last)) as Token[]);
      } finally {
        spec.busy?.(false);
      }
    }
    return spec.cancelled() ? -1 : last;
  }

  /** Evaluates `input` after what the sequence holds and generates until the spec stops. */
  private async decode(sequence: LlamaContextSequence, spec: SequenceSpec, input: number[], step: () => void): Promise<void> {
    const generated: number[] = [];
    const native = nativeSampling(spec.sampling, spec.promptIds, generated);
    const plan = native && !spec.observe ? undefined : samplingPlan(spec.sampling, spec.promptIds);
    const vocab = this.loaded.vocabSize;
    let mask = await spec.logitsMask?.();
    if (mask === null) return;
    const last = await this.prefill(sequence, spec, input);
    if (last < 0) return;
    input = input.slice(last);
    let bias = maskBias(mask, vocab);
    const iterator = plan
      ? sequence.evaluateWithMetadata(input as Token[], { probabilities: true }, { temperature: 0, yieldEogToken: true })
      : sequence.evaluateWithMetadata(input as Token[], {}, { ...native!, tokenBias: (() => bias) as unknown as () => TokenBias, yieldEogToken: true });
    this.gate.join();
    try {
      let replacement: Token | undefined;
      for (;;) {
        await this.gate.arrive();
        await this.slots.erasesDone();
        spec.busy?.(true);
        step();
        const next = await iterator.next(replacement);
        spec.busy?.(false);
        if (next.done) return;
        let token: number = next.value.token;
        if (plan) {
          const row = distribution((next.value as { probabilities?: Map<Token, number> }).probabilities, vocab);
          token = sample(row, plan, mask);
          spec.observe?.(row, token);
          plan.penalties?.record(token);
          replacement = token as Token;
        }
        generated.push(token);
        if (spec.onToken(token) || generated.length >= spec.maxTokens || spec.cancelled()) return;
        mask = await spec.logitsMask?.();
        if (mask === null) return;
        if (!plan) bias = maskBias(mask, vocab);
      }
    } finally {
      this.gate.leave();
      spec.busy?.(false);
      await iterator.return(undefined);
    }
  }
}

/** A step's log probabilities over the vocabulary from llama.cpp's softmax (tokens it rounds to 0: -inf). */
function distribution(probabilities: Map<Token, number> | undefined, vocab: number): Float32Array {
  const row = new Float32Array(vocab).fill(-Infinity);
  if (probabilities) for (const [token, p] of probabilities) if (token < vocab) row[token] = Math.log(p);
  return row;
}

/**
 * The sampling settings as llama.cpp's sampler options, its penalties reading `generated` (the
 * tokens generated so far, as they come); undefined when llama.cpp's samplers cannot apply them
 * exactly (a repetition penalty over the prompt together with presence or frequency penalties over
 * the output: llama.cpp has one window).
 */
function nativeSampling(settings: SamplingSettings, promptIds: readonly number[], generated: readonly number[]) {
  const { penalties } = settings;
  const repetition = penalties && penalties.repetition !== 1;
  const additive = penalties && (penalties.presence !== 0 || penalties.frequency !== 0);
  if (repetition && additive) return undefined;
  const repeatPenalty: LlamaContextSequenceRepeatPenalty | undefined = !penalties || (!repetition && !additive) ? undefined : {
    punishTokens: () => (repetition ? [...promptIds, ...generated] : [...generated]) as Token[],
    // node-llama-cpp takes the larger of this and the list's length: the whole list.
    maxPunishTokens: 0,
    penalty: penalties.repetition,
    presencePenalty: penalties.presence,
    frequencyPenalty: penalties.frequency,
  };
  const penalize = repeatPenalty ? { repeatPenalty } : {};
  // Without a seed, a fresh one per request (node-llama-cpp's default is the current second).
  const seed = settings.seed ?? Math.floor(Math.random() * 2 ** 32);
  return settings.doSample
    ? { temperature: settings.temperature, topK: settings.topK, topP: settings.topP, minP: 0, seed, ...penalize }
    : { temperature: 0, ...penalize };
}

/**
 * Generation with transformers.js's own `generate` loop (KV cache, one request at a time), for the
 * exports the batch decoder cannot drive (generate.ts picks it). The sequence's spec is the batch
 * decoder's: its penalties, logits mask, temperature, token callback and cancel flag are applied
 * through generate's logits processor, streamer and stopping criteria.
 */
import { BaseStreamer, LogitsProcessor, StoppingCriteria, Tensor } from '@huggingface/transformers';
import type { LoadedModel } from './loaded-model.js';
import { allows } from '../sequence.js';
import type { DecoderSpec } from './decode/scheduler.js';

class FlagStoppingCriteria extends StoppingCriteria {
  constructor(private readonly shouldStop: () => boolean) {
    super();
  }
  override _call(inputIds: unknown[][]): boolean[] {
    const stop = this.shouldStop();
    return inputIds.map(() => stop);
  }
}

/**
 * What the batch decoder does to a step's logits, inside transformers.js generate (one sequence):
 * the sequence's penalties and logits mask (a synchronous one: a grammar's is refused before), then
 * the temperature (generate is given 1, so its own warper does not scale before this). `raw` keeps
 * the model's own row for `observe`, which the token sink calls with the chosen token.
 */
class SequenceProcessor extends LogitsProcessor {
  raw: Float32Array | undefined;

  constructor(private readonly spec: DecoderSpec) {
    super();
  }

  override _call(_inputIds: unknown, logits: Tensor): Tensor {
    const row = (logits as unknown as Tensor[])[0]!.data as Float32Array;
    if (this.spec.observe) this.raw = Float32Array.from(row);
    const { sampling } = this.spec;
    sampling.penalties?.apply(row);
    const mask = this.spec.logitsMask?.();
    if (mask instanceof Promise || mask === null) throw new Error('transformers.js generate takes only synchronous logits masks');
    if (mask) for (let id = 0; id < row.length; id++) if (!allows(mask, id)) row[id] = -Infinity;
    if (sampling.doSample && sampling.temperature !== 1) for (let id = 0; id < row.length; id++) row[id] = row[id]! / sampling.temperature;
    return logits;
  }
}

/** Receives each step's new token; the first `put` is the prompt and is skipped. */
class TokenSink extends BaseStreamer {
  private sawPrompt = false;
  constructor(private readonly onToken: (id: number) => void) {
    super();
  }
  override put(value: bigint[][]): void {
    if (!this.sawPrompt) {
      this.sawPrompt = true;
      return;
    }
    const id = value[0]?.[0];
    if (id !== undefined) this.onToken(Number(id));
  }
  override end(): void {}
}

/** transformers.js's own generate loop (KV cache, one request at a time) for exports the batch decoder cannot drive. */
export async function generateWithTransformers(loaded: LoadedModel, spec: DecoderSpec, eosTokenIds: number[]): Promise<void> {
  const ids = BigInt64Array.from(spec.promptIds.map(BigInt));
  let stop = false;
  const processor = new SequenceProcessor(spec);
  // One request at a time: the whole generation is this request's own work.
  spec.busy?.(true);
  await loaded.model.generate({
    input_ids: new Tensor('int64', ids, [1, ids.length]),
    attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
    max_new_tokens: spec.maxTokens,
    do_sample: spec.sampling.doSample,
    temperature: 1,
    top_k: spec.sampling.topK,
    top_p: spec.sampling.topP,
    // Penalties are the processor's (the model's own repetition_penalty included, through the request's plan).
    repetition_penalty: 1,
    eos_token_id: eosTokenIds,
    logits_processor: [processor],
    streamer: new TokenSink((id) => {
      if (processor.raw) spec.observe?.(processor.raw, id);
      stop = spec.onToken(id) || stop;
    }),
    stopping_criteria: [new FlagStoppingCriteria(() => stop || spec.cancelled())],
  } as Record<string, unknown>).finally(() => spec.busy?.(false));
}

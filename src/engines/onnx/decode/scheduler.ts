/**
 * Batched decoding in a worker: every generation running in this worker advances by one token in
 * the same forward pass (continuous batching). A new request is prefilled on its own (after the KV
 * store's cached prefix, when it has one: looked up at admission, or before by the caller through
 * `lookup` and handed in with the spec), then joins the batch (./kv-batch.ts); a finished, stopped
 * or cancelled one leaves it at once, and a finished one hands its KV to the store.
 *
 * Prefill is chunked and interleaved (the mixed schedule of vLLM's chunked prefill and llama-server's
 * slots): each turn of the loop runs one prefill chunk, of the prompts being prefilled taken in turn
 * (round robin), then one decoding step of the batch. So a running generation slows by one chunk's
 * time per token while a long prompt is prefilled, instead of stopping for the whole prompt, and a
 * short prompt that arrives behind a long one waits a few chunks, not the long one's whole prefill.
 *
 * A shared prefix is computed once (issue 40; ../../prefix-waits.ts): a request admitted (`admit`)
 * while another prompt that shares a prefix at least a chunk longer than the store's with it is being
 * prefilled waits; that prefill stores its first tokens at the end of the chunk that reaches what the
 * waiters need, and they take them from the store as any cached prefix. A long prompt (a chunk or
 * more) is also stored when its prefill ends, not only when its sequence does, for requests that
 * come while it generates.
 *
 * Failures stay with their sequence where the batch allows it: a throw in one sequence's prefill
 * (lookup, forward pass, sampling, its onToken) or in its sampling / onToken during a step fails that
 * sequence alone. A throw of the batched forward pass itself fails the sequences of the batch (their
 * shared cache is then unusable), not the ones being prefilled.
 *
 * A vision-language decoder (a split Qwen-VL or Gemma 3 export) is fed inputs_embeds and its
 * positions (Qwen-VL's 3-row M-RoPE, Gemma 3's 1-D from 1) in place of token ids (./vision-inputs.ts): a prompt's are made at its first prefill
 * chunk (its images encoded then) and fed a chunk at a time; a step embeds each row's last token
 * and places it at its cache length plus its sequence's delta. Everything else is the same.
 *
 * Contract: worker thread; one decoder per loaded model (one session, one batch). `run` may be called
 * at any time; the loop runs while there is work, one forward pass at a time. A spec's callbacks are
 * called on this thread between forward passes, in order: logitsMask, then onToken, for each token.
 */
import type { LoadedModel } from '../loaded-model.js';
import { KvBatch } from './kv-batch.js';
import type { StepSession } from './step-session.js';
import { noKvStore, type KvPrefix, type KvStore } from './kv-store.js';
import { PrefixWaits, waitForShared, type Holder } from '../../prefix-waits.js';
import type { LogitsMask, SequenceImage, SequenceSpec } from '../../sequence.js';
import { sample, type SamplingPlan } from '../../sampler.js';
import { cacheShape, kvMode, sessionOf } from './session-info.js';
import { i64, lastLogits, type CacheShape, type KvArray, type OrtSession, type OrtTensor } from '../tensors.js';
import { VisionInputs, type PromptInputs } from './vision-inputs.js';
import { imageKeyedIds } from './image-keys.js';

/**
 * A sequence as the decoder runs it: the engine-neutral spec (../../sequence.ts) with its sampling
 * plan built (../runner.ts) and, when the caller looked it up first, its cached prefix.
 */
export interface DecoderSpec extends Omit<SequenceSpec, 'sampling'> {
  sampling: SamplingPlan;
  /**
   * The cached prefix the caller already looked up with `lookup` (to report it before the prefill),
   * null when it found none; undefined: the decoder looks it up at admission.
   */
  prefix?: KvPrefix | null;
  /** Its place among the prompts others may wait for, from `admit` (undefined: taken at admission). */
  holder?: Holder;
}

/**
 * A request admitted before its run (`admit`): its cached prefix, found after any wait for a
 * prompt being prefilled that shares a long prefix with it, and its own place among the holders.
 * `release` gives that place up, for a request that will not run after all.
 */
export interface Admission {
  /** Prompt tokens the prefix covers (0: none). */
  readonly length: number;
  readonly prefix: KvPrefix | undefined;
  readonly holder: Holder;
  release(): void;
}

export interface BatchDecoderOptions {
  /** Where prompts find cached prefixes and finished sequences leave their KV (default: none). */
  kvStore?: KvStore;
  /** Prompt tokens one prefill forward pass takes at most (default: the whole prompt at once). */
  prefillChunkTokens?: number;
  /**
   * A token's KV depends on the other tokens of its forward pass (dynamic activation quantization):
   * only KV computed in whole, aligned prefill chunks is stored as reusable, so a warm prompt decodes
   * exactly as a cold one.
   */
  passDependent?: boolean;
  /** How long a request waits for a prompt whose prefill makes no progress (../../prefix-waits.ts STALL_MS). */
  sharedPrefixStallMs?: number;
}

/**
 * A prompt part way through its prefill: its own one-row cache and how many prompt tokens it holds
 * (and, on a vision model, the prompt's inputs_embeds and positions: ./vision-inputs.ts).
 */
interface Prefill {
  row: KvBatch;
  done: number;
  inputs?: PromptInputs;
}

interface Sequence {
  spec: DecoderSpec;
  /** What of its prompt others may take, as its prefill goes (../../prefix-waits.ts). */
  holder: Holder;
  /** The prompt as the KV store knows it (its ids, images keyed by their bytes and grids: ./image-keys.ts). */
  key: readonly number[];
  /** Added to the cache length for a decoded token's position (M-RoPE after an image; else 0). */
  delta: number;
  /** Set from its first prefill chunk until it joins the batch. */
  prefill?: Prefill;
  /** Prompt and generated tokens; all but the last are in the cache. */
  tokens: number[];
  generated: number;
  /** Largest batch this sequence was decoded in. */
  peakBatch: number;
  /** Settles the caller's promise; only the first call counts. */
  settle: (error?: unknown) => void;
}

export class BatchDecoder {
  private readonly session: OrtSession;
  /** Long-context decoding steps' session, when the model has one (./step-session.ts). */
  private readonly steps?: StepSession;
  private readonly shape: CacheShape;
  private readonly kvStore: KvStore;
  private readonly chunk: number;
  private readonly passDependent: boolean;
  /** Sequences not yet in the batch, prefilled a chunk at a time in turn (round robin). */
  private readonly pending: Sequence[] = [];
  /** Row r of the batch cache is active[r]. */
  private active: Sequence[] = [];
  private readonly batch: KvBatch;
  private running = false;
  /** Requests waiting for another's prefill of their prefix (none without a store). */
  private readonly waits: PrefixWaits;
  /** Shortest prompt stored at the end of its prefill for later requests (Infinity: none). */
  private readonly sharedMin: number;
  /** A vision model's decoder is fed inputs_embeds and M-RoPE positions, not token ids. */
  private readonly vision?: VisionInputs;
  private readonly hiddenSize: number;

  constructor(loaded: LoadedModel, options: BatchDecoderOptions = {}) {
    if (loaded.vision) this.vision = new VisionInputs(loaded.vision, loaded.info.id);
    this.hiddenSize = loaded.vision?.hiddenSize ?? 0;
    this.session = sessionOf(loaded)!;
    this.steps = loaded.decodeSteps;
    this.shape = cacheShape(loaded)!;
    this.kvStore = options.kvStore ?? noKvStore;
    this.chunk = options.prefillChunkTokens ?? Number.MAX_SAFE_INTEGER;
    this.passDependent = options.passDependent ?? false;
    this.batch = new KvBatch(this.shape, kvMode(loaded));
    // Worth a wait: one prefill chunk more than the waiter has (../../prefix-waits.ts says why);
    // without chunks (the whole prompt in one pass) or a store, nothing is.
    this.sharedMin = this.kvStore === noKvStore || options.prefillChunkTokens === undefined ? Infinity : this.chunk;
    this.waits = new PrefixWaits({ minTokens: this.sharedMin, align: this.passDependent ? this.chunk : 1, ...(options.sharedPrefixStallMs ? { stallMs: options.sharedPrefixStallMs } : {}) });
  }

  /**
   * Admits a prompt before its run: when a prompt being prefilled shares a prefix at least a chunk
   * longer than the store's with it, waits until that prefix is stored (or the wait ends otherwise:
   * ../../prefix-waits.ts), then looks up the store's prefix. Meanwhile the prompt is itself one that
   * later requests may wait for. The admission goes to `run` (as DecoderSpec.prefix and .holder), or
   * is released.
   */
  admit(prompt: readonly number[], cancelled?: () => boolean): Admission | Promise<Admission> {
    const holder = this.waits.hold(prompt);
    const take = (): Admission => {
      try {
        const prefix = this.cachedPrefix(prompt);
        holder.ready = prefix?.length ?? 0;
        return { length: prefix?.length ?? 0, prefix, holder, release: () => this.waits.end(holder) };
      } catch (error) {
        this.waits.end(holder);
        throw error;
      }
    };
    const have = () => this.kvStore.reusable?.(prompt) ?? 0;
    if (!this.waits.find(prompt, have(), holder)) return take();
    return waitForShared(this.waits, { prompt, have, self: holder, ...(cancelled ? { cancelled } : {}) }).then(take);
  }

  /** Generates for one request; resolves, with the largest batch it was part of, when it has stopped. */
  run(spec: DecoderSpec): Promise<number> {
    const key = imageKeyedIds(spec.promptIds, spec.images);
    return new Promise((resolve, reject) => {
      let settled = false;
      const seq: Sequence = {
        spec, holder: spec.holder ?? this.waits.hold(key), key, delta: 0, tokens: [...spec.promptIds], generated: 0, peakBatch: 1,
        settle: (error?: unknown) => {
          if (settled) return;
          settled = true;
          if (error === undefined) resolve(seq.peakBatch);
          else reject(error);
        },
      };
      this.pending.push(seq);
      if (!this.running) void this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.pending.length > 0 || this.active.length > 0) {
        const next = this.pending.shift();
        if (next && !(await this.prefillChunk(next))) this.pending.push(next);
        if (this.active.length > 0) await this.stepOrFail();
      }
    } finally {
      this.running = false;
    }
  }

  private async stepOrFail(): Promise<void> {
    try {
      await this.step();
    } catch (error) {
      // The batched forward pass threw (per-row errors are caught in step): the shared cache is not
      // trustworthy, so the batch ends; pending sequences start afresh.
      for (const seq of this.active) seq.settle(error);
      this.active = [];
      this.batch.clear();
    }
  }

  /**
   * Runs the next prefill chunk of a sequence not yet in the batch (its first one looks up the cached
   * prefix); after its last chunk, takes its first token and joins it to the batch. True when the
   * sequence is done with prefill (joined, finished, cancelled or failed: a throw fails it alone);
   * false when it has chunks left.
   */
  private async prefillChunk(seq: Sequence): Promise<boolean> {
    if (seq.spec.cancelled()) return (this.waits.end(seq.holder), seq.settle(), true);
    try {
      const prompt = seq.spec.promptIds;
      const n = prompt.length;
      if (!seq.prefill) {
        const prefix = seq.spec.prefix === undefined ? this.cachedPrefix(seq.key) : (seq.spec.prefix ?? undefined);
        const done = prefix?.length ?? 0;
        const vision = this.vision;
        const inputs = vision ? await this.busyWhile([seq], () => vision.prompt(prompt, seq.spec.images ?? [], done)) : undefined;
        seq.prefill = { row: KvBatch.prefill(this.shape, this.batch.mode, n, prefix), done, ...(inputs ? { inputs } : {}) };
        seq.delta = inputs?.delta ?? 0;
      }
      const { row, done, inputs } = seq.prefill;
      // At most `chunk` new tokens per pass, each attending to the KV of the ones before, so
      // activations stay bounded whatever the prompt's length. Chunks end at multiples of the chunk
      // size (not `done + chunk`), so a prompt prefilled after a cached prefix is cut into the same
      // passes as when prefilled from the start.
      const end = Math.min(n, (Math.floor(done / this.chunk) + 1) * this.chunk);
      const tokens = inputs
        ? VisionInputs.chunkFeeds(inputs, done, end, this.hiddenSize)
        : { input_ids: i64(prompt.slice(done, end), [1, end - done]), position_ids: i64(Array.from({ length: end - done }, (_, i) => done + i), [1, end - done]) };
      const out = await this.forward([seq], { ...tokens, attention_mask: row.stepMask(end - done), ...row.pastFeeds() }, row.fetches);
      row.advanceFrom(out, end - done);
      seq.prefill.done = end;
      if (end < n) {
        // Requests waiting for this prompt's first `end` tokens (or fewer) take them from the store.
        this.share(seq, end, this.waits.wanted(seq.holder) <= end, (from) => row.extract(0, from));
        return false;
      }
      seq.prefill = undefined;
      if (this.next(seq, out.logits!, 0, await seq.spec.logitsMask?.())) {
        this.finish(seq, (from) => row.extract(0, from));
      } else {
        // A long prompt is stored now, not only when its sequence ends: requests that share it may
        // come while it generates, and those waiting for it go on.
        this.share(seq, n, n >= this.sharedMin || this.waits.wanted(seq.holder) <= n, (from) => row.extract(0, from));
        this.batch.joinRow(row);
        this.active.push(seq);
      }
      this.waits.end(seq.holder);
    } catch (error) {
      seq.prefill = undefined;
      this.waits.end(seq.holder);
      seq.settle(error);
    }
    return true;
  }

  /**
   * A prefill chunk ended at `end`: stores the prompt's first `end` tokens when `store` says so (for
   * requests waiting for them), and tells the waiters (those whose part is stored go on; the others
   * know the prefill is moving).
   */
  private share(seq: Sequence, end: number, store: boolean, readKv: (from: number) => KvArray[]): void {
    if (store) {
      this.keep(seq.key.slice(0, end), readKv, this.exactOf(end), true);
      this.waits.progress(seq.holder, end);
    } else {
      this.waits.progress(seq.holder);
    }
  }

  /** Of `n` leading prompt tokens prefilled, those whose KV is what a cold prefill computes (on a pass-dependent graph: its whole chunks). */
  private exactOf(n: number): number {
    return this.passDependent ? Math.floor(n / this.chunk) * this.chunk : n;
  }

  /** Decodes a prompt's images before its sequence starts (a vision model's; ./vision-inputs.ts). */
  async checkImages(images: readonly SequenceImage[]): Promise<void> {
    await this.vision?.check(images);
  }

  /** Runs `work` (an image's encoding, a step's embeddings) with the sequences marked busy, as a forward pass. */
  private async busyWhile<T>(taking: readonly Sequence[], work: () => Promise<T>): Promise<T> {
    for (const seq of taking) seq.spec.busy?.(true);
    try {
      return await work();
    } finally {
      for (const seq of taking) seq.spec.busy?.(false);
    }
  }

  /** The store's prefix for a prompt, checked against the store's contract. */
  private cachedPrefix(prompt: readonly number[]): KvPrefix | undefined {
    const prefix = this.kvStore.lookup(prompt);
    if (!prefix || prefix.length === 0) return undefined;
    const { layers, kvHeads, headDim } = this.shape;
    const size = kvHeads * prefix.length * headDim;
    if (!Number.isInteger(prefix.length) || prefix.length < 0 || prefix.length >= prompt.length || prefix.kv.length !== 2 * layers || prefix.kv.some((a) => a.length !== size)) {
      throw new Error(`KvStore.lookup broke its contract: length ${prefix.length} for a prompt of ${prompt.length} tokens, ${prefix.kv.length} arrays`);
    }
    return prefix;
  }

  /** Feeds each sequence's last token; one forward pass for the whole batch. */
  private async step(): Promise<void> {
    const B = this.active.length;
    const session = this.steps?.forStep(this.batch.length + 1) ?? this.session;
    const last = this.active.map((s) => s.tokens.at(-1)!);
    const vision = this.vision;
    const tokens = vision
      ? await this.busyWhile(this.active, () => vision.stepFeeds(last, this.batch.rowLengths.map((n, r) => n + this.active[r]!.delta)))
      : { input_ids: i64(last, [B, 1]), position_ids: i64(this.batch.rowLengths, [B, 1]) };
    const out = await this.forward(this.active, { ...tokens, attention_mask: this.batch.stepMask(), ...this.batch.pastFeeds() }, this.batch.fetches, session);
    this.batch.advanceFrom(out);
    // A mask that throws fails its own sequence below.
    const masks = await Promise.all(this.active.map(async (seq) => {
      try {
        return { mask: await seq.spec.logitsMask?.() };
      } catch (error) {
        return { error };
      }
    }));
    const leaving: number[] = [];
    this.active.forEach((seq, r) => {
      seq.peakBatch = Math.max(seq.peakBatch, B);
      try {
        const mask = masks[r]!;
        if ('error' in mask) throw mask.error;
        if (this.next(seq, out.logits!, r, mask.mask)) {
          leaving.push(r);
          this.finish(seq, (from) => this.batch.extract(r, from));
        }
      } catch (error) {
        leaving.push(r);
        seq.settle(error);
      }
    });
    if (leaving.length === 0) return;
    this.batch.remove(leaving);
    const gone = new Set(leaving);
    this.active = this.active.filter((_, r) => !gone.has(r));
  }

  /** One forward pass, with the sequences taking part in it marked busy meanwhile. */
  private forward(taking: readonly Sequence[], feeds: Record<string, unknown>, fetches?: readonly string[], session = this.session): Promise<Record<string, OrtTensor>> {
    return this.busyWhile(taking, () => (fetches ? session.run(feeds, fetches) : session.run(feeds)));
  }

  /** Samples row `row` of the logits for `seq` (under its mask) and hands it the token; true when the sequence is over. */
  private next(seq: Sequence, logits: OrtTensor, row: number, mask: LogitsMask | null | undefined): boolean {
    if (mask === null) return true;
    const rowLogits = lastLogits(logits, row);
    const token = sample(rowLogits, seq.spec.sampling, mask);
    seq.spec.observe?.(rowLogits, token);
    seq.generated++;
    seq.tokens.push(token);
    return seq.spec.onToken(token) || seq.generated >= seq.spec.maxTokens || seq.spec.cancelled();
  }

  /** A sequence that ended: its KV goes to the store unless it was cancelled; then its promise resolves. */
  private finish(seq: Sequence, readKv: (from: number) => KvArray[]): void {
    if (!seq.spec.cancelled() && this.kvStore !== noKvStore) {
      // The prompt as the store knows it (images keyed by their bytes), then the generated tokens fed back.
      const fed = [...seq.key, ...seq.tokens.slice(seq.key.length)].slice(0, -1);
      // On a pass-dependent graph only the prompt's whole chunks hold the KV a cold prefill computes
      // (the last partial chunk and the generated tokens, decoded in batches, do not).
      this.keep(fed, readKv, this.passDependent ? this.exactOf(seq.spec.promptIds.length) : fed.length);
      this.waits.progress(seq.holder, Math.min(fed.length, seq.spec.promptIds.length));
    }
    seq.settle();
  }

  /** Hands the store `tokens` and their KV, read only during the call and only within them (`shared`: a prompt's first tokens, KvStore.share). */
  private keep(tokens: readonly number[], readKv: (from: number) => KvArray[], exact: number, shared = false): void {
    if (this.kvStore === noKvStore) return;
    let open = true;
    try {
      const store = shared && this.kvStore.share ? this.kvStore.share.bind(this.kvStore) : this.kvStore.store.bind(this.kvStore);
      store(tokens, (from = 0) => {
        if (!open) throw new Error('KvStore: readKv called after store() returned');
        if (!Number.isInteger(from) || from < 0 || from > tokens.length) throw new RangeError(`KvStore: readKv(${from}) outside 0..${tokens.length}`);
        return readKv(from);
      }, exact);
    } finally {
      open = false;
    }
  }
}

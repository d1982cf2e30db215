/**
 * Where a request runs on the llama.cpp engine: the sequences of the model's contexts (llama-server's
 * slots; one context per room of the layout, ./layout.ts) and what each one's KV holds.
 * ./runner.ts feeds the sequence it is handed; this file decides which one, what of its KV is kept,
 * and what counts as a cache read.
 *
 * - Rooms: a request needs its prompt plus max_tokens (the chat turn has clamped max_tokens to the
 *   context served) and runs on a sequence at least that long: the short room's when it fits there,
 *   else the long room's. Requests wait in arrival order for a sequence that fits (one that needs
 *   the long room while every long sequence is busy waits; later ones that fit a free short
 *   sequence go ahead of it), never failed for want of room.
 * - Prefix reuse (unless the prompt cache is off): a sequence keeps its KV when its request ends.
 *   `place` claims the free sequence that fits and shares the longest prefix with the prompt, else
 *   (once one is free) the least recently used that fits, and erases its KV after what it reuses of
 *   the prompt; the count it returns, reported before the prefill (the chat task's `start`, sent
 *   once the request has its sequence), is the count reused. A sequence is claimed for its prefix
 *   only when that prefix is at least what the claim erases of it: every chat template starts its
 *   prompts alike (`<|im_start|>system\n`...), and a new conversation sharing those few tokens with
 *   an agent's 18k-token session would otherwise take (and erase) that session's sequence while
 *   empty ones were free (llama-server likewise takes a slot by similarity only above a threshold,
 *   and else the least recently used).
 * - Exact counts: a sequence whose KV cannot be cut at any position (a recurrent or hybrid model:
 *   node-llama-cpp's `needsCheckpoints`) would have node-llama-cpp re-evaluate the kept prefix
 *   inside `eraseContextTokenRanges` (from a checkpoint, or from the start); such a sequence is
 *   reused only when nothing of it is erased (the prompt extends all it holds), so what is reported
 *   read was not evaluated again. Sliding-window models get llama.cpp's full-size cache (./load.ts),
 *   which cuts like any other (test/model/llama-swa.test.ts).
 * - Shared prefixes (issue 40; ../prefix-waits.ts): a request whose prompt shares a prefix at least
 *   a prefill chunk longer than its sequence's with a prompt that another sequence is evaluating now
 *   waits, on its own claimed sequence, until that prefix is evaluated there, then takes a copy of
 *   that sequence's state (./state-file.ts copySequenceState: node-llama-cpp has no
 *   sequence-to-sequence copy, and its state save and load through a scratch file take 4-8 ms for
 *   2,048 tokens on the test GGUF where prefilling them takes 180-440 ms; waiting for the holder's
 *   sequence itself would wait for its whole generation). The tokens it takes count as cache reads:
 *   they are not evaluated again. Not on a sliding-window, recurrent or hybrid model, whose saved
 *   state is not a full prefix to cut (./state-file.ts savesFullPrefix). The same copy serves
 *   a request from a free sequence holding a prefix of its prompt a chunk longer than its own, when
 *   that sequence keeps a conversation not worth erasing for it (above).
 * - The context never shifts: a sequence that would outgrow its context throws (the chat turn keeps
 *   prompt plus max_tokens within it, so this is a bug, not a silent truncation).
 *
 * Contract: worker thread; one per engine (./runner.ts), made with it.
 */
import type { LlamaContextSequence } from 'node-llama-cpp';
import os from 'node:os';
import type { PromptCacheStats } from '../../core/hooks.js';
import type { SequencePrefix } from '../sequence.js';
import { PrefixWaits, waitForShared, type Holder } from '../prefix-waits.js';
import { keepForTile } from './attention-tile.js';
import type { LlamaLoaded } from './load.js';
import { acceptMaskBias } from './mask-bias.js';
import { slotDiskCache } from './slot-disk.js';
import { copySequenceState, savesFullPrefix } from './state-file.js';

export interface Slot {
  sequence: LlamaContextSequence;
  /** Tokens the sequence holds at most (its room's). */
  size: number;
  busy: boolean;
  lastUsed: number;
  /** The prompt of the request on it, which others may take a prefix of (see the file's comment). */
  holder?: Holder;
}

/**
 * A claimed sequence whose first `length` tokens of KV are the prompt's: the count reported as
 * cache reads. `release` gives it back, once (the runner when the request ends; the chat task when
 * the request is cancelled before it runs).
 */
export interface Placement extends SequencePrefix {
  slot: Slot;
  release(): void;
  /** The runner evaluated tokens on the sequence (after each forward pass): requests waiting for its prompt's prefix hear of it. */
  evaluated(): void;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

const noShift = {
  strategy: () => {
    throw new Error('a sequence outgrew its context (the chat turn bounds prompt plus max_tokens by it)');
  },
};

/** A request waiting for a sequence of at least `need` tokens. */
interface Waiter {
  need: number;
  grant: (slot: Slot) => void;
}

export class LlamaSlots {
  /** Shortest room first: a request takes the shortest sequence it fits. */
  private readonly slots: Slot[];
  private readonly waiting: Waiter[] = [];
  private clock = 0;
  private readonly stats = { hits: 0, misses: 0, tokensReused: 0, evictions: 0 };
  /** Worth a wait: a prefill chunk (../prefix-waits.ts says why). */
  private readonly waits: PrefixWaits;
  /** Claims erasing a sequence's KV now, and who waits for them to be done (erasesDone). */
  private erasing = 0;
  private erased: Array<() => void> = [];

  constructor(private readonly loaded: LlamaLoaded) {
    this.waits = new PrefixWaits({ minTokens: loaded.engine.prefillChunkTokens });
    const contexts = loaded.contexts;
    if (!contexts?.length) throw new Error(`${loaded.info.id} has no generation context`);
    this.slots = contexts.flatMap((context) => Array.from({ length: context.totalSequences }, () => {
      const sequence = context.getSequence({ contextShift: noShift });
      acceptMaskBias(sequence);
      return { sequence, size: context.contextSize, busy: false, lastUsed: 0 };
    })).sort((a, b) => a.size - b.size);
  }

  /**
   * Claims a sequence for a prompt and `maxTokens` (the most the request generates: the sequence
   * holds both), waiting for one when none that fits is free, and erases its KV after the prefix it
   * reuses, or takes a longer one from a sequence evaluating it now (see the file's comment; the wait
   * ends early when `cancelled`). Resolves once the sequence is this request's; the caller must
   * `release` it.
   */
  async place(promptIds: readonly number[], maxTokens: number, cancelled?: () => boolean): Promise<Placement> {
    const need = promptIds.length + maxTokens;
    const longest = this.slots.at(-1)!.size;
    // Never waits for what no sequence can hold (the chat turn keeps prompt plus max_tokens within the longest).
    if (need > longest) throw new Error(`a request of ${need} tokens, prompt and output, is longer than the longest sequence (${longest})`);
    // The prompt cache turned off (PROMPT_CACHE_BYTES=0): no reuse, as on the ONNX engine. Any
    // other budget: the sequences' own KV is the cache (its size is theirs, not the budget's).
    const reuses = this.loaded.engine.promptCacheBytes !== 0;
    let slot = reuses ? this.bestPrefix(promptIds, need) : undefined;
    // Prompt cache on disk (issue 40; ./slot-disk.ts): a file sharing a longer prefix than any free
    // sequence that fits is placed on the least recently used of them (none while others wait).
    const disk = reuses && this.waiting.length === 0 ? slotDiskCache(this.loaded) : undefined;
    const fromDisk = disk?.lookup(promptIds, slot ? reusable(slot.sequence, promptIds) : 0, this.slots, (s) => s.size >= need);
    if (fromDisk) slot = fromDisk.slot;
    if (slot) slot.busy = true;
    else slot = await this.freeSlot(need);
    // A placement from a file loads it into the sequence first (never throws: 0 when it was refused).
    // A pass of a few new tokens after a long prefix is cut to llama.cpp's attention tile where that is faster (./attention-tile.ts).
    const tile = (kept: number) => keepForTile(this.loaded.attention, promptIds.length, kept);
    let length = tile(fromDisk ? await disk!.claim(slot.sequence, fromDisk) : reuses ? reusable(slot.sequence, promptIds) : 0);
    const claimed = slot;
    const { sequence } = slot;
    // Announced at once (before any wait), so that a request placed a moment later finds it.
    const holder = reuses && savesFullPrefix(sequence) ? (slot.holder = this.waits.hold(promptIds, length)) : undefined;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (holder) this.waits.end(holder);
      claimed.holder = undefined;
      this.release(claimed);
    };
    try {
      if (holder) {
        // Only a prompt whose state can load into this sequence (a long room's may not fit a short one).
        const accept = (h: Holder) => h.prompt.length < claimed.size;
        const shared = await waitForShared(this.waits, { prompt: promptIds, have: () => length, self: holder, accept, ...(cancelled ? { cancelled } : {}) });
        // Else a free sequence that holds a longer prefix behind a conversation it keeps (one not worth
        // its erasure, so not claimed: a main agent's session, when its sub-agents start).
        const source = shared ? this.slots.find((s) => s.holder === shared.holder) : cancelled?.() ? undefined : this.idleWithPrefix(promptIds, length, claimed);
        if (source) length = tile(await this.copyFrom(source, claimed, promptIds, length));
      }
      if (sequence.nextTokenIndex > length) {
        if (length === 0 && sequence.nextTokenIndex > 0) this.stats.evictions++;
        this.erasing++;
        try {
          await sequence.eraseContextTokenRanges([{ start: length, end: sequence.nextTokenIndex }]);
        } finally {
          if (--this.erasing === 0) for (const done of this.erased.splice(0)) done();
        }
      }
    } catch (error) {
      release();
      throw error;
    }
    if (length > 0) {
      this.stats.hits++;
      this.stats.tokensReused += length;
    } else if (reuses) this.stats.misses++;
    if (holder) this.waits.progress(holder, length);
    // The sequence holds the prompt's first tokens, in order: as many as it has evaluated.
    const evaluated = () => {
      if (holder && !released) this.waits.progress(holder, Math.min(sequence.nextTokenIndex, promptIds.length));
    };
    return { slot, length, release, evaluated };
  }

  /** The free sequence, other than `target`, holding the longest prefix of the prompt, at least a chunk more than `had`, whose state fits `target`. */
  private idleWithPrefix(promptIds: readonly number[], had: number, target: Slot): Slot | undefined {
    let best: Slot | undefined;
    let bestLength = had + this.loaded.engine.prefillChunkTokens - 1;
    for (const slot of this.slots) {
      if (slot === target || slot.busy || !savesFullPrefix(slot.sequence) || slot.sequence.nextTokenIndex > target.size) continue;
      const length = reusable(slot.sequence, promptIds);
      if (length > bestLength) [best, bestLength] = [slot, length];
    }
    return best;
  }

  /**
   * Copies the state of `source` (a sequence evaluating a prompt that shares a longer prefix) into
   * `target`: the tokens of the prompt `target` then holds (`had` when the copy could not be made,
   * 0 when it failed part way: the sequence is then cleared and prefills from the start).
   */
  private async copyFrom(source: Slot, target: Slot, promptIds: readonly number[], had: number): Promise<number> {
    // A state longer than the target sequence does not load into it (a longer room's prompt).
    if (source.sequence.nextTokenIndex > target.size) return had;
    try {
      await copySequenceState(source.sequence, target.sequence, this.loaded.engine.promptCacheDir ?? os.tmpdir());
    } catch (error) {
      if ((error as { loaded?: boolean }).loaded === false) return had;
      await target.sequence.clearHistory();
      return 0;
    }
    return reusable(target.sequence, promptIds);
  }

  /**
   * Resolves once no claim is erasing KV (undefined when none is). An erase takes the context's lock,
   * which node-llama-cpp's batch loop holds for as long as anything is queued: the runner queues
   * nothing new meanwhile (./runner.ts), or the claim could wait for a whole long prefill.
   */
  erasesDone(): Promise<void> | undefined {
    return this.erasing === 0 ? undefined : new Promise((resolve) => this.erased.push(resolve));
  }

  /** The free sequence that fits and holds the longest prefix of the prompt worth its erasure, if any holds one. */
  private bestPrefix(promptIds: readonly number[], need: number): Slot | undefined {
    let best: Slot | undefined;
    let bestLength = 0;
    for (const slot of this.slots) {
      // A sequence a waiting request fits is that request's.
      if (slot.busy || slot.size < need || this.waiting.some((w) => w.need <= slot.size)) continue;
      const length = reusable(slot.sequence, promptIds);
      // Not worth what it erases (see the file's comment): left to the least recently used choice.
      if (length > bestLength && length >= slot.sequence.nextTokenIndex - length) [best, bestLength] = [slot, length];
    }
    return best;
  }

  /** The request on `slot` ended: its KV stays for a later prompt with the same prefix; a waiter it fits gets it. */
  private release(slot: Slot): void {
    slot.busy = false;
    slot.lastUsed = ++this.clock;
    this.dispatch();
  }

  promptCacheStats(): PromptCacheStats {
    const held = this.slots.reduce((n, s) => n + s.sequence.nextTokenIndex, 0);
    return { ...this.stats, bytes: held * this.loaded.kvBytesPerToken, entries: this.slots.filter((s) => s.sequence.nextTokenIndex > 0).length };
  }

  /** The shortest free sequence of at least `need` tokens, the least recently used among its room's. */
  private fitting(need: number): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) {
      if (s.busy || s.size < need) continue;
      if (!best || s.size < best.size || (s.size === best.size && s.lastUsed < best.lastUsed)) best = s;
    }
    return best;
  }

  /**
   * A free sequence that fits, claimed before it is handed back (two runs started in one tick must
   * not both take it): at once when one is free and no earlier waiter fits it, else in turn.
   */
  private freeSlot(need: number): Promise<Slot> {
    const free = this.fitting(need);
    if (free && !this.waiting.some((w) => w.need <= free.size)) {
      free.busy = true;
      return Promise.resolve(free);
    }
    return new Promise<Slot>((grant) => {
      this.waiting.push({ need, grant });
      this.dispatch();
    });
  }

  /** Hands free sequences to the waiters in arrival order, each the shortest that fits it. */
  private dispatch(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i]!;
      const free = this.fitting(waiter.need);
      if (!free) {
        i++;
        continue;
      }
      free.busy = true;
      this.waiting.splice(i, 1);
      waiter.grant(free);
    }
  }
}

/**
 * Tokens of the prompt the sequence's KV serves as it is: the common prefix, short of the prompt's
 * last token (its logits choose the first output token, so it is evaluated); on a sequence whose KV
 * cannot be cut (see the file's comment), all it holds or nothing.
 */
function reusable(sequence: LlamaContextSequence, promptIds: readonly number[]): number {
  const length = Math.min(commonPrefix(sequence.contextTokens, promptIds), promptIds.length - 1);
  return sequence.needsCheckpoints && length < sequence.nextTokenIndex ? 0 : length;
}

/**
 * Where a request runs on the llama.cpp engine: the sequences of the model's context (llama-server's
 * slots) and what each one's KV holds. ./runner.ts feeds the sequence it is handed; this file
 * decides which one, what of its KV is kept, and what counts as a cache read.
 *
 * - Prefix reuse (unless the prompt cache is off): a sequence keeps its KV when its request ends.
 *   `lookup` finds the free sequence whose tokens share the longest prefix with the prompt; `take`
 *   claims that very sequence and erases what follows the prefix, so the count reported before the
 *   prefill is the count reused. A request that finds none (or finds its sequence taken meanwhile)
 *   gets the least recently used free sequence, its KV erased, once one is free.
 * - The context never shifts: a sequence that would outgrow its context throws (the chat turn keeps
 *   prompt plus max_tokens within it, so this is a bug, not a silent truncation).
 *
 * Contract: worker thread; one per engine (./runner.ts), made with it.
 */
import type { LlamaContextSequence } from 'node-llama-cpp';
import type { PromptCacheStats } from '../../core/hooks.js';
import type { SequencePrefix } from '../sequence.js';
import type { LlamaLoaded } from './load.js';
import { acceptMaskBias } from './mask-bias.js';
import { slotDiskCache } from './slot-disk.js';

export interface Slot {
  sequence: LlamaContextSequence;
  busy: boolean;
  lastUsed: number;
}

export interface SlotPrefix extends SequencePrefix {
  slot: Slot;
}

/** A claimed sequence whose first `reuse` tokens of KV are the prompt's. */
export interface Placement {
  slot: Slot;
  reuse: number;
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

export class LlamaSlots {
  private readonly slots: Slot[];
  private readonly waiting: Array<() => void> = [];
  private clock = 0;
  private readonly stats = { hits: 0, misses: 0, tokensReused: 0, evictions: 0 };

  constructor(private readonly loaded: LlamaLoaded) {
    const context = loaded.context;
    if (!context) throw new Error(`${loaded.info.id} has no generation context`);
    this.slots = Array.from({ length: context.totalSequences }, () => {
      const sequence = context.getSequence({ contextShift: noShift });
      acceptMaskBias(sequence);
      return { sequence, busy: false, lastUsed: 0 };
    });
  }

  lookup(promptIds: readonly number[]): SlotPrefix | null {
    // The prompt cache turned off (PROMPT_CACHE_BYTES=0): no reuse, as on the ONNX engine. Any
    // other budget: the sequences' own KV is the cache (its size is theirs, not the budget's).
    if (this.loaded.engine.promptCacheBytes === 0) return null;
    let best: SlotPrefix | null = null;
    for (const slot of this.slots) {
      if (slot.busy) continue;
      // At least the prompt's last token is evaluated: its logits choose the first output token.
      const length = Math.min(commonPrefix(slot.sequence.contextTokens, promptIds), promptIds.length - 1);
      if (length > 0 && (!best || length > best.length)) best = { length, slot };
    }
    // Prompt cache on disk (issue 40; ./slot-disk.ts): a file sharing a longer prefix than any free sequence.
    best = slotDiskCache(this.loaded)?.lookup(promptIds, best?.length ?? 0, this.slots) ?? best;
    if (best) {
      this.stats.hits++;
      this.stats.tokensReused += best.length;
    } else this.stats.misses++;
    return best;
  }

  /**
   * Claims the sequence `prefix` names when it is still free (synchronously after lookup), else the
   * least recently used free one, and erases its KV after what is reused.
   */
  async take(prefix?: SequencePrefix | null): Promise<Placement> {
    const wanted = (prefix as SlotPrefix | null | undefined)?.slot;
    const slot = wanted && !wanted.busy ? wanted : await this.freeSlot();
    slot.busy = true;
    // Prompt cache on disk (issue 40; ./slot-disk.ts): a placement from a file loads it into the sequence first.
    const reuse = slot === wanted ? await (slotDiskCache(this.loaded)?.claim(slot.sequence, prefix!) ?? prefix!.length) : 0;
    const { sequence } = slot;
    try {
      if (sequence.nextTokenIndex > reuse) {
        if (reuse === 0 && sequence.nextTokenIndex > 0) this.stats.evictions++;
        await sequence.eraseContextTokenRanges([{ start: reuse, end: sequence.nextTokenIndex }]);
      }
    } catch (error) {
      this.release(slot);
      throw error;
    }
    return { slot, reuse };
  }

  /** The request on `slot` ended: its KV stays for a later prompt with the same prefix. */
  release(slot: Slot): void {
    slot.busy = false;
    slot.lastUsed = ++this.clock;
    this.waiting.shift()?.();
  }

  promptCacheStats(): PromptCacheStats {
    const held = this.slots.reduce((n, s) => n + s.sequence.nextTokenIndex, 0);
    return { ...this.stats, bytes: held * this.loaded.kvBytesPerToken, entries: this.slots.filter((s) => s.sequence.nextTokenIndex > 0).length };
  }

  /**
   * The least recently used free sequence, once there is one, claimed before it is handed back: two
   * runs started in one tick must not both take it (the await between here and the caller would let them).
   */
  private async freeSlot(): Promise<Slot> {
    for (;;) {
      const free = this.slots.filter((s) => !s.busy).sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (free) {
        free.busy = true;
        return free;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}

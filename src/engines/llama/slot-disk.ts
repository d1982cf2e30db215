/**
 * The llama.cpp engine's prompt cache on disk: what its slots (./slots.ts) ask at two points, kept
 * apart from the slot placement so the context layout can change around it.
 *
 * - `lookup` (synchronous, in the slots' lookup): when a file shares a longer prefix with the prompt
 *   than any free sequence does, and one of at least promptCacheMinTokens (what is shorter is
 *   cheaper to prefill again than a whole file is to read: a new conversation shares a chat
 *   template's first tokens with every file), the file is read and checked now (./state-file.ts
 *   findSequenceState) and the prompt is placed on the least recently used free sequence with that
 *   prefix's length, so the count reported before the prefill is the count the file gives.
 * - `claim` (in the slots' take, before the claimed sequence's KV is erased): such a placement loads
 *   the file's state into the sequence (./state-file.ts restoreSequenceState) and returns the tokens
 *   reused (0 if llama.cpp refused it).
 * - `saveAll` (when the pool releases the model: src/worker/entry.ts): every sequence holding at
 *   least promptCacheMinTokens is written. Not at the end of each request: saveStateToFile holds the
 *   context's lock, so every other sequence would wait for the write. The tokenizer's segments go
 *   with them (../../tokenize/memo-file.ts), read back when the model is loaded again, so the first
 *   turn after that does not tokenize the whole conversation again.
 *
 * Sliding-window, recurrent and hybrid models are not saved: their saved state is not a full prefix
 * to hand on (./state-file.ts savesFullPrefix).
 *
 * Contract: worker thread; one per loaded GGUF chat model, attached by the worker after the load.
 */
import type { LlamaContextSequence } from 'node-llama-cpp';
import path from 'node:path';
import { cacheKeyOf, keyFolder, packageVersion } from '../../cache/cache-key.js';
import type { LogFn } from '../../core/log.js';
import { PromptDiskStore } from '../../cache/disk-store.js';
import { readMemoFile, writeMemoFile } from '../../tokenize/memo-file.js';
import { PromptEncoder } from '../../tokenize/prompt-encoder.js';
import type { SequencePrefix } from '../sequence.js';
import type { LlamaLoaded } from './load.js';
import { findSequenceState, llamaCacheKey, restoreSequenceState, savesFullPrefix, saveSequenceState, type FoundState } from './state-file.js';

/** What the slots hand the disk cache: a slot's sequence and whether a request holds it. */
interface SlotLike {
  sequence: LlamaContextSequence;
  busy: boolean;
  lastUsed: number;
}

/** A placement from disk: the slot to load the file into, and the file. */
export interface DiskSlotPrefix<S extends SlotLike> extends SequencePrefix {
  slot: S;
  fromDisk: FoundState;
}

const caches = new WeakMap<LlamaLoaded, SlotDiskCache>();

export class SlotDiskCache {
  private slots: readonly SlotLike[] = [];
  private stores = new Map<number, PromptDiskStore>();

  constructor(
    private readonly loaded: LlamaLoaded,
    private readonly log: LogFn,
  ) {}

  /** A file sharing a longer prefix than `inMemory` tokens (and at least promptCacheMinTokens), placed on the least recently used free slot that `fits`; undefined otherwise. */
  lookup<S extends SlotLike>(promptIds: readonly number[], inMemory: number, slots: readonly S[], fits: (slot: S) => boolean = () => true): DiskSlotPrefix<S> | undefined {
    this.slots = slots;
    const slot = slots.filter((s) => !s.busy && fits(s)).sort((a, b) => a.lastUsed - b.lastUsed)[0];
    if (!slot || !savesFullPrefix(slot.sequence)) return undefined;
    const found = findSequenceState(this.storeFor(slot.sequence), promptIds, Math.max(inMemory, this.loaded.engine.promptCacheMinTokens - 1));
    return found ? { slot, length: found.length, fromDisk: found } : undefined;
  }

  /**
   * The tokens `prefix` reuses on its claimed sequence: loaded from its file first when it came from
   * disk. Never throws: a load that fails reuses nothing (the slots then erase the whole sequence).
   */
  async claim(sequence: LlamaContextSequence, prefix: SequencePrefix): Promise<number> {
    const fromDisk = (prefix as Partial<DiskSlotPrefix<SlotLike>>).fromDisk;
    if (!fromDisk) return prefix.length;
    try {
      return await restoreSequenceState(sequence, this.storeFor(sequence), fromDisk);
    } catch (error) {
      this.log('warn', 'prompt cache: a state read from disk was not loaded', error);
      return 0;
    }
  }

  /** Writes every sequence worth keeping (the model is being released: no request holds one), and the tokenizer's segments. */
  async saveAll(): Promise<void> {
    for (const { sequence } of this.slots) {
      if (!savesFullPrefix(sequence) || sequence.contextTokens.length === 0) continue;
      try {
        await saveSequenceState(sequence, this.storeFor(sequence));
      } catch (error) {
        this.log('warn', 'prompt cache: a sequence was not saved to disk', error);
      }
    }
    try {
      await writeMemoFile(memoFile(this.loaded), PromptEncoder.for(this.loaded.tokenizer));
    } catch (error) {
      this.log('warn', "prompt cache: the tokenizer's segments were not saved to disk", error);
    }
  }

  /** Reads the tokenizer's segments written at the last release (../../tokenize/memo-file.ts). */
  restoreSegments(): void {
    const restored = readMemoFile(memoFile(this.loaded), PromptEncoder.for(this.loaded.tokenizer), this.log);
    if (restored > 0) this.log('debug', `prompt cache: ${restored} tokenizer segments read back from disk`);
  }

  /** One store per sequence size (the key names it: a state loads only into a sequence as large). */
  private storeFor(sequence: LlamaContextSequence): PromptDiskStore {
    let store = this.stores.get(sequence.contextSize);
    if (!store) {
      const { promptCacheDir, promptCacheDiskBytes, promptCacheMinTokens } = this.loaded.engine;
      const key = llamaCacheKey(this.loaded.info, this.loaded.engine, sequence.contextSize);
      store = new PromptDiskStore({ dir: promptCacheDir!, budgetBytes: promptCacheDiskBytes, minTokens: promptCacheMinTokens, key, log: this.log });
      this.stores.set(sequence.contextSize, store);
    }
    return store;
  }
}

/** Gives a loaded GGUF chat model its disk cache when the settings ask for one (the worker, after the load). */
export function attachSlotDiskCache(loaded: LlamaLoaded, log: LogFn): void {
  const { promptCacheDir, promptCacheDiskBytes, promptCacheBytes } = loaded.engine;
  if (!loaded.contexts?.length || !promptCacheDir || promptCacheDiskBytes <= 0 || promptCacheBytes <= 0) return;
  const cache = new SlotDiskCache(loaded, log);
  caches.set(loaded, cache);
  cache.restoreSegments();
}

/**
 * The model's file of tokenizer segments: a key folder of its own in the cache directory, by the
 * model's signature and the tokenizer library's version (a new release may tokenize differently).
 */
const memoFile = (loaded: LlamaLoaded) => {
  const variant = { tokenizerSegments: 1, tokenizers: packageVersion('@huggingface/tokenizers') };
  return path.join(loaded.engine.promptCacheDir!, keyFolder(cacheKeyOf({ engine: 'llama', info: loaded.info, variant })), 'segments.json');
};

/** The model's disk cache, if it has one (./slots.ts asks at lookup and take). */
export const slotDiskCache = (loaded: LlamaLoaded): SlotDiskCache | undefined => caches.get(loaded);

/** Writes the model's sequences worth keeping before it is released (src/worker/entry.ts). */
export async function saveSlotDiskCache(loaded: LlamaLoaded): Promise<void> {
  await caches.get(loaded)?.saveAll();
}

/**
 * A llama.cpp sequence's state on disk, in the prompt cache's format (src/cache/): node-llama-cpp's
 * `LlamaContextSequence.saveStateToFile` writes the state (token ids and KV) to a scratch file, whose
 * bytes become the payload of one of our files (header, token ids, SHA-256); loading checks our file
 * whole (src/cache/state-file.ts decodeStateFile) before its payload is written back to a scratch
 * file for `loadStateFromFile`, which trusts its input and may crash the process on a foreign or
 * damaged one (its docs: "using this function may crash the process").
 *
 * The scratch files lie in the cache's own folder (the same file system as the cache, not a small
 * /tmp), named *.tmp, and are removed at once; one left by a crash is removed by a later eviction.
 *
 * The engine's slots use it through ./slot-disk.ts.
 *
 * Contract: worker thread; the sequence is not decoding while it is saved or loaded (node-llama-cpp
 * takes the sequence's and the context's locks for the call, so an evaluation waits).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { LlamaContextSequence } from 'node-llama-cpp';
import type { EngineSettings } from '../../core/engine-settings.js';
import type { ModelInfo } from '../../models/registry.js';
import { cacheKeyOf } from '../../cache/cache-key.js';
import type { DiskEntry, PromptDiskStore } from '../../cache/disk-store.js';
import type { CacheKey, StateFile } from '../../cache/state-file.js';

/**
 * The key of a GGUF model's state files: the model's signature, node-llama-cpp's version, and what
 * shapes the state's bytes (the KV cache's types; flash attention changes the V layout; the
 * sequence's context size bounds what may be loaded).
 */
export function llamaCacheKey(info: ModelInfo, engine: Pick<EngineSettings, 'kvCacheDtype' | 'flashAttention'>, sequenceContext: number): CacheKey {
  return cacheKeyOf({ engine: 'llama', info, variant: { kvCacheDtype: engine.kvCacheDtype, flashAttention: engine.flashAttention, sequenceContext } });
}

/**
 * Whether a saved state of `sequence` holds the KV of every token it names, so that a sequence
 * loading it can be cut anywhere: not on a recurrent or hybrid model (node-llama-cpp's
 * `needsCheckpoints`: a recurrent layer's state is its last one), nor on a sliding-window model even
 * with the full-size cache (./load.ts), since llama.cpp writes a sliding-window layer's cells inside
 * its window only (llama-kv-cache.cpp state_write skips the cells the window masks): a cut before the
 * window's start has node-llama-cpp evaluate the whole kept prefix again (measured on a 64-token
 * window: a copied 3,507-token state cut to 1,500 evaluated those 1,500 again,
 * test/model/llama-swa.test.ts).
 */
export function savesFullPrefix(sequence: LlamaContextSequence): boolean {
  return !sequence.needsCheckpoints && !((sequence.model.fileInsights.swaSize ?? 0) > 0);
}

/**
 * Writes what `sequence` holds now (its contextTokens and their KV) to the store, when the store
 * finds it worth keeping. `exact`: how many leading tokens a later prompt may take (default: all;
 * fewer on a sliding-window model whose kept KV is not a full prefix). False when nothing was written.
 */
export async function saveSequenceState(sequence: LlamaContextSequence, store: PromptDiskStore, exact?: number): Promise<boolean> {
  const tokens = [...sequence.contextTokens] as number[];
  if (!store.worthKeeping(tokens.length)) return false;
  const scratch = store.scratchFile();
  try {
    await sequence.saveStateToFile(scratch);
    const state = await fs.promises.readFile(scratch);
    return await store.write({ header: { exact: Math.min(exact ?? tokens.length, tokens.length), meta: { llamaStateBytes: state.byteLength } }, tokens, payload: [state] });
  } finally {
    fs.rmSync(scratch, { force: true });
  }
}

/** A checked file that shares `length` tokens with a prompt: what `restoreSequenceState` loads. */
export interface FoundState {
  entry: DiskEntry;
  file: StateFile;
  length: number;
}

/**
 * The stored state that shares the longest prefix with `promptIds` (at most promptIds.length - 1
 * tokens: the last one is evaluated for its logits) and more than `atLeast` tokens, read and checked
 * whole (synchronously); undefined when there is none or it is bad (logged and removed by the store).
 */
export function findSequenceState(store: PromptDiskStore, promptIds: readonly number[], atLeast = 0): FoundState | undefined {
  const best = store.longest(promptIds, promptIds.length - 1);
  if (!best || best.length <= atLeast) return undefined;
  const file = store.read(best.entry);
  if (!file) return undefined;
  if ((file.meta as { llamaStateBytes?: number } | undefined)?.llamaStateBytes !== file.payload.byteLength) {
    store.reject(best.entry, new Error('its llama.cpp state is not the size its header says'));
    return undefined;
  }
  return { entry: best.entry, file, length: best.length };
}

/**
 * Loads a found state into `sequence` and erases what the sequence then holds past its prefix.
 * Returns the tokens reused: `found.length`, or 0 when llama.cpp refused it (the file is then
 * removed, and the sequence cleared).
 */
export async function restoreSequenceState(sequence: LlamaContextSequence, store: PromptDiskStore, found: FoundState): Promise<number> {
  const scratch = store.scratchFile();
  try {
    await fs.promises.writeFile(scratch, found.file.payload);
    await sequence.loadStateFromFile(scratch, { acceptRisk: true });
  } catch (error) {
    // Refused by llama.cpp (a context too small for it...): the sequence holds nothing usable.
    await sequence.clearHistory();
    store.reject(found.entry, error);
    return 0;
  } finally {
    fs.rmSync(scratch, { force: true });
  }
  const held = sequence.contextTokens.length;
  if (held > found.length) await sequence.eraseContextTokenRanges([{ start: found.length, end: held }]);
  return found.length;
}

/**
 * Copies what `from` holds (its tokens and their KV) into `to`, replacing what `to` held, through a
 * scratch file in `dir`: node-llama-cpp 3.21.1 has no sequence-to-sequence copy (measured on the test
 * GGUF: 2,048 tokens saved in 2-6 ms and loaded in 2-3 ms, where prefilling them takes 180-440 ms).
 * The file never leaves this call and was written a moment before by the same model and context
 * settings, so it is loaded as it is, without our header. A save that fails throws with
 * `loaded: false` (`to` is untouched); a load that fails throws as it is (`to` holds nothing usable).
 */
export async function copySequenceState(from: LlamaContextSequence, to: LlamaContextSequence, dir: string): Promise<void> {
  const scratch = path.join(dir, `.copy.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    try {
      fs.mkdirSync(dir, { recursive: true });
      await from.saveStateToFile(scratch);
    } catch (error) {
      throw Object.assign(new Error('the sequence state was not saved', { cause: error }), { loaded: false });
    }
    await to.loadStateFromFile(scratch, { acceptRisk: true });
  } finally {
    fs.rmSync(scratch, { force: true });
  }
}

/** findSequenceState then restoreSequenceState: the tokens of `promptIds` now in `sequence` from disk (0: none). */
export async function loadSequenceState(sequence: LlamaContextSequence, store: PromptDiskStore, promptIds: readonly number[], atLeast = 0): Promise<number> {
  const found = findSequenceState(store, promptIds, atLeast);
  return found ? restoreSequenceState(sequence, store, found) : 0;
}

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
 * Not wired into the engine's slots yet (src/engines/llama/slots.ts belongs to the context-layout
 * work of issue 40): docs/not-done-yet.md says how it is to be hooked in.
 *
 * Contract: worker thread; the sequence is not decoding while it is saved or loaded (node-llama-cpp
 * takes the sequence's and the context's locks for the call, so an evaluation waits).
 */
import fs from 'node:fs';
import type { LlamaContextSequence } from 'node-llama-cpp';
import type { EngineSettings } from '../../core/engine-settings.js';
import type { ModelInfo } from '../../models/registry.js';
import { cacheKeyOf } from '../../cache/cache-key.js';
import type { PromptDiskStore } from '../../cache/disk-store.js';
import type { CacheKey } from '../../cache/state-file.js';

/**
 * The key of a GGUF model's state files: the model's signature, node-llama-cpp's version, and what
 * shapes the state's bytes (the KV cache's types; flash attention changes the V layout; the
 * sequence's context size bounds what may be loaded).
 */
export function llamaCacheKey(info: ModelInfo, engine: Pick<EngineSettings, 'kvCacheDtype' | 'flashAttention'>, sequenceContext: number): CacheKey {
  return cacheKeyOf({ engine: 'llama', info, variant: { kvCacheDtype: engine.kvCacheDtype, flashAttention: engine.flashAttention, sequenceContext } });
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

/**
 * Loads into `sequence` the stored state that shares the longest prefix with `promptIds` (at most
 * promptIds.length - 1 tokens: the last one is evaluated for its logits), after checking the file
 * whole, and erases what the sequence then holds past that prefix. Returns the tokens reused (0: no
 * file, a bad one, logged and removed by the store, or one llama.cpp refused; the sequence is then
 * cleared). `atLeast`: load only a file that beats what the sequence could reuse already.
 */
export async function loadSequenceState(sequence: LlamaContextSequence, store: PromptDiskStore, promptIds: readonly number[], atLeast = 0): Promise<number> {
  const best = store.longest(promptIds, promptIds.length - 1);
  if (!best || best.length <= atLeast) return 0;
  const file = store.read(best.entry);
  if (!file || (file.meta as { llamaStateBytes?: number } | undefined)?.llamaStateBytes !== file.payload.byteLength) return 0;
  const scratch = store.scratchFile();
  try {
    await fs.promises.writeFile(scratch, file.payload);
    await sequence.loadStateFromFile(scratch, { acceptRisk: true });
  } catch (error) {
    // Refused by llama.cpp (a context too small for it...): the sequence holds nothing usable.
    await sequence.clearHistory();
    store.reject(best.entry, error);
    return 0;
  } finally {
    fs.rmSync(scratch, { force: true });
  }
  const held = sequence.contextTokens.length;
  if (held > best.length) await sequence.eraseContextTokenRanges([{ start: best.length, end: held }]);
  return best.length;
}

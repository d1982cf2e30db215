/**
 * Prefix affinity: a chat request goes to the worker most likely to hold its prompt's prefix in its
 * prefix cache (src/engines/onnx/decode/prefix-cache.ts), and to the least busy worker when that one is
 * saturated.
 *
 * The key is the client's name for the conversation when it gives one (`prompt_cache_key`), else
 * the start of the prompt as the request states it, not its token ids (those exist only in the worker): the system prompt and the tools, which chat templates render first and which an
 * agent resends unchanged every turn; the first message when there are neither (its images by their
 * SHA-256). The worker for a key
 * is chosen by rendezvous hashing over the live workers' thread ids: stateless, the same for every
 * turn of a conversation, and a replaced worker moves only the keys that were its own.
 *
 * piscina chooses the worker of every task through its `loadBalancer`; the key rides on the task
 * under piscina's queue-options symbol, which structured cloning drops, so the worker never sees it.
 *
 * Contract: event-loop thread; the balancer is called by piscina whenever it distributes a task.
 */
import { createHash } from 'node:crypto';
import { Piscina } from 'piscina';
import type { ChatPrompt } from '../core/types.js';

/** What piscina's balancer is handed (piscina's PiscinaLoadBalancer, restated for the fields used). */
type BalancedTask = object;
interface BalancedWorker {
  id: number;
  currentUsage: number;
  terminating: boolean;
  destroyed: boolean;
}

export const AFFINITY = Piscina.queueOptionsSymbol;

/** The task's affinity options, set under AFFINITY on the task object. */
export interface AffinityOptions {
  affinity: number;
}

/** A 32-bit key for the leading part of a chat prompt (see the module comment). */
export function affinityKey(prompt: ChatPrompt): number {
  // The client's own name for the conversation wins: two sessions of one agent share its system
  // prompt and tools, and would otherwise all go to one worker until it is full.
  const lead = prompt.cacheKey !== undefined ? { cacheKey: prompt.cacheKey } : prompt.system || prompt.tools?.length ? { system: prompt.system ?? '', tools: prompt.tools ?? [] } : { first: prompt.messages[0] ?? null };
  // An image stands in the key by its hash (a field beside its bytes) and its view (lowResolution):
  // the same screenshot seen the same way is the same key, another one of the same size is not, and
  // the bytes are not written out as JSON.
  return createHash('sha1').update(JSON.stringify(lead, (_, value: unknown) => (value instanceof Uint8Array ? undefined : value))).digest().readUInt32LE(0);
}

/** murmur3's finaliser: a well-mixed 32-bit score for (key, worker). */
function score(key: number, worker: number): number {
  let h = (key ^ Math.imul(worker, 0x9e3779b9)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The worker that key prefers among `ids` (rendezvous hashing). */
export function preferredWorker(key: number, ids: readonly number[]): number | undefined {
  let best: number | undefined;
  let bestScore = -1;
  for (const id of ids) {
    const s = score(key, id);
    if (s > bestScore || (s === bestScore && id < best!)) [best, bestScore] = [id, s];
  }
  return best;
}

/**
 * piscina's load balancer with prefix affinity: a task with an affinity key goes to its preferred
 * worker while that one runs fewer than `maximumUsage` tasks; otherwise (and for tasks without a key)
 * to an idle worker, else the least busy one below `maximumUsage`; null when every worker is full
 * (piscina then keeps the task queued).
 */
export function affinityBalancer(maximumUsage: number) {
  return <W extends BalancedWorker>(task: BalancedTask, workers: W[]): W | null => {
    const live = workers.filter((w) => !w.terminating && !w.destroyed);
    const options = (task as { [AFFINITY]?: Partial<AffinityOptions> | null })[AFFINITY];
    if (typeof options?.affinity === 'number') {
      const id = preferredWorker(options.affinity, live.map((w) => w.id));
      const preferred = live.find((w) => w.id === id);
      if (preferred && preferred.currentUsage < maximumUsage) return preferred;
    }
    let candidate: W | null = null;
    for (const w of live) {
      if (w.currentUsage >= maximumUsage) continue;
      if (!candidate || w.currentUsage < candidate.currentUsage) candidate = w;
    }
    return candidate;
  };
}

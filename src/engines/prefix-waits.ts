/**
 * A shared prefix computed once (issue 40): requests that arrive together with one long prefix (an
 * agent's parallel sub-agents, a tool loop's turns: one system prompt) would each prefill it, since
 * none is in the prompt cache until one of them has computed it. Here a request whose prompt shares
 * a long prefix with one being prefilled now (a holder) waits until the holder has that prefix ready
 * (ONNX: stored in the prefix cache; llama.cpp: evaluated in the holder's sequence, whose state is
 * then copied: ./llama/slots.ts), and then takes it as any cached prefix, reported as cache reads.
 *
 * - Worth waiting for: a prefix at least `minTokens` longer than what the waiter has already (the
 *   engines give one prefill chunk: a shorter one is evaluated within the waiter's first forward
 *   pass together with what follows it, so waiting would delay that pass for a part of it; and
 *   every chat template starts its prompts alike, which is never worth a wait).
 * - Bounded: a waiter goes on (and prefills itself) when its holder ends without the prefix
 *   (cancelled, failed, or its prefill over: `end`), when the holder has made no progress for
 *   `stallMs`, or when the waiter's own client has gone (its `cancelled`, polled: the cancel flag is
 *   shared memory with no event).
 * - No cycles, arrival order: a request waits only for one that came before it and is not waiting
 *   itself; so the first of the waiters a cancelled holder leaves behind goes on and prefills, and
 *   the others wait for it (they are woken in the order they came).
 *
 * Contract: one per engine (one loaded model), on its worker thread; the engine calls `hold` for each
 * request it will prefill (before the request's lookup returns, so one arriving a moment later finds
 * it), `progress` as its prefill goes, and `end` once, when others can take no more from it.
 */

/** A prompt being prefilled (or about to be) whose prefix others may take. */
export interface Holder {
  readonly prompt: readonly number[];
  /** Leading tokens of the prompt others can take now. */
  ready: number;
  /** Waiting for another holder itself: not one to wait for meanwhile. */
  waiting: boolean;
  ended: boolean;
}

/** Why a wait ended: the holder has the tokens ready, or ended, or stalled; or the waiter's client left. */
export type WaitOutcome = 'ready' | 'ended' | 'stalled' | 'cancelled';

interface Waiter {
  need: number;
  /** When the holder last made progress. */
  since: number;
  settle: (outcome: WaitOutcome) => void;
}

export interface PrefixWaitsOptions {
  /** The shortest gain worth a wait (see the file's comment). */
  minTokens: number;
  /** Shared lengths are counted in multiples of this (the prefix cache's alignment: ./onnx/decode/prefix-cache.ts). */
  align?: number;
  /** A holder with no progress for this long is left to itself (default STALL_MS). */
  stallMs?: number;
}

/**
 * No progress for this long: the holder is stuck (a forward pass hung, which the pool's watchdog ends)
 * or starved, and the waiter is better off on its own. A prefill chunk takes well under a second on a
 * small model, seconds on a 7B one on a CPU.
 */
export const STALL_MS = 60_000;
/** How often a held request's cancel flag and its holder's progress are looked at. */
const POLL_MS = 50;

const commonPrefix = (a: readonly number[], b: readonly number[], limit: number) => {
  let n = 0;
  while (n < limit && a[n] === b[n]) n++;
  return n;
};

export class PrefixWaits {
  private readonly holders = new Set<Holder>();
  private readonly waiters = new Map<Holder, Waiter[]>();

  constructor(private readonly options: PrefixWaitsOptions) {}

  /** Announces a prompt this engine will prefill; `ready`: what of it is there already. */
  hold(prompt: readonly number[], ready = 0): Holder {
    const holder: Holder = { prompt, ready, waiting: false, ended: false };
    this.holders.add(holder);
    return holder;
  }

  /**
   * The holder worth waiting for: the one sharing the longest prefix with `prompt` (at most all but
   * its last token, whose logits choose the first output token), when that is at least minTokens more
   * than the `have` tokens the prompt has already. `self`: the prompt's own holder, if it has one:
   * only holders that came before it count. `accept`: whether the caller could take from a holder.
   */
  find(prompt: readonly number[], have: number, self?: Holder, accept: (holder: Holder) => boolean = () => true): { holder: Holder; length: number } | undefined {
    const align = this.options.align ?? 1;
    let best: { holder: Holder; length: number } | undefined;
    // Holders in the order they came: a request waits only for one that came before it.
    for (const holder of this.holders) {
      if (holder === self) break;
      if (holder.waiting || !accept(holder)) continue;
      const shared = commonPrefix(prompt, holder.prompt, Math.min(prompt.length - 1, holder.prompt.length));
      const length = shared - (shared % align);
      if (length > (best?.length ?? 0)) best = { holder, length };
    }
    return best && best.length - have >= this.options.minTokens ? best : undefined;
  }

  /**
   * Waits until `holder` has `need` tokens ready (at once when it has), or one of the other ends in
   * the file's comment. `self`, the waiter's own holder if it has one, is marked waiting meanwhile.
   */
  wait(holder: Holder, need: number, cancelled: () => boolean = () => false, self?: Holder): Promise<WaitOutcome> {
    if (holder.ready >= need) return Promise.resolve('ready');
    if (holder.ended) return Promise.resolve('ended');
    if (self) self.waiting = true;
    return new Promise<WaitOutcome>((resolve) => {
      const stallMs = this.options.stallMs ?? STALL_MS;
      const timer = setInterval(() => {
        if (cancelled()) waiter.settle('cancelled');
        else if (performance.now() - waiter.since >= stallMs) waiter.settle('stalled');
      }, Math.min(POLL_MS, stallMs));
      const waiter: Waiter = {
        need,
        since: performance.now(),
        settle: (outcome) => {
          clearInterval(timer);
          const list = this.waiters.get(holder);
          const at = list?.indexOf(waiter) ?? -1;
          if (at < 0) return;
          list!.splice(at, 1);
          if (list!.length === 0) this.waiters.delete(holder);
          if (self) self.waiting = false;
          resolve(outcome);
        },
      };
      this.waiters.set(holder, [...(this.waiters.get(holder) ?? []), waiter]);
    });
  }

  /** The fewest tokens a waiter of `holder` needs ready (Infinity: nobody waits for it). */
  wanted(holder: Holder): number {
    return Math.min(Infinity, ...(this.waiters.get(holder) ?? []).map((w) => w.need));
  }

  /** `holder` made progress (a forward pass), with `ready` tokens now ready: the waiters it serves go on. */
  progress(holder: Holder, ready = holder.ready): void {
    holder.ready = Math.max(holder.ready, ready);
    const now = performance.now();
    for (const waiter of [...(this.waiters.get(holder) ?? [])]) {
      waiter.since = now;
      if (waiter.need <= holder.ready) waiter.settle('ready');
    }
  }

  /** `holder` makes nothing more ready: forgotten, and its waiters go on (in the order they came). */
  end(holder: Holder): void {
    if (holder.ended) return;
    holder.ended = true;
    this.holders.delete(holder);
    for (const waiter of [...(this.waiters.get(holder) ?? [])]) waiter.settle(waiter.need <= holder.ready ? 'ready' : 'ended');
  }
}

/**
 * Waits, as often as it takes, for the holders with a prefix worth waiting for: returns the holder
 * and length to take after a wait that ended 'ready', else undefined (nothing worth it, or the waits
 * ended otherwise: the prompt is then prefilled as it is). `have()`: tokens the prompt has already
 * (asked again after each wait). A holder that ends without the prefix hands over to the next one,
 * if any (often a waiter of the same holder that went on first).
 */
export async function waitForShared(waits: PrefixWaits, request: { prompt: readonly number[]; have: () => number; cancelled?: () => boolean; self?: Holder; accept?: (holder: Holder) => boolean }): Promise<{ holder: Holder; length: number } | undefined> {
  const { prompt, have, cancelled, self, accept } = request;
  for (;;) {
    if (cancelled?.()) return undefined;
    const best = waits.find(prompt, have(), self, accept);
    if (!best) return undefined;
    const outcome = await waits.wait(best.holder, best.length, cancelled, self);
    if (outcome === 'ready') return best;
    if (outcome !== 'ended') return undefined;
  }
}

/**
 * Waits for a shared prefix (src/engines/prefix-waits.ts): which holder a prompt waits for (the
 * longest shared prefix, at least minTokens more than it has, only one that came before it and is
 * not waiting itself), and every way a wait ends: the tokens ready, the holder ended (the next
 * waiter then holds for the others), no progress for stallMs, the waiter's client gone.
 */
import { describe, expect, it } from 'vitest';
import { PrefixWaits, waitForShared } from '../../src/engines/prefix-waits.js';

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
/** A prompt of `shared` tokens of the common prefix, then tokens of its own (`own` says which). */
const prompt = (shared: number, own: number) => [...range(shared), ...range(4, 1000 * own)];

describe('PrefixWaits', () => {
  it('finds the holder sharing the longest prefix worth minTokens more than the prompt has, aligned, among those that came before it', () => {
    const waits = new PrefixWaits({ minTokens: 8, align: 4 });
    const short = waits.hold(prompt(10, 1));
    const long = waits.hold(prompt(30, 2));
    const self = waits.hold(prompt(40, 3));
    const later = waits.hold(prompt(40, 4));
    expect(waits.find(prompt(40, 3), 0, self)).toEqual({ holder: long, length: 28 }); // 30 shared, aligned to 4; `later` came after
    expect(waits.find(prompt(40, 3), 20, self)).toEqual({ holder: long, length: 28 }); // 8 more than it has
    expect(waits.find(prompt(40, 3), 21, self)).toBeUndefined(); // 7 more: not worth a wait
    expect(waits.find(prompt(9, 5), 0)).toEqual({ holder: short, length: 8 }); // ties: the first that came
    waits.end(long);
    expect(waits.find(prompt(40, 3), 0, self)).toEqual({ holder: short, length: 8 });
    expect(later.ready).toBe(0);
  });

  it('a waiting holder is none to wait for; a prompt never waits for more than all but its last token', () => {
    const waits = new PrefixWaits({ minTokens: 4 });
    const first = waits.hold(prompt(20, 1));
    const second = waits.hold(prompt(20, 2));
    void waits.wait(first, 20, () => false, second);
    expect(second.waiting).toBe(true);
    const third = waits.hold(prompt(20, 3));
    expect(waits.find(prompt(20, 3), 0, third)?.holder).toBe(first);
    expect(waits.find(range(6), 0)).toEqual({ holder: first, length: 5 });
    waits.end(first);
  });

  it('a wait ends when the tokens are ready (at once when they are), and progress short of them only says the holder moves', async () => {
    const waits = new PrefixWaits({ minTokens: 4, stallMs: 10_000 });
    const holder = waits.hold(prompt(64, 1));
    let outcome: string | undefined;
    const wait = waits.wait(holder, 48).then((o) => (outcome = o));
    expect(waits.wanted(holder)).toBe(48);
    waits.progress(holder, 32);
    await Promise.resolve();
    expect(outcome).toBeUndefined();
    waits.progress(holder, 48);
    await wait;
    expect(outcome).toBe('ready');
    expect(waits.wanted(holder)).toBe(Infinity);
    expect(await waits.wait(holder, 40)).toBe('ready');
  });

  it('a holder that ends leaves its waiters to go on in order: the first holds for the others, which take its prefix', async () => {
    const waits = new PrefixWaits({ minTokens: 4 });
    const first = waits.hold(prompt(32, 1));
    const selves = [waits.hold(prompt(32, 2)), waits.hold(prompt(32, 3))];
    const results = selves.map((self, k) => waitForShared(waits, { prompt: prompt(32, 2 + k), have: () => 0, self }));
    await Promise.resolve();
    waits.end(first); // cancelled before it had anything ready
    expect(await results[0]).toBeUndefined(); // goes on, and prefills
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(waits.wanted(selves[0]!)).toBe(32); // the second waits for the first waiter now
    waits.progress(selves[0]!, 32);
    expect(await results[1]).toEqual({ holder: selves[0], length: 32 });
  });

  it('a holder with no progress for stallMs is left; a waiter whose client is gone is let go', async () => {
    const waits = new PrefixWaits({ minTokens: 4, stallMs: 30 });
    const holder = waits.hold(prompt(32, 1));
    expect(await waits.wait(holder, 32)).toBe('stalled');
    let gone = false;
    const leaving = waits.wait(holder, 32, () => gone);
    gone = true;
    const slow = new PrefixWaits({ minTokens: 4, stallMs: 60_000 });
    const slowHolder = slow.hold(prompt(32, 1));
    let left = false;
    const held = slow.wait(slowHolder, 32, () => left);
    left = true;
    expect(await held).toBe('cancelled');
    expect(['cancelled', 'stalled']).toContain(await leaving);
    expect(slow.wanted(slowHolder)).toBe(Infinity);
  });
});

/**
 * Where a request runs on the llama.cpp engine (src/engines/llama/slots.ts), on stand-ins for
 * node-llama-cpp's contexts and sequences (what slots.ts reads of them: their sizes, the tokens a
 * sequence holds, erasing its end, its model's sliding window): a request goes to the shortest room
 * its prompt plus max_tokens fits, waits in arrival order when no such sequence is free, and a
 * reported prefix is one that is kept as it is.
 */
import { describe, expect, it } from 'vitest';
import type { LlamaLoaded } from '../../src/engines/llama/load.js';
import { LlamaSlots, type Placement } from '../../src/engines/llama/slots.js';

class FakeSequence {
  contextTokens: number[] = [];
  /** Not a sliding-window model (no swaSize): its saved state is a full prefix. */
  readonly model = { fileInsights: {} };
  /** Its KV cannot be cut at any position (a recurrent or hybrid model). */
  constructor(readonly needsCheckpoints = false) {}
  get nextTokenIndex() {
    return this.contextTokens.length;
  }
  async eraseContextTokenRanges(ranges: Array<{ start: number; end: number }>) {
    for (const { start, end } of ranges) this.contextTokens.splice(start, end - start);
  }
  _resolveSamplerConfig() {
    return {};
  }
}

function slotsOf(rooms: Array<[sequences: number, size: number]>, options: { checkpoints?: boolean; promptCacheBytes?: number } = {}) {
  const contexts = rooms.map(([totalSequences, contextSize]) => ({ totalSequences, contextSize, getSequence: () => new FakeSequence(options.checkpoints) }));
  const loaded = { info: { id: 'fake' }, contexts, engine: { promptCacheBytes: options.promptCacheBytes ?? 1 }, kvBytesPerToken: 1 } as unknown as LlamaLoaded;
  return new LlamaSlots(loaded);
}

const tokens = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const sizeOf = (p: Placement) => p.slot.size;
/** Whether a promise has settled by the end of this turn of the event loop. */
const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('the llama.cpp engine\'s placement of requests', () => {
  it('puts a request in the shortest room its prompt plus max_tokens fits', async () => {
    const slots = slotsOf([[1, 32_768], [2, 4096]]);
    expect(sizeOf(await slots.place(tokens(100), 1000))).toBe(4096);
    expect(sizeOf(await slots.place(tokens(100), 32_000))).toBe(32_768);
  });

  it('holds a request that needs the busy long room, lets a short one through meanwhile, and hands the long sequence over in arrival order', async () => {
    const slots = slotsOf([[1, 32_768], [2, 4096]]);
    const first = await slots.place(tokens(9000), 20_000);
    const second = slots.place(tokens(9000, 1), 20_000);
    const third = slots.place(tokens(9000, 2), 20_000);
    expect(await settled(second)).toBe(false);
    const short = slots.place(tokens(10), 100);
    expect(await settled(short)).toBe(true);
    expect(sizeOf(await short)).toBe(4096);
    first.release();
    first.release(); // once: a second release gives back nothing more
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(false);
    (await second).release();
    expect(sizeOf(await third)).toBe(32_768);
  });

  it('reuses a prefix only in a sequence the request fits, and reports exactly what it keeps, after a wait too', async () => {
    const slots = slotsOf([[1, 32_768], [1, 4096]]);
    const prompt = tokens(3000);
    const short = await slots.place(prompt, 10);
    expect(short).toMatchObject({ length: 0 });
    expect(short.slot.size).toBe(4096);
    (short.slot.sequence.contextTokens as number[]).push(...prompt, 77); // what the sequence evaluated
    short.release();
    const again = [...prompt, 5, 6];
    // Fits the short room: its prefix, short of the prompt's last token, is kept and counted.
    const placed = await slots.place(again, 100);
    expect(placed).toMatchObject({ length: 3000, slot: short.slot });
    expect(placed.slot.sequence.contextTokens).toEqual(prompt);
    placed.release();
    // With max_tokens the short room cannot hold: the long room, whose sequence holds none of it.
    const long = await slots.place(again, 29_000);
    expect(long).toMatchObject({ length: 0 });
    expect(sizeOf(long)).toBe(32_768);
    (long.slot.sequence.contextTokens as number[]).push(...again);
    // A request that waits for the long sequence is told, once it has it, the prefix it keeps.
    const waiting = slots.place([...again, 9], 29_000);
    expect(await settled(waiting)).toBe(false);
    long.release();
    expect(await waiting).toMatchObject({ length: again.length, slot: long.slot });
    // What no sequence holds is refused, not left waiting (the chat turn never asks it).
    await expect(slots.place(again, 30_000)).rejects.toThrow(/longer than the longest sequence/);
  });

  it('keeps a long session\'s sequence from a prompt sharing only its first few tokens while another sequence is free', async () => {
    const slots = slotsOf([[3, 32_768]]);
    const session = tokens(18_000);
    const first = await slots.place(session, 100);
    (first.slot.sequence.contextTokens as number[]).push(...session);
    first.release();
    // Another conversation: the template's first 6 tokens alike (`<|im_start|>system\n`...), then not.
    const other = [...tokens(6), ...tokens(8000, 100_000)];
    const placed = await slots.place(other, 100);
    expect(placed.slot).not.toBe(first.slot);
    expect(placed).toMatchObject({ length: 0 });
    expect(first.slot.sequence.contextTokens).toEqual(session);
    placed.release();
    // A prefix worth what it erases (a branch of the session: 10,000 kept, 8,000 erased) takes the sequence.
    const branch = await slots.place([...tokens(10_000), 7], 100);
    expect(branch).toMatchObject({ length: 10_000, slot: first.slot });
    branch.release();
    // With no other sequence free, the least recently used is taken and its few shared tokens still reused.
    const one = slotsOf([[1, 32_768]]);
    const held = await one.place(session, 100);
    (held.slot.sequence.contextTokens as number[]).push(...session);
    held.release();
    expect(await one.place(other, 100)).toMatchObject({ length: 6, slot: held.slot });
  });

  it('reuses a sequence that cannot be cut (recurrent, hybrid) only where the prompt extends all it holds', async () => {
    const slots = slotsOf([[1, 4096]], { checkpoints: true });
    const first = await slots.place(tokens(50), 10);
    (first.slot.sequence.contextTokens as number[]).push(...tokens(60)); // the prompt and output it evaluated
    first.release();
    // A prompt that shares 55 tokens and then differs: cutting would re-evaluate, so nothing is kept or reported.
    const differs = await slots.place([...tokens(55), 999, 1000], 10);
    expect(differs).toMatchObject({ length: 0 });
    expect(differs.slot.sequence.nextTokenIndex).toBe(0);
    (differs.slot.sequence.contextTokens as number[]).push(...tokens(60));
    differs.release();
    // One that extends all 60: all of it is kept, nothing erased.
    const extended = await slots.place([...tokens(60), 5, 6], 10);
    expect(extended).toMatchObject({ length: 60 });
    expect(extended.slot.sequence.nextTokenIndex).toBe(60);
  });

  it('reuses nothing with the prompt cache off', async () => {
    const slots = slotsOf([[1, 4096]], { promptCacheBytes: 0 });
    const first = await slots.place(tokens(50), 10);
    (first.slot.sequence.contextTokens as number[]).push(...tokens(50));
    first.release();
    expect(await slots.place(tokens(60), 10)).toMatchObject({ length: 0 });
  });
});

describe('a claim that erases a sequence\'s KV', () => {
  it('is waited for by erasesDone while its erase runs (the runner queues no chunk or step meanwhile), and then no longer', async () => {
    const slots = slotsOf([[1, 4096]], { promptCacheBytes: 0 });
    const first = await slots.place(tokens(10), 10);
    const sequence = first.slot.sequence as unknown as FakeSequence;
    sequence.contextTokens = tokens(20);
    first.release();
    expect(slots.erasesDone()).toBeUndefined();
    // The erase waits, as node-llama-cpp's does for its context's lock.
    let unlock!: () => void;
    const locked = new Promise<void>((resolve) => (unlock = resolve));
    const erase = sequence.eraseContextTokenRanges.bind(sequence);
    sequence.eraseContextTokenRanges = async (ranges) => (await locked, erase(ranges));
    const claim = slots.place(tokens(10, 100), 10);
    await new Promise((resolve) => setImmediate(resolve));
    const done = slots.erasesDone();
    expect(done).toBeInstanceOf(Promise);
    expect(await settled(done!)).toBe(false);
    unlock();
    await claim;
    expect(await settled(done!)).toBe(true);
    expect(sequence.nextTokenIndex).toBe(0);
    expect(slots.erasesDone()).toBeUndefined();
  });
});

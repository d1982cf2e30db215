/**
 * Where a request runs on the llama.cpp engine (src/engines/llama/slots.ts), on stand-ins for
 * node-llama-cpp's contexts and sequences (what slots.ts reads of them: their sizes, the tokens a
 * sequence holds, erasing its end): a request goes to the shortest room its prompt plus max_tokens
 * fits, waits in arrival order when no such sequence is free, and a reported prefix is one that
 * is kept as it is.
 */
import { describe, expect, it } from 'vitest';
import type { LlamaLoaded } from '../../src/engines/llama/load.js';
import { LlamaSlots, type Placement } from '../../src/engines/llama/slots.js';

class FakeSequence {
  contextTokens: number[] = [];
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

function slotsOf(rooms: Array<[sequences: number, size: number]>, options: { checkpoints?: boolean } = {}) {
  const contexts = rooms.map(([totalSequences, contextSize]) => ({ totalSequences, contextSize, getSequence: () => new FakeSequence(options.checkpoints) }));
  const loaded = { info: { id: 'fake' }, contexts, engine: { promptCacheBytes: 1 }, kvBytesPerToken: 1 } as unknown as LlamaLoaded;
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
    expect(sizeOf(await slots.take(tokens(100), 1000))).toBe(4096);
    expect(sizeOf(await slots.take(tokens(100), 32_000))).toBe(32_768);
  });

  it('holds a request that needs the busy long room, lets a short one through meanwhile, and hands the long sequence over in arrival order', async () => {
    const slots = slotsOf([[1, 32_768], [2, 4096]]);
    const first = await slots.take(tokens(9000), 20_000);
    const second = slots.take(tokens(9000, 1), 20_000);
    const third = slots.take(tokens(9000, 2), 20_000);
    expect(await settled(second)).toBe(false);
    const short = slots.take(tokens(10), 100);
    expect(await settled(short)).toBe(true);
    expect(sizeOf(await short)).toBe(4096);
    slots.release(first.slot);
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(false);
    slots.release((await second).slot);
    expect(sizeOf(await third)).toBe(32_768);
  });

  it('finds a prefix only in a sequence the request fits, and reuses exactly what it reported', async () => {
    const slots = slotsOf([[1, 32_768], [1, 4096]]);
    const prompt = tokens(3000);
    const short = await slots.take(prompt, 10);
    expect(short.slot.size).toBe(4096);
    (short.slot.sequence.contextTokens as number[]).push(...prompt, 77); // what the sequence evaluated
    slots.release(short.slot);
    const again = [...prompt, 5, 6];
    // Fits the short room: its prefix, short of the prompt's last token, is found and kept.
    const found = slots.lookup(again, 100);
    expect(found?.length).toBe(3000);
    const placed = await slots.take(again, 100, found);
    expect(placed).toMatchObject({ reuse: 3000, slot: short.slot });
    expect(placed.slot.sequence.contextTokens).toEqual(prompt);
    slots.release(placed.slot);
    // With max_tokens the short room cannot hold: no prefix (the long sequence holds none), and the long room.
    expect(slots.lookup(again, 29_000)).toBeNull();
    expect(sizeOf(await slots.take(again, 29_000, null))).toBe(32_768);
    // What no sequence holds is refused, not left waiting (the chat turn never asks it).
    await expect(slots.take(again, 30_000, null)).rejects.toThrow(/longer than the longest sequence/);
  });

  it('reuses a sequence that cannot be cut (recurrent, hybrid) only where the prompt extends all it holds', async () => {
    const slots = slotsOf([[1, 4096]], { checkpoints: true });
    const first = await slots.take(tokens(50), 10);
    (first.slot.sequence.contextTokens as number[]).push(...tokens(60)); // the prompt and output it evaluated
    slots.release(first.slot);
    // A prompt that shares 55 tokens and then differs: cutting would re-evaluate, so nothing is reported.
    expect(slots.lookup([...tokens(55), 999, 1000], 10)).toBeNull();
    // One that extends all 60: all of it is kept, nothing erased.
    const extended = [...tokens(60), 5, 6];
    const found = slots.lookup(extended, 10);
    expect(found?.length).toBe(60);
    expect(await slots.take(extended, 10, found)).toMatchObject({ reuse: 60 });
  });
});

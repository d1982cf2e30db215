/**
 * The batch decoder (src/engines/onnx/decode/scheduler.ts) driven in-process on the bundled model: the KV
 * store seam (a prompt prefilled after a cached prefix decodes exactly as a cold one), the logits
 * mask seam, and failures that stay with their sequence.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { BatchDecoder, type DecoderSpec } from '../../src/engines/onnx/decode/scheduler.js';
import { extractRow } from '../../src/engines/onnx/decode/kv-batch.js';
import type { KvPrefix, KvStore } from '../../src/engines/onnx/decode/kv-store.js';
import { cacheShape } from '../../src/engines/onnx/decode/session-info.js';
import { type CacheShape, type KvArray } from '../../src/engines/onnx/tensors.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { testEngine } from '../helpers/engine.js';

const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };
const OUT_OF_VOCABULARY = 10_000_000;

let loaded: LoadedModel;
let shape: CacheShape;
let vocab: number;

beforeAll(async () => {
  const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === CHAT_MODEL)!;
  loaded = await loadModel(info, testEngine({ ortAllowSpinning: false }));
  shape = cacheShape(loaded)!;
  vocab = (loaded.model.config as unknown as { vocab_size: number }).vocab_size;
});

const promptOf = (text: string) => loaded.tokenizer.encode(text, { add_special_tokens: false });

/** Runs one greedy sequence; its tokens once it has ended. */
async function generate(decoder: BatchDecoder, promptIds: number[], maxTokens: number, extra: Partial<DecoderSpec> = {}): Promise<number[]> {
  const tokens: number[] = [];
  await decoder.run({ promptIds, maxTokens, sampling: GREEDY, onToken: (id) => (tokens.push(id), false), cancelled: () => false, ...extra });
  return tokens;
}

/** Exact-prefix store: the longest common prefix with any stored sequence, its KV cut to that length. */
interface Entry {
  tokens: number[];
  kv: Float32Array[];
}

class PrefixStore implements KvStore {
  readonly entries: Entry[] = [];
  readonly reused: number[] = [];
  lookup(tokens: readonly number[]): KvPrefix | undefined {
    let best: { length: number; entry: Entry } | undefined;
    for (const entry of this.entries) {
      let length = 0;
      while (length < entry.tokens.length && length < tokens.length - 1 && entry.tokens[length] === tokens[length]) length++;
      if (length > (best?.length ?? 0)) best = { length, entry };
    }
    if (!best) return undefined;
    this.reused.push(best.length);
    const stored = best.entry.tokens.length;
    return { length: best.length, kv: extractRow(shape, { kv: best.entry.kv, columns: stored }, { index: 0, length: stored, from: 0, to: best.length }) };
  }
  store(tokens: readonly number[], readKv: (from?: number) => Float32Array[]): void {
    this.entries.push({ tokens: [...tokens], kv: readKv() });
  }
}

describe('KV store seam', () => {
  it('a prompt prefilled after a cached prefix gives the greedy tokens of a cold run', async () => {
    const first = promptOf('<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n');
    const cold = new BatchDecoder(loaded);
    const store = new PrefixStore();
    const warm = new BatchDecoder(loaded, { kvStore: store });

    const reply = await generate(cold, first, 10);
    expect(await generate(warm, first, 10)).toEqual(reply);
    expect(store.reused).toEqual([]); // nothing cached yet
    expect(store.entries.map((e) => e.tokens)).toEqual([[...first, ...reply.slice(0, -1)]]);

    // The same prompt again: all but its last token come from the store.
    expect(await generate(warm, first, 10)).toEqual(reply);
    expect(store.reused).toEqual([first.length - 1]);

    // A next turn that extends the first prompt and its reply: the whole stored sequence is reused.
    const next = [...first, ...reply, ...promptOf('<|im_end|>\n<|im_start|>user\nAnd three more?<|im_end|>\n<|im_start|>assistant\n')];
    const expected = await generate(cold, next, 12);
    expect(await generate(warm, next, 12)).toEqual(expected);
    expect(store.reused.at(-1)).toBe(first.length + reply.length - 1);
    expect(store.reused.at(-1)).toBeGreaterThan(0);
  });

  it('hands the store no KV for a cancelled sequence, and readKv works only during store()', async () => {
    let kept: ((from?: number) => KvArray[]) | undefined;
    const stored: number[][] = [];
    const decoder = new BatchDecoder(loaded, { kvStore: { lookup: () => undefined, store: (tokens, readKv) => { stored.push([...tokens]); kept = readKv; } } });
    let n = 0;
    await generate(decoder, promptOf('Hello there'), 8, { cancelled: () => ++n > 3 });
    expect(stored).toEqual([]);
    await generate(decoder, promptOf('Hello there'), 3);
    expect(stored.length).toBe(1);
    expect(() => kept!()).toThrow(/after store\(\) returned/);
  });
});

describe('chunked prefill', () => {
  it('a prompt prefilled in chunks gives the greedy tokens of one whole pass, with and without a cached prefix', async () => {
    const prompt = promptOf('<|im_start|>user\nTell me about rivers, the sea, mountains, forests and the long roads between them.<|im_end|>\n<|im_start|>assistant\n');
    expect(prompt.length).toBeGreaterThan(20);
    const whole = await generate(new BatchDecoder(loaded), prompt, 12);
    for (const chunk of [1, 3, 7, prompt.length - 1]) {
      expect(await generate(new BatchDecoder(loaded, { prefillChunkTokens: chunk }), prompt, 12)).toEqual(whole);
    }
    const store = new PrefixStore();
    const warm = new BatchDecoder(loaded, { kvStore: store, prefillChunkTokens: 5 });
    await generate(warm, prompt.slice(0, 9), 2);
    expect(await generate(warm, prompt, 12)).toEqual(whole);
    expect(store.reused).toEqual([9]);
  });

  it('interleaves: the batch decodes between a long prompt\'s chunks, and a short prompt behind it starts first; tokens as solo', async () => {
    const long = promptOf(`<|im_start|>user\n${'Rivers run to the sea past towns and fields. '.repeat(6)}<|im_end|>\n<|im_start|>assistant\n`);
    const short = promptOf('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    const running = promptOf('<|im_start|>user\nCount with me<|im_end|>\n<|im_start|>assistant\n');
    const chunk = 4;
    expect(long.length).toBeGreaterThan(12 * chunk);
    const solo = async (prompt: number[], n: number) => generate(new BatchDecoder(loaded, { prefillChunkTokens: chunk }), prompt, n);
    const expected = { a: await solo(running, 40), b: await solo(long, 3), c: await solo(short, 3) };

    const decoder = new BatchDecoder(loaded, { prefillChunkTokens: chunk });
    const events: string[] = [];
    const run = (label: string, prompt: number[], n: number) => generate(decoder, prompt, n, {
      onToken: (id) => (events.push(`${label}:${id}`), false),
      busy: (on) => void (on && label === 'b' && events.push('b-pass')),
    });
    const a = run('a', running, 40);
    // The long and the short prompt arrive while `a` decodes.
    await new Promise<void>((resolve) => {
      const wait = () => (events.some((e) => e.startsWith('a:')) ? resolve() : setTimeout(wait, 1));
      wait();
    });
    const b = run('b', long, 3);
    const c = run('c', short, 3);
    await Promise.all([a, b, c]);

    const tokensOf = (label: string) => events.filter((e) => e.startsWith(`${label}:`)).map((e) => Number(e.slice(2)));
    expect({ a: tokensOf('a'), b: tokensOf('b'), c: tokensOf('c') }).toEqual(expected);
    const firstB = events.findIndex((e) => e.startsWith('b:'));
    const during = events.slice(events.indexOf('b-pass'), firstB);
    // One decoding step of the batch after every prefill chunk of the long prompt but its last.
    const passes = during.filter((e) => e === 'b-pass').length;
    expect(passes).toBe(Math.ceil(long.length / chunk));
    expect(during.filter((e) => e.startsWith('a:')).length).toBeGreaterThanOrEqual(passes - 1);
    expect(events.findIndex((e) => e.startsWith('c:'))).toBeLessThan(firstB);
  });

  it('a sequence cancelled between chunks stops there', async () => {
    const prompt = promptOf('one two three four five six seven eight nine ten eleven twelve');
    let passes = 0;
    const tokens = await generate(new BatchDecoder(loaded, { prefillChunkTokens: 2 }), prompt, 5, { busy: (on) => void (on && passes++), cancelled: () => passes >= 2 });
    expect(tokens).toEqual([]);
    expect(passes).toBe(2);
  });
});

describe('logits mask seam', () => {
  it('a mask allowing one token per step forces those tokens', async () => {
    const forced = [17, 4242, 99_001, 3];
    const decoder = new BatchDecoder(loaded);
    let step = 0;
    const mask = () => {
      const bits = new Uint32Array(Math.ceil(vocab / 32));
      const id = forced[step++]!;
      bits[id >>> 5] = 1 << (id & 31);
      return bits;
    };
    expect(await generate(decoder, promptOf('Say anything.'), forced.length, { logitsMask: mask })).toEqual(forced);
  });

  it('a null mask ends the sequence there, without a token, in its prefill step or in a batch; the others go on', async () => {
    const decoder = new BatchDecoder(loaded);
    const a = promptOf('One two three.');
    const soloA = await generate(decoder, a, 10);
    expect(await generate(decoder, promptOf('Stop now.'), 10, { logitsMask: () => null })).toEqual([]);
    let steps = 0;
    const [tokensA, tokensB] = await Promise.all([generate(decoder, a, 10), generate(decoder, promptOf('Four five six seven.'), 10, { logitsMask: () => (++steps > 3 ? null : undefined) })]);
    expect(tokensA).toEqual(soloA);
    expect(tokensB).toHaveLength(3);
  });
});

describe('failures stay with their sequence', () => {
  it('a prefill that throws fails that sequence alone; the running one and a later one complete', async () => {
    const decoder = new BatchDecoder(loaded);
    const prompt = promptOf('Tell me about rivers.');
    const solo = await generate(decoder, prompt, 12);
    const later = promptOf('Why?');
    const laterSolo = await generate(decoder, later, 5);

    const runningTokens: number[] = [];
    let bad: Promise<unknown> | undefined;
    let after: Promise<number[]> | undefined;
    await generate(decoder, prompt, 12, {
      onToken: (id) => {
        // Joined the batch's run: queue a prompt onnxruntime rejects (a token id past the vocabulary), then a good one.
        bad ??= generate(decoder, [...later, OUT_OF_VOCABULARY], 5).then((tokens) => tokens, (error: unknown) => error);
        after ??= generate(decoder, later, 5);
        runningTokens.push(id);
        return false;
      },
    });
    expect(runningTokens).toEqual(solo);
    expect(await bad).toMatchObject({ message: expect.stringMatching(/out of data bounds/) });
    expect(await after!).toEqual(laterSolo);
  });

  it('an all-zero mask fails its sequence alone, in the middle of a batch', async () => {
    const decoder = new BatchDecoder(loaded);
    const a = promptOf('One two three.');
    const b = promptOf('Four five six seven.');
    const soloA = await generate(decoder, a, 10);
    let steps = 0;
    const [resultA, resultB] = await Promise.allSettled([
      generate(decoder, a, 10),
      generate(decoder, b, 10, { logitsMask: () => (++steps > 3 ? new Uint32Array(Math.ceil(vocab / 32)) : undefined) }),
    ]);
    expect(resultA).toEqual({ status: 'fulfilled', value: soloA });
    expect(resultB).toMatchObject({ status: 'rejected', reason: { code: 'internal', details: { reason: 'logits_mask_empty' } } });
    expect(steps).toBe(4);
  });
});

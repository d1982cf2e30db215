/**
 * Exact cache reads on a sliding-window model (issue 40), at the engine level on real llama.cpp: a
 * random-weight `cohere2` GGUF (scripts/builders/gguf/swa-gguf.ts: a 64-token window on its first
 * layer, a full second layer, the Qwen3 vocabulary and chat template) served as the server serves it
 * (scanned, loaded by src/engines/llama/load.ts, its full-size SWA cache). A 1,500-token prompt, far
 * longer than the window, then requests that extend it, that part from it inside the window and
 * before it: the count each reports (`lookup`, the figure sent as cache reads) is the tokens
 * llama.cpp did not evaluate again, measured apart from the slots' code by node-llama-cpp's token
 * meter on the sequence (every token decoded, prompt or fed-back output, across the lookup, where a
 * kept prefix is cut, and the run); and the greedy output, warm, is the output of the same prompt
 * decoded cold (on a second context of the model, with the prompt cache off).
 *
 * A session's state copied to another sequence, or written to disk, would keep the sliding-window
 * layer's window only (llama.cpp's state_write): the engine does neither on this model, and the
 * test shows why.
 *
 * For contrast, the same requests on a context without the full-size cache (llama.cpp's default
 * window-sized SWA cache, which drops positions behind the window): the engine reuses only what
 * nothing is cut of, still exactly; cut by hand, that cache is evaluated again behind its oldest
 * position (what reporting the kept prefix as read would over-report) and, less than a window
 * after it, decodes unlike cold without being evaluated again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LlamaContextSequence, Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSwaGguf, SWA_GGUF_MODEL, SWA_GGUF_WINDOW } from '../../scripts/builders/gguf/swa-gguf.js';
import { disposeLlamaModel, loadLlamaModel, type LlamaLoaded } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import { attachSlotDiskCache, saveSlotDiskCache } from '../../src/engines/llama/slot-disk.js';
import { copySequenceState } from '../../src/engines/llama/state-file.js';
import type { SequenceEngine, SequenceSpec } from '../../src/engines/sequence.js';
import { scanModels, type ModelInfo } from '../../src/models/registry.js';
import { testEngine } from '../helpers/engine.js';
import { MODELS_DIR, ROOT } from '../helpers/paths.js';

const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };
const OUTPUT = 8;
const LONG = 1500;

/** `length` token ids of ordinary words (ids far below the special tokens), a pattern per `seed`. */
const tokens = (length: number, seed: number) => Array.from({ length }, (_, i) => 1000 + ((i * (37 + 2 * seed) + seed * 1009) % 90_000));

let info: ModelInfo;
let loaded: LlamaLoaded;
/** The model on a context of its own with the prompt cache off: every prompt evaluated from its first token. */
let cold: LlamaLoaded;

/** Another context on the loaded model, sized as load.ts sizes the engine's, with or without the full-size SWA cache. */
const anotherContext = (swaFullCache: boolean, sequences = 1) =>
  loaded.model.createContext({ contextSize: loaded.contexts![0]!.contextSize, sequences, batchSize: loaded.engine.prefillChunkTokens, swaFullCache, threads: 1 });

beforeAll(async () => {
  const modelsDir = ensureSwaGguf({ bundledDir: MODELS_DIR, modelsDir: path.join(ROOT, 'test-artifacts', 'models-gguf-swa') });
  info = scanModels({ modelsDir: path.dirname(modelsDir), defaultPoolSize: 1 }).models.find((m) => m.id === SWA_GGUF_MODEL)!;
  // One sequence: each request runs on the one the previous left.
  loaded = await loadLlamaModel(info, testEngine({ generationBatchSize: 1 }));
  cold = { ...loaded, engine: testEngine({ generationBatchSize: 1, promptCacheBytes: 0 }), contexts: [await anotherContext(true)] };
}, 120_000);
afterAll(async () => {
  await cold?.contexts![0]!.dispose();
  if (loaded) await disposeLlamaModel(loaded);
});

interface Outcome {
  /** The count `lookup` reported: what the chat task sends as cache reads. */
  reported: number;
  /** Tokens node-llama-cpp decoded on the sequence for the request, its meter's count. */
  evaluated: number;
  output: number[];
}

const sequences = new WeakMap<SequenceEngine, LlamaContextSequence>();

/** The engine's one sequence (a claim of a 2-token prompt on an empty sequence, given back: nothing is evaluated or cut). */
async function sequenceOf(engine: SequenceEngine): Promise<LlamaContextSequence> {
  let sequence = sequences.get(engine);
  if (!sequence) {
    const prefix = await engine.lookup([1, 2], 1);
    if (!prefix) throw new Error('the llama.cpp engine claims a sequence in its lookup');
    sequence = (prefix as unknown as { slot: { sequence: LlamaContextSequence } }).slot.sequence;
    prefix.release?.();
    sequences.set(engine, sequence);
  }
  return sequence;
}

/** A greedy request as the chat task runs it (lookup, then run), metered on the sequence from before its lookup to its end. */
async function request(engine: SequenceEngine, promptIds: number[]): Promise<Outcome> {
  const sequence = await sequenceOf(engine);
  const meter = () => sequence.tokenMeter.usedInputTokens + sequence.tokenMeter.usedOutputTokens;
  const before = meter();
  const prefix = await engine.lookup(promptIds, OUTPUT);
  if (!prefix) throw new Error('the llama.cpp engine claims a sequence in its lookup');
  const output: number[] = [];
  const spec: SequenceSpec = { promptIds, maxTokens: OUTPUT, sampling: GREEDY, onToken: (id) => (output.push(id), false), cancelled: () => false };
  await engine.run(spec, prefix);
  return { reported: prefix.length, evaluated: meter() - before, output };
}

/**
 * The prompts, in the order they are sent: a long one; the conversation extended (its output, then
 * a new turn); that prompt parting 20 tokens before its end (inside the window); parting at 700
 * (far behind the window); one sharing nothing.
 */
async function conversation(engine: SequenceEngine) {
  const first = tokens(LONG, 1);
  const a = await request(engine, first);
  const extended = [...first, ...a.output, ...tokens(300, 2)];
  const b = await request(engine, extended);
  const inside = [...extended.slice(0, extended.length - 20), ...tokens(100, 3)];
  const c = await request(engine, inside);
  const before = [...inside.slice(0, 700), ...tokens(300, 4)];
  const d = await request(engine, before);
  const other = tokens(LONG, 5);
  const e = await request(engine, other);
  return { prompts: [first, extended, inside, before, other], outcomes: [a, b, c, d, e] };
}

/** OUTPUT greedy tokens after `tail`, decoded on the sequence as it is (no slots: nothing reused or cut). */
async function decodeDirectly(sequence: LlamaContextSequence, tail: number[]): Promise<number[]> {
  const decoded: number[] = [];
  for await (const token of sequence.evaluate(tail as Token[], { temperature: 0 })) if (decoded.push(token) >= OUTPUT) break;
  return decoded;
}

/** Every token a request decodes beyond its prompt's unread part: its output fed back, but the last. */
const FED_BACK = OUTPUT - 1;

describe('cache reads on a sliding-window GGUF (cohere2, a 64-token window)', () => {
  it('is served as a chat model with its template, and llama.cpp runs it with a sliding window and the full-size cache', async () => {
    expect(info.task).toBe('chat');
    expect(info.chatTemplate).toContain('<|im_start|>');
    expect(loaded.model.fileInsights.swaSize).toBe(SWA_GGUF_WINDOW);
    const sequence = await sequenceOf(llamaEngine(loaded));
    // The full-size cache cuts like any other: node-llama-cpp needs no checkpoints to reuse a prefix.
    expect(sequence.needsCheckpoints).toBe(false);
  });

  it('a long prompt, then one extending it, one parting inside the window and one before it: each reports exactly what llama.cpp did not evaluate again, and decodes as cold', { timeout: 120_000 }, async () => {
    const engine = llamaEngine(loaded);
    const { prompts, outcomes } = await conversation(engine);
    const [first, extended, inside] = prompts as [number[], number[], number[]];
    // The sequence held each previous prompt and its output fed back (the last output token is never evaluated).
    expect(outcomes.map((o) => o.reported)).toEqual([0, first.length + FED_BACK, extended.length - 20, 700, 0]);
    for (const [k, o] of outcomes.entries()) expect(o.evaluated, `request ${k}`).toBe(prompts[k]!.length - o.reported + FED_BACK);
    expect(inside.length).toBeGreaterThan(SWA_GGUF_WINDOW * 10);
    // Every position stayed in the cache (none dropped behind the window).
    const sequence = await sequenceOf(engine);
    expect(sequence.stateCellsStartIndex).toBe(0);
    const coldEngine = llamaEngine(cold);
    for (const [k, prompt] of prompts.entries()) {
      const reference = await request(coldEngine, prompt);
      expect(reference.reported).toBe(0);
      expect(reference.evaluated).toBe(prompt.length + FED_BACK);
      expect(outcomes[k]!.output, `request ${k}`).toEqual(reference.output);
    }
    // The sequence cut by hand anywhere and decoded directly also decodes as cold (the contrast below cuts the same way).
    const tail = tokens(10, 9);
    await sequence.eraseContextTokenRanges([{ start: 760, end: sequence.nextTokenIndex }]);
    expect(await decodeDirectly(sequence, tail)).toEqual((await request(coldEngine, [...prompts[4]!.slice(0, 760), ...tail])).output);
  });

  it('a prefix behind another sequence\'s session is neither copied nor written to disk (a saved state keeps the window only): the request reads nothing and says so', { timeout: 120_000 }, async () => {
    const context = await anotherContext(true, 2);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'swa-cache-'));
    try {
      const withDisk: LlamaLoaded = { ...loaded, engine: testEngine({ generationBatchSize: 2, promptCacheDir: dir }), contexts: [context] };
      attachSlotDiskCache(withDisk, () => {});
      const engine = llamaEngine(withDisk);
      // Both sequences, claimed at once and given back, for the meter.
      const claims = await Promise.all([engine.lookup([1, 2], 1), engine.lookup([3, 4], 1)]);
      const both = claims.map((c) => (c as unknown as { slot: { sequence: LlamaContextSequence } }).slot.sequence);
      for (const c of claims) c?.release?.();
      const meter = () => both.reduce((n, q) => n + q.tokenMeter.usedInputTokens + q.tokenMeter.usedOutputTokens, 0);
      const shared = tokens(LONG, 6);
      // A session of 3,500 tokens; the second prompt shares its first 1,500, fewer than the 2,000 it
      // would erase, so it takes the empty sequence, where the engine would copy the session's state
      // into it on a model whose states are full prefixes (src/engines/llama/slots.ts).
      const session = [...shared, ...tokens(2000, 7)];
      const prompts = [session, [...shared, ...tokens(100, 8)]];
      const outcomes: Outcome[] = [];
      for (const prompt of prompts) {
        const before = meter();
        const prefix = (await engine.lookup(prompt, OUTPUT))!;
        const output: number[] = [];
        await engine.run({ promptIds: prompt, maxTokens: OUTPUT, sampling: GREEDY, onToken: (id) => (output.push(id), false), cancelled: () => false }, prefix);
        outcomes.push({ reported: prefix.length, evaluated: meter() - before, output });
      }
      expect(outcomes.map((o) => o.reported)).toEqual([0, 0]);
      for (const [k, o] of outcomes.entries()) expect(o.evaluated, `request ${k}`).toBe(prompts[k]!.length - o.reported + FED_BACK);
      for (const [k, prompt] of prompts.entries()) expect(outcomes[k]!.output, `request ${k}`).toEqual((await request(llamaEngine(cold), prompt)).output);
      // Released (an unload): nothing written, so nothing is read back as a prefix it is not.
      await saveSlotDiskCache(withDisk);
      expect(fs.readdirSync(dir, { recursive: true })).toEqual([]);
      // Why: the session's state, copied, holds the sliding-window layer's last cells only, and a cut
      // at the shared prefix evaluates all of it again (what reporting it read would over-report).
      const [from, to] = both[0]!.nextTokenIndex === session.length + FED_BACK ? [both[0]!, both[1]!] : [both[1]!, both[0]!];
      await copySequenceState(from, to, dir);
      expect(to.stateCellsStartIndex).toBeGreaterThan(session.length - SWA_GGUF_WINDOW * 2);
      const before = meter();
      await to.eraseContextTokenRanges([{ start: LONG, end: to.nextTokenIndex }]);
      expect(meter() - before).toBe(LONG);
    } finally {
      await context.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without the full-size cache (contrast): a cut prefix is evaluated again, so the engine reuses only prefixes it need not cut, still exactly', { timeout: 120_000 }, async () => {
    const context = await anotherContext(false);
    try {
      const windowed: LlamaLoaded = { ...loaded, contexts: [context] };
      const engine = llamaEngine(windowed);
      const sequence = await sequenceOf(engine);
      expect(sequence.needsCheckpoints).toBe(true);
      const { prompts, outcomes } = await conversation(engine);
      const [first] = prompts as [number[]];
      // Only the extension keeps what it reads uncut; the partings read nothing.
      expect(outcomes.map((o) => o.reported)).toEqual([0, first.length + FED_BACK, 0, 0, 0]);
      for (const [k, o] of outcomes.entries()) expect(o.evaluated, `request ${k}`).toBe(prompts[k]!.length - o.reported + FED_BACK);
      // llama.cpp dropped the positions behind the window (its SWA cache holds the window and a prefill chunk)...
      const oldest = sequence.stateCellsStartIndex;
      expect(oldest).toBeGreaterThan(700);
      const meter = () => sequence.tokenMeter.usedInputTokens + sequence.tokenMeter.usedOutputTokens;
      // ...so a cut 20 tokens from the end is clean (the window it needs is kept)...
      let before = meter();
      await sequence.eraseContextTokenRanges([{ start: sequence.nextTokenIndex - 20, end: sequence.nextTokenIndex }]);
      expect(meter() - before).toBe(0);
      // ...one less than a window after the oldest position kept is not evaluated again either (node-llama-cpp
      // checks that position, not the window), but the window lost its first cells: it decodes unlike cold,
      // which is why the engine cuts nothing on this cache...
      const cut = oldest + 20;
      const tail = tokens(10, 9);
      before = meter();
      await sequence.eraseContextTokenRanges([{ start: cut, end: sequence.nextTokenIndex }]);
      expect(meter() - before).toBe(0);
      expect(await decodeDirectly(sequence, tail)).not.toEqual((await request(llamaEngine(cold), [...prompts[4]!.slice(0, cut), ...tail])).output);
      // ...and a cut behind it evaluates the whole kept prefix again: what a count of that prefix would over-report.
      before = meter();
      await sequence.eraseContextTokenRanges([{ start: 700, end: sequence.nextTokenIndex }]);
      expect(meter() - before).toBe(700);
    } finally {
      await context.dispose();
    }
  });
});

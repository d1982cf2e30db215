/**
 * A shared prefix computed once (issue 40; src/engines/prefix-waits.ts), on both engines at the
 * engine level, on the bundled model and its GGUF: requests that come together with one long prefix
 * are admitted (`lookup`) before any of them runs, as the chat task does; the first prefills the
 * prefix and every later one reports, and skips, exactly the shared prefix (ONNX: stored part way
 * through the first one's prefill; llama.cpp: its sequence's state copied into theirs), and each
 * decodes greedily what it decodes alone. A first request that is cancelled, mid-prefill or before
 * it runs, leaves its waiters to go on (the next one prefilling for the others), and a waiter whose
 * client leaves is let go at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { onnxEngine } from '../../src/engines/onnx/runner.js';
import { BatchDecoder } from '../../src/engines/onnx/decode/scheduler.js';
import { samplingPlan } from '../../src/engines/sampler.js';
import { disposeLlamaModel, loadLlamaModel, type LlamaLoaded } from '../../src/engines/llama/load.js';
import { llamaEngine } from '../../src/engines/llama/runner.js';
import type { SequenceEngine, SequencePrefix, SequenceSpec } from '../../src/engines/sequence.js';
import { CHAT_MODEL, GGUF_CHAT_MODEL, GGUF_MODELS_DIR, MODELS_DIR } from '../helpers/paths.js';
import { TEST_ENGINE, testEngine } from '../helpers/engine.js';

const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };
/** The shared prefix: four prefill chunks of the default 512 (an agent's system prompt is 2k-20k tokens). */
const SHARED = 2000;
const OUTPUT = 6;
/** How long a held request may take to be let go once its client has left (the poll is 50 ms; the stall bound, 60 s). */
const RELEASE_MS = 5_000;

/**
 * Prompt k: SHARED tokens that the prompts of its case (k / 10) start with, then a few of its own
 * (the first of them differs from every other prompt's). Each case has its own prefix, so nothing a
 * case leaves in the engine's cache or sequences is shared with the next.
 */
const prefixOf = (group: number) => Array.from({ length: SHARED }, (_, i) => 1000 + ((i * 37 + group * 101) % 5000));
const promptOf = (k: number) => [...prefixOf(Math.floor(k / 10)), 200 + k, 300 + k, 400, 401, 402];

interface Outcome {
  reported: number;
  tokens: number[];
}

/** A request as the chat task runs it: admitted (`lookup`: the figure reported), then run unless cancelled meanwhile. */
function admit(engine: SequenceEngine, promptIds: number[], cancelled: () => boolean = () => false) {
  return Promise.resolve(engine.lookup(promptIds, OUTPUT, { cancelled }));
}

async function run(engine: SequenceEngine, promptIds: number[], admitted: SequencePrefix | null, extra: Partial<SequenceSpec> = {}): Promise<Outcome> {
  const tokens: number[] = [];
  const spec: SequenceSpec = { promptIds, maxTokens: OUTPUT, sampling: GREEDY, onToken: (id) => (tokens.push(id), false), cancelled: () => false, ...extra };
  if (spec.cancelled()) admitted?.release?.();
  else await engine.run(spec, admitted);
  return { reported: admitted?.length ?? 0, tokens };
}

/**
 * Runs admitted requests: at once, or (`serial`) each after the one before has finished, so that no
 * two decode in the same pass. llama.cpp's batched decoding is not bit-exact across batch
 * compositions (a pass of several sequences takes other kernels than a pass of one), and on this
 * random-weight model requests decoded together part from their solo output where two logits nearly
 * tie: from the 8th token on here (test/model/llama-engine.test.ts), from the 5th in CI under the
 * full suite's load. The sharing is decided at admission, which is concurrent either way.
 */
async function runAll(engine: SequenceEngine, jobs: { prompt: number[]; admitted: Promise<SequencePrefix | null> }[], serial: boolean): Promise<Outcome[]> {
  if (!serial) return Promise.all(jobs.map(async (j) => run(engine, j.prompt, await j.admitted)));
  const outcomes: Outcome[] = [];
  for (const j of jobs) outcomes.push(await run(engine, j.prompt, await j.admitted));
  return outcomes;
}

/** `count` requests that come together: all admitted in order, then run. */
async function together(engine: SequenceEngine, count: number, first: number, serial: boolean): Promise<Outcome[]> {
  const prompts = Array.from({ length: count }, (_, k) => promptOf(first + k));
  return runAll(engine, prompts.map((prompt) => ({ prompt, admitted: admit(engine, prompt) })), serial);
}

/**
 * The cases both engines pass; `alone(k)`: prompt k's greedy tokens decoded with nothing shared;
 * `keptOfCancelled`: what the next request reads of a first one cancelled after one prefill chunk
 * (ONNX: nothing, it stored none; llama.cpp: that chunk, which its free sequence keeps, copied).
 */
function sharedPrefixCases(engineOf: () => SequenceEngine, alone: (k: number) => Promise<number[]>, keptOfCancelled: number, serial: boolean) {
  it('four requests together: the first prefills the prefix, each later one reads exactly the shared prefix, and all decode as alone', { timeout: 120_000 }, async () => {
    const results = await together(engineOf(), 4, 10, serial);
    expect(results.map((r) => r.reported)).toEqual([0, SHARED, SHARED, SHARED]);
    for (const [k, r] of results.entries()) expect(r.tokens).toEqual(await alone(10 + k));
  });

  it('a first request cancelled part way through its prefill leaves its waiters to go on: the next one prefills, the last reads it', { timeout: 120_000 }, async () => {
    const engine = engineOf();
    let prefilled = 0;
    const holder = admit(engine, promptOf(20));
    const waiters = [admit(engine, promptOf(21)), admit(engine, promptOf(22))];
    // Cancelled after its first forward pass (one prefill chunk of the shared prefix).
    const cancelled = run(engine, promptOf(20), await holder, { busy: (on) => void (on || prefilled++), cancelled: () => prefilled > 0 });
    const results = await runAll(engine, waiters.map((admitted, k) => ({ prompt: promptOf(21 + k), admitted })), serial);
    expect((await cancelled).tokens).toEqual([]);
    expect(results.map((r) => r.reported)).toEqual([keptOfCancelled, SHARED]);
    expect(results[0]!.tokens).toEqual(await alone(21));
    expect(results[1]!.tokens).toEqual(await alone(22));
  });

  it('a first request that never runs (its client left) lets its waiter go on, and a waiter whose client leaves is let go at once', { timeout: 120_000 }, async () => {
    const engine = engineOf();
    const holder = await admit(engine, promptOf(30));
    let gone = false;
    const started = performance.now();
    const leaving = admit(engine, promptOf(31), () => gone);
    const staying = admit(engine, promptOf(32));
    gone = true;
    expect((await leaving)?.length ?? 0).toBe(0);
    expect(performance.now() - started).toBeLessThan(RELEASE_MS);
    (await leaving)?.release?.();
    holder?.release?.();
    const result = await run(engine, promptOf(32), await staying);
    expect(result.reported).toBe(0);
    expect(result.tokens).toEqual(await alone(32));
  });
}

describe('a shared prefix computed once on the ONNX engine', () => {
  let loaded: LoadedModel;
  let cold: BatchDecoder;
  beforeAll(async () => {
    const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === CHAT_MODEL)!;
    loaded = await loadModel(info, testEngine({ ortAllowSpinning: false }));
    cold = new BatchDecoder(loaded, { prefillChunkTokens: loaded.engine.prefillChunkTokens });
  }, 120_000);

  const alone = async (k: number) => {
    const tokens: number[] = [];
    await cold.run({ promptIds: promptOf(k), maxTokens: OUTPUT, sampling: samplingPlan(GREEDY, promptOf(k)), onToken: (id) => (tokens.push(id), false), cancelled: () => false });
    return tokens;
  };
  sharedPrefixCases(() => onnxEngine(loaded), alone, 0, false);
});

describe('a shared prefix computed once on the llama.cpp engine', () => {
  let loaded: LlamaLoaded;
  beforeAll(async () => {
    const info = scanModels({ modelsDir: GGUF_MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === GGUF_CHAT_MODEL)!;
    loaded = await loadLlamaModel({ ...info, contextLength: 8192, maxOutputTokens: 8192 }, testEngine({ generationBatchSize: 8 }));
  }, 120_000);
  afterAll(async () => {
    if (loaded) await disposeLlamaModel(loaded);
  });

  /** Alone: on a sequence cleared first, so nothing is shared. */
  const alone = async (k: number) => {
    const engine = llamaEngine(loaded);
    const placed = await engine.lookup(promptOf(k), OUTPUT);
    const { sequence } = (placed as unknown as { slot: { sequence: { clearHistory(): Promise<void> } } }).slot;
    await sequence.clearHistory();
    return (await run(engine, promptOf(k), { ...placed, length: 0 })).tokens;
  };
  sharedPrefixCases(() => llamaEngine(loaded), alone, TEST_ENGINE.prefillChunkTokens, true);

  it('a request takes a copy of a free sequence holding its prefix behind a longer conversation, which that sequence keeps', { timeout: 120_000 }, async () => {
    const engine = llamaEngine(loaded);
    // A conversation longer after the shared prefix than the prefix itself: not worth erasing for it.
    const session = [...promptOf(40), ...Array.from({ length: SHARED + 100 }, (_, i) => 6000 + (i % 3000))];
    await run(engine, session, await admit(engine, session));
    const result = await run(engine, promptOf(41), await admit(engine, promptOf(41)));
    expect(result.reported).toBe(SHARED);
    expect(result.tokens).toEqual(await alone(41));
    // The session's sequence kept it all: its next turn reads all of it but its last token.
    expect((await run(engine, session, await admit(engine, session))).reported).toBe(session.length - 1);
  });
});

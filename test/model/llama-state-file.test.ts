/**
 * A llama.cpp sequence's state through the prompt cache's format (src/engines/llama/state-file.ts)
 * on the GGUF test model: saved, checked and loaded into a sequence of a fresh context, it continues
 * with the same greedy tokens as a cold prefill; a damaged file or another model's key is never
 * handed to llama.cpp (its loadStateFromFile may crash the process on one).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLlama, type LlamaContext, type LlamaContextSequence, type LlamaModel } from 'node-llama-cpp';
import { TEST_GGUF_FILE } from '../../scripts/builders/gguf/test-model.js';
import { PromptDiskStore } from '../../src/cache/disk-store.js';
import { scanModels, type ModelInfo } from '../../src/models/registry.js';
import { llamaCacheKey, loadSequenceState, saveSequenceState } from '../../src/engines/llama/state-file.js';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR } from '../helpers/paths.js';
import { TEST_ENGINE } from '../helpers/engine.js';

const FILE = path.join(GGUF_MODELS_DIR, GGUF_CHAT_MODEL, TEST_GGUF_FILE);
const CONTEXT = 1024;
const GENERATED = 12;
const TEXT = '<|im_start|>system\nYou are a coding agent. Tools: read_file(path), write_file(path, text), run(command).<|im_end|>\n'.repeat(6) + '<|im_start|>user\nList the files under src.<|im_end|>\n<|im_start|>assistant\n';

let model: LlamaModel;
let info: ModelInfo;
let dir: string;
let warnings: string[];
let prompt: number[];
const contexts: LlamaContext[] = [];

const newSequence = async (): Promise<LlamaContextSequence> => {
  // One thread, as the tests' engine settings ask (intraOpThreads: 1): llama.cpp's spinning threads on a shared machine otherwise run on top of each other.
  const context = await model.createContext({ contextSize: CONTEXT, sequences: 1, threads: TEST_ENGINE.intraOpThreads });
  contexts.push(context);
  return context.getSequence();
};
const store = (key = llamaCacheKey(info, TEST_ENGINE, CONTEXT)) => new PromptDiskStore({ dir, budgetBytes: 1 << 30, minTokens: 32, key, log: (level, msg) => void (level === 'warn' && warnings.push(msg)) });

async function greedy(sequence: LlamaContextSequence, tokens: number[]): Promise<number[]> {
  const out: number[] = [];
  for await (const token of sequence.evaluate(tokens as never, { temperature: 0 })) {
    out.push(token as number);
    if (out.length >= GENERATED) break;
  }
  return out;
}

beforeAll(async () => {
  const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
  model = await llama.loadModel({ modelPath: FILE });
  info = scanModels({ modelsDir: GGUF_MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === GGUF_CHAT_MODEL)!;
  prompt = model.tokenize(TEXT, true) as number[];
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-state-'));
  warnings = [];
});
afterAll(async () => {
  for (const context of contexts) await context.dispose();
  await model?.dispose();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('llama.cpp sequence state in the prompt cache format', () => {
  it('saves a prefix, loads it checked into a fresh context, and continues with the cold greedy tokens', async () => {
    expect(prompt.length).toBeGreaterThan(100);
    const cold = await greedy(await newSequence(), prompt);

    const writer = await newSequence();
    await writer.evaluateWithoutGeneratingNewTokens(prompt as never);
    let t = performance.now();
    expect(await saveSequenceState(writer, store())).toBe(true);
    const saveMs = performance.now() - t;
    const [file] = fs.readdirSync(path.join(dir, fs.readdirSync(dir)[0]!)).filter((f) => f.endsWith('.lspc'));
    expect(file).toBeDefined();

    const reader = await newSequence();
    t = performance.now();
    const reused = await loadSequenceState(reader, store(), prompt);
    const loadMs = performance.now() - t;
    // The whole prompt but its last token, whose logits pick the first output token.
    expect(reused).toBe(prompt.length - 1);
    expect([...reader.contextTokens]).toEqual(prompt.slice(0, reused));
    expect(await greedy(reader, prompt.slice(reused))).toEqual(cold);
    // What the loaded state carries: the same last token without it continues otherwise.
    expect(await greedy(await newSequence(), prompt.slice(reused))).not.toEqual(cold);
    expect(warnings).toEqual([]);
    const bytes = fs.statSync(path.join(store().folder, file!)).size;
    console.log(`llama state of ${prompt.length} tokens (${bytes} bytes): saved in ${saveMs.toFixed(1)} ms, checked and loaded in ${loadMs.toFixed(1)} ms`);
  });

  it('a damaged file or another model\'s key never reaches llama.cpp: nothing reused, the sequence still decodes cold', async () => {
    const other = store({ ...llamaCacheKey(info, TEST_ENGINE, CONTEXT), model: 'f'.repeat(32) });
    const sequence = await newSequence();
    expect(await loadSequenceState(sequence, other, prompt)).toBe(0);

    const folder = store().folder;
    for (const name of fs.readdirSync(folder).filter((f) => f.endsWith('.lspc'))) {
      const bytes = fs.readFileSync(path.join(folder, name));
      bytes[Math.floor(bytes.length / 2)]! ^= 0x55;
      fs.writeFileSync(path.join(folder, name), bytes);
    }
    expect(await loadSequenceState(sequence, store(), prompt)).toBe(0);
    expect(warnings.join('\n')).toMatch(/checksum mismatch/);
    expect(sequence.contextTokens).toHaveLength(0);
    expect(await greedy(sequence, prompt)).toEqual(await greedy(await newSequence(), prompt));
  });
});

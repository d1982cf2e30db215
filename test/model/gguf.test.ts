/**
 * The GGUF writer and converter of the long-context benchmark (scripts/builders/gguf/): the
 * quantizers' reconstruction error stays within a block's step, and llama.cpp (node-llama-cpp, the
 * devDependency) loading the converted file continues a prompt with the same greedy tokens as
 * onnxruntime on the ONNX graph it came from, at F32 and Q8_0.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import type { Token } from 'node-llama-cpp';
import { buildCausalLm, buildCausalLmExternal, type CausalLmShape } from '../../scripts/builders/onnx/causal-lm.js';
import { SeededRandom } from '../../scripts/builders/onnx/graph-builder.js';
import { fromHalf, quantizeQ4_0, quantizeQ8_0, toHalf } from '../../scripts/builders/gguf/gguf-writer.js';
import { onnxToGguf } from '../../scripts/builders/gguf/from-onnx.js';

const shape: CausalLmShape = {
  vocabSize: 320, hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 16,
  intermediateSize: 96, maxPositions: 256, ropeTheta: 10_000, rmsNormEps: 1e-5,
};
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('quantizers', () => {
  const values = new SeededRandom(7).normals(32 * 64, 1);
  it('fp16 round trip of the scales', () => {
    for (const v of [0, 1, -2.5, 0.0001234, 65504, 1e-7]) expect(Math.abs(fromHalf(toHalf(v)) - v)).toBeLessThanOrEqual(Math.abs(v) * 1e-3 + 6e-8);
  });
  it('Q8_0 and Q4_0 reconstruct each value within half a step of its block (Q4_0: a step at the clamped end)', () => {
    const q8 = quantizeQ8_0(values);
    const q4 = quantizeQ4_0(values);
    expect(q8.byteLength).toBe(64 * 34);
    expect(q4.byteLength).toBe(64 * 18);
    for (let b = 0; b < 64; b++) {
      const d8 = fromHalf(q8[b * 34]! | (q8[b * 34 + 1]! << 8));
      const d4 = fromHalf(q4[b * 18]! | (q4[b * 18 + 1]! << 8));
      for (let j = 0; j < 32; j++) {
        const x = values[b * 32 + j]!;
        expect(Math.abs(((q8[b * 34 + 2 + j]! << 24) >> 24) * d8 - x)).toBeLessThanOrEqual(Math.abs(d8) * 0.57) // half a step, plus 127 × the fp16 rounding of the scale;
        const nibble = j < 16 ? q4[b * 18 + 2 + j]! & 15 : q4[b * 18 + 2 + j - 16]! >> 4;
        // The value of largest magnitude maps to -8; its opposite would need +8 and is clamped to +7.
        expect(Math.abs((nibble - 8) * d4 - x)).toBeLessThanOrEqual(Math.abs(d4) * 1.01);
      }
    }
  });
});

describe('ONNX subject to GGUF', () => {
  const dir = path.join(tmp, 'subject');
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), buildCausalLm({ shape, seed: 11 }));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({
    vocab_size: shape.vocabSize, hidden_size: shape.hiddenSize, intermediate_size: shape.intermediateSize, num_hidden_layers: shape.numLayers,
    num_attention_heads: shape.numHeads, num_key_value_heads: shape.numKvHeads, head_dim: shape.headDim,
    max_position_embeddings: shape.maxPositions, rope_theta: shape.ropeTheta, rms_norm_eps: shape.rmsNormEps, eos_token_id: 0,
  }));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify({ model: { vocab: Object.fromEntries(Array.from({ length: shape.vocabSize }, (_, i) => [`w${i}`, i])) } }));
  const prompt = [5, 17, 250, 3, 99, 42, 7, 128, 64, 300];
  const STEPS = 10;

  async function onnxGreedy(): Promise<number[]> {
    const session = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'));
    const tokens = [...prompt];
    for (let s = 0; s < STEPS; s++) {
      const n = tokens.length;
      const i64 = (v: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), [1, v.length]);
      const feeds: Record<string, ort.Tensor> = { input_ids: i64(tokens), attention_mask: i64(Array(n).fill(1)), position_ids: i64(tokens.map((_, i) => i)) };
      for (let l = 0; l < shape.numLayers; l++) for (const k of ['key', 'value']) feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [1, shape.numKvHeads, 0, shape.headDim]);
      const logits = (await session.run(feeds)).logits!.data as Float32Array;
      const last = logits.subarray((n - 1) * shape.vocabSize);
      tokens.push(last.indexOf(Math.max(...last)));
    }
    return tokens.slice(prompt.length);
  }

  /**
   * F32: every token. Q8_0 (and llama.cpp quantizes activations to 8 bits as well): the first
   * tokens; later ones may drift apart on this tiny model (hidden size 64) as on any quantized one.
   */
  it.each([['F32', STEPS], ['Q8_0', 4]] as const)('llama.cpp on the %s file continues with the same greedy tokens (%i compared)', async (type, compared) => {
    const out = path.join(tmp, `model-${type}.gguf`);
    onnxToGguf({ modelDir: dir, out, type });
    const expected = await onnxGreedy();
    const { getLlama } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
    const model = await llama.loadModel({ modelPath: out });
    const context = await model.createContext({ contextSize: 64, threads: 1 });
    const got: number[] = [];
    for await (const token of context.getSequence().evaluate(prompt as Token[], { temperature: 0 })) {
      got.push(token);
      if (got.length === STEPS) break;
    }
    await context.dispose();
    await model.dispose();
    expect(got.slice(0, compared)).toEqual(expected.slice(0, compared));
  });

  it('reads weights kept in external data files (graphs over 2 GB have them) as it reads them inline: the same GGUF bytes', () => {
    // Same folder name: the GGUF's general.name is the folder's.
    const external = path.join(tmp, 'external', path.basename(dir));
    fs.mkdirSync(path.join(external, 'onnx'), { recursive: true });
    for (const file of ['config.json', 'tokenizer.json']) fs.copyFileSync(path.join(dir, file), path.join(external, file));
    // Chunks of at most 64 KiB: several data files, each tensor at its own offset.
    const { model, chunks } = buildCausalLmExternal({ shape, seed: 11 }, 'model.onnx_data', 64 * 1024);
    expect(chunks.length).toBeGreaterThan(2);
    fs.writeFileSync(path.join(external, 'onnx', 'model.onnx'), model);
    for (const chunk of chunks) fs.writeFileSync(path.join(external, 'onnx', chunk.name), chunk.data);
    const inline = path.join(tmp, 'inline-F32.gguf');
    const fromExternal = path.join(tmp, 'external-F32.gguf');
    onnxToGguf({ modelDir: dir, out: inline, type: 'F32' });
    onnxToGguf({ modelDir: external, out: fromExternal, type: 'F32' });
    expect(fs.readFileSync(fromExternal).equals(fs.readFileSync(inline))).toBe(true);
  });
});

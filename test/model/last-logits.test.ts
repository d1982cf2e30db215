/**
 * The last-position rewrite of a causal LM graph (src/engines/onnx/graph/last-logits.ts), run on
 * onnxruntime-node next to the graph it came from: the same last row of logits and the same KV cache,
 * for fp32 weights inline or in external data files, and for 8-bit dynamic quantization; graphs it
 * cannot prove safe are left alone with the reason; the file is written once and rebuilt when the
 * model changes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import { buildCausalLm, buildCausalLmExternal, type CausalLmShape } from '../../scripts/builders/onnx/causal-lm.js';
import { GraphBuilder } from '../../scripts/builders/onnx/graph-builder.js';
import { isDerivedFile } from '../../src/models/derived-files.js';
import { lastPositionLogits } from '../../src/engines/onnx/graph/last-logits.js';
import { prepareLastLogits } from '../../src/engines/onnx/graph/prepare-graph.js';
import type { ModelInfo } from '../../src/models/registry.js';

const shape: CausalLmShape = {
  vocabSize: 300, hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8,
  intermediateSize: 48, maxPositions: 64, ropeTheta: 10_000, rmsNormEps: 1e-6,
};
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'last-logits-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
function feeds(tokens: number[], past?: ort.InferenceSession.OnnxValueMapType, pastLength = 0): Record<string, ort.Tensor> {
  const n = tokens.length;
  const f: Record<string, ort.Tensor> = {
    input_ids: i64(tokens, [1, n]),
    attention_mask: i64(Array(pastLength + n).fill(1), [1, pastLength + n]),
    position_ids: i64(tokens.map((_, i) => pastLength + i), [1, n]),
  };
  for (let l = 0; l < shape.numLayers; l++) {
    for (const kind of ['key', 'value']) {
      f[`past_key_values.${l}.${kind}`] = (past?.[`present.${l}.${kind}`] as ort.Tensor) ?? new ort.Tensor('float32', new Float32Array(0), [1, shape.numKvHeads, 0, shape.headDim]);
    }
  }
  return f;
}
const lastRow = (logits: ort.Tensor) => (logits.data as Float32Array).slice(-shape.vocabSize);
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
const argmax = (a: Float32Array) => a.indexOf(Math.max(...a));

/** Writes `files` into a fresh folder, rewrites `graphFile` there, and opens both sessions. */
async function pair(name: string, graphFile: string, files: Record<string, Uint8Array>) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  for (const [file, data] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), data);
  const result = lastPositionLogits(fs.readFileSync(path.join(dir, graphFile)), graphFile);
  if ('skipped' in result) throw new Error(result.skipped);
  fs.writeFileSync(path.join(dir, 'model.last-logits.onnx'), result.graph);
  return {
    original: await ort.InferenceSession.create(path.join(dir, graphFile)),
    rewritten: await ort.InferenceSession.create(path.join(dir, 'model.last-logits.onnx')),
    sizes: { original: fs.statSync(path.join(dir, graphFile)).size, rewritten: result.graph.byteLength },
  };
}

const prompts = [[5, 17, 250, 3, 99, 42, 7, 128], [1], [200, 201, 202]];

describe('last-position logits', () => {
  it('fp32, weights inline: the same last row and KV cache; the rewritten graph points into the original file', async () => {
    const { original, rewritten, sizes } = await pair('fp32-inline', 'model.onnx', { 'model.onnx': buildCausalLm({ shape, seed: 3 }) });
    expect(sizes.rewritten).toBeLessThan(sizes.original / 10);
    for (const tokens of prompts) {
      const full = await original.run(feeds(tokens));
      const last = await rewritten.run(feeds(tokens));
      expect((last.logits as ort.Tensor).dims).toEqual([1, 1, shape.vocabSize]);
      expect((full.logits as ort.Tensor).dims).toEqual([1, tokens.length, shape.vocabSize]);
      expect(maxDiff(lastRow(last.logits as ort.Tensor), lastRow(full.logits as ort.Tensor))).toBeLessThan(1e-5);
      expect(maxDiff((last['present.1.value'] as ort.Tensor).data as Float32Array, (full['present.1.value'] as ort.Tensor).data as Float32Array)).toBeLessThan(1e-6);
      // A decoding step on the rewritten graph's own cache.
      const next = await rewritten.run(feeds([9], last, tokens.length));
      const reference = await original.run(feeds([...tokens, 9]));
      expect(maxDiff(lastRow(next.logits as ort.Tensor), lastRow(reference.logits as ort.Tensor))).toBeLessThan(1e-4);
    }
  });

  it('fp32, weights in external data chunks: the references are kept', async () => {
    const built = buildCausalLmExternal({ shape, seed: 4 }, 'model.onnx_data', 40_000);
    expect(built.chunks.length).toBeGreaterThan(1);
    const { original, rewritten } = await pair('fp32-external', 'model.onnx', {
      'model.onnx': built.model, ...Object.fromEntries(built.chunks.map((c) => [c.name, c.data])),
    });
    for (const tokens of prompts) {
      const full = await original.run(feeds(tokens));
      const last = await rewritten.run(feeds(tokens));
      expect(maxDiff(lastRow(last.logits as ort.Tensor), lastRow(full.logits as ort.Tensor))).toBeLessThan(1e-5);
    }
  });

  it('8-bit dynamic quantization: the activation is sliced before it is quantized (same argmax, close values)', async () => {
    const { original, rewritten } = await pair('q8', 'model_quantized.onnx', { 'model_quantized.onnx': buildCausalLm({ shape, seed: 5, quantize: 'q8' }) });
    for (const tokens of prompts) {
      const full = lastRow((await original.run(feeds(tokens))).logits as ort.Tensor);
      const last = lastRow((await rewritten.run(feeds(tokens))).logits as ort.Tensor);
      expect(argmax(last)).toBe(argmax(full));
      // The quantization scale now comes from one row instead of all of them: close, not identical.
      // Measured: under 2% of the range where MLAS has AVX-512 int8 kernels, 2.2-4.7% on an AVX2-only
      // CPU (its u8 x s8 products pair up in saturating int16 sums). A wrong row would differ by the range.
      const range = Math.max(...full) - Math.min(...full);
      expect(maxDiff(last, full)).toBeLessThan(0.1 * range);
    }
  });

  it('leaves graphs it cannot prove safe alone, with the reason', () => {
    const reshaped = new GraphBuilder();
    const x = reshaped.input('input_ids', 'float32', ['batch_size', 'sequence_length', 4]);
    const flat = reshaped.op1('Reshape', [x, reshaped.int64s([-1, 4])]);
    const product = reshaped.op1('MatMul', [flat, reshaped.weight('w', [4, 3], new Float32Array(12))]);
    reshaped.alias(reshaped.op1('Reshape', [product, reshaped.int64s([1, -1, 3])]), 'logits');
    reshaped.output('logits', 'float32', ['batch_size', 'sequence_length', 3]);
    expect(lastPositionLogits(reshaped.encode('test'), 'x.onnx')).toEqual({ skipped: expect.stringMatching(/^Reshape .* between the lm_head and logits$/) });

    const bilinear = new GraphBuilder();
    const h = bilinear.input('h', 'float32', ['batch_size', 'sequence_length', 4]);
    bilinear.alias(bilinear.op1('MatMul', [h, bilinear.op1('Transpose', [h], { perm: [0, 2, 1] })]), 'logits');
    bilinear.output('logits', 'float32', ['batch_size', 'sequence_length', 'sequence_length']);
    expect(lastPositionLogits(bilinear.encode('test'), 'x.onnx')).toEqual({ skipped: expect.stringMatching(/multiplies two activations/) });

    const flatLogits = new GraphBuilder();
    const v = flatLogits.input('v', 'float32', ['batch_size', 4]);
    flatLogits.alias(flatLogits.op1('MatMul', [v, flatLogits.weight('w', [4, 3], new Float32Array(12))]), 'logits');
    flatLogits.output('logits', 'float32', ['batch_size', 3]);
    expect(lastPositionLogits(flatLogits.encode('test'), 'x.onnx')).toEqual({ skipped: 'no rank-3 logits output' });
  });

  it('is written once beside the model, rebuilt when the model changes, and skipped when it cannot be written', () => {
    const dir = path.join(tmp, 'folder');
    fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), buildCausalLm({ shape, seed: 6 }));
    const info = { id: 'folder', dir, dtype: 'fp32', onnxFile: 'onnx/model.onnx', task: 'chat' } as ModelInfo;
    const derived = path.join(dir, 'onnx', 'model.last-logits.onnx');
    expect(prepareLastLogits(info)).toEqual({ modelFileName: 'model.last-logits' });
    const first = fs.statSync(derived).mtimeMs;
    expect(prepareLastLogits(info)).toEqual({ modelFileName: 'model.last-logits' });
    expect(fs.statSync(derived).mtimeMs).toBe(first);
    expect(fs.readdirSync(path.join(dir, 'onnx')).sort()).toEqual(['model.last-logits.onnx', 'model.onnx']);
    expect(isDerivedFile('onnx/model.last-logits.onnx')).toBe(true);
    expect(isDerivedFile('onnx/model.onnx')).toBe(false);

    // A new export in place (different size): rebuilt.
    const source = path.join(dir, 'onnx', 'model.onnx');
    fs.writeFileSync(source, buildCausalLm({ shape: { ...shape, intermediateSize: 40 }, seed: 6 }));
    prepareLastLogits(info);
    const second = fs.statSync(derived).mtimeMs;
    expect(second).toBeGreaterThan(first);

    // Other weights of the same size, copied with the old modification time (cp -p, tar): rebuilt too.
    const when = new Date('2026-01-01T00:00:00Z');
    fs.utimesSync(source, when, when);
    prepareLastLogits(info);
    const third = fs.statSync(derived).mtimeMs;
    const { size, mtimeMs } = fs.statSync(source);
    fs.writeFileSync(source, buildCausalLm({ shape: { ...shape, intermediateSize: 40 }, seed: 8 }));
    fs.utimesSync(source, when, when);
    expect(fs.statSync(source)).toMatchObject({ size, mtimeMs });
    prepareLastLogits(info);
    expect(fs.statSync(derived).mtimeMs).toBeGreaterThan(third);

    // Something in the way (here a non-empty folder where the file goes): the model keeps its graph.
    fs.rmSync(derived);
    fs.mkdirSync(path.join(derived, 'x'), { recursive: true });
    expect(prepareLastLogits(info)).toEqual({ skipped: expect.stringMatching(/^cannot write onnx\/model\.last-logits\.onnx: /) });
    expect(fs.readdirSync(path.join(dir, 'onnx')).sort()).toEqual(['model.last-logits.onnx', 'model.onnx']);
  });
});

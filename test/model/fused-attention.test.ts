/**
 * The fused-attention rewrite (src/engines/onnx/graph/fused-attention.ts): the bundled model loaded with it
 * by the real loading code decodes the same greedy tokens as its export (batched, left-padded,
 * chunked prefill); on graphs of the bench subjects' head layout (9 heads over 3 KV heads) the same
 * logits and KV cache as the export, fp32 and 8-bit; a graph it does not recognise is served as
 * exported, with the reason in the load notes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { buildCausalLm, type CausalLmShape } from '../../scripts/builders/onnx/causal-lm.js';
import { scanModels } from '../../src/models/registry.js';
import type { ModelInfo } from '../../src/models/registry.js';
import { fuseAttention } from '../../src/engines/onnx/graph/fused-attention.js';
import { prepareGraph } from '../../src/engines/onnx/graph/prepare-graph.js';
import { isDerivedFile } from '../../src/models/derived-files.js';
import { disposeModel, loadModel } from '../../src/engines/onnx/load.js';
import { BatchDecoder } from '../../src/engines/onnx/decode/scheduler.js';
import { cacheShape, kvMode } from '../../src/engines/onnx/decode/session-info.js';
import { CHAT_MODEL, MODELS_DIR } from '../helpers/paths.js';
import { testEngine } from '../helpers/engine.js';

const { onnx } = onnxProto;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fused-attention-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };

describe('the bundled model, loaded with and without the rewrite', () => {
  it('decodes the same greedy tokens (KV appended in place against the export\'s presents; decoding steps through GroupQueryAttention or the step graph reading the cache in place), three sequences batched, one prefilled in chunks', async () => {
    const info = scanModels({ modelsDir: MODELS_DIR, defaultPoolSize: 1 }).models.find((m) => m.id === CHAT_MODEL)!;
    const prompts = [Array.from({ length: 150 }, (_, i) => 200 + ((i * 131) % 5000)), [11, 12, 13], Array.from({ length: 40 }, (_, i) => 1000 + i)];
    const tokens: Record<string, number[][]> = {};
    const configurations = [['export', false, 0, 'auto'], ['fused', true, 0, 'auto'], ['step graph', true, 1, 'auto'], ['float16 cache', true, 1, 'float16']] as const;
    for (const [name, fusedAttention, inPlaceDecodeMinContext, kvCacheDtype] of configurations) {
      const loaded = await loadModel(info, testEngine({ fusedAttention, inPlaceDecodeMinContext, kvCacheDtype, prefillChunkTokens: 64, ortAllowSpinning: false }));
      expect(cacheShape(loaded)?.dtype).toBe(kvCacheDtype === 'float16' ? 'float16' : 'float32');
      if (kvCacheDtype === 'float16') expect(loaded.notes).toContain('the KV cache stored as float16 (converted to float32 where each layer reads it)');
      if (fusedAttention) expect(loaded.notes).toContain('attention of 2 layers as GroupQueryAttention');
      else expect(loaded.notes.join()).not.toMatch(/GroupQueryAttention/);
      if (fusedAttention) expect(loaded.notes).toContain('decoding steps at long context through a graph that reads the KV cache in place (2 layers)');
      // The rewritten graph outputs the new keys and values (and no presents): the decoder appends them in place.
      expect(kvMode(loaded)).toBe(fusedAttention ? 'append' : 'present');
      expect(loaded.decodeSteps !== undefined).toBe(inPlaceDecodeMinContext > 0);
      // Loaded before decoding, so every step takes it (a step asking first would start the load and go on without it).
      await loaded.decodeSteps?.load();
      let stepGraphSteps = 0;
      if (loaded.decodeSteps) {
        const forStep = loaded.decodeSteps.forStep.bind(loaded.decodeSteps);
        loaded.decodeSteps.forStep = (context) => {
          const session = forStep(context);
          if (session) stepGraphSteps++;
          return session;
        };
      }
      const decoder = new BatchDecoder(loaded, { prefillChunkTokens: 64 });
      tokens[name] = await Promise.all(prompts.map(async (promptIds) => {
        const out: number[] = [];
        await decoder.run({ promptIds, maxTokens: 16, sampling: GREEDY, onToken: (id) => (out.push(id), false), cancelled: () => false });
        return out;
      }));
      if (loaded.decodeSteps) expect(stepGraphSteps).toBeGreaterThanOrEqual(15);
      await disposeModel(loaded);
    }
    expect(tokens.fused).toEqual(tokens.export);
    expect(tokens['step graph']).toEqual(tokens.export);
    expect(tokens.export!.every((t) => t.length === 16)).toBe(true);
    // Keys and values rounded to float16 (the optimum-style graph's GroupQueryAttention reading it
    // through float32, prefill chunks and step graph alike): on random weights a greedy choice between
    // near-equal logits may flip, so agreement is asked for the first 4 tokens of each sequence.
    for (const [r, row] of tokens['float16 cache']!.entries()) {
      const firstDifference = row.findIndex((t, i) => t !== tokens.export![r]![i]);
      expect(firstDifference === -1 || firstDifference >= 4, `row ${r}: ${row} against ${tokens.export![r]}`).toBe(true);
    }
  });
});

/** SmolLM2-135M's head layout (9 heads over 3 KV heads, head size 64) on a small model. */
const shape: CausalLmShape = {
  vocabSize: 512, hiddenSize: 96, numLayers: 3, numHeads: 9, numKvHeads: 3, headDim: 64,
  intermediateSize: 128, maxPositions: 256, ropeTheta: 100_000, rmsNormEps: 1e-5,
};
const attention = { numHeads: shape.numHeads, kvHeads: shape.numKvHeads, headDim: shape.headDim };

const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
/** Feeds for rows of equal length; `padding[r]` leading columns of row r's attention mask are 0. */
function feeds(rows: number[][], pastLength: number, past?: Record<string, ort.Tensor>, padding: number[] = []): Record<string, ort.Tensor> {
  const B = rows.length;
  const S = rows[0]!.length;
  const T = pastLength + S;
  const f: Record<string, ort.Tensor> = {
    input_ids: i64(rows.flat(), [B, S]),
    attention_mask: i64(rows.flatMap((_, r) => Array.from({ length: T }, (_, t) => (t < (padding[r] ?? 0) ? 0 : 1))), [B, T]),
    position_ids: i64(rows.flatMap((row, r) => row.map((_, i) => Math.max(0, pastLength - (padding[r] ?? 0) + i))), [B, S]),
  };
  for (let l = 0; l < shape.numLayers; l++) {
    for (const kind of ['key', 'value']) f[`past_key_values.${l}.${kind}`] = past?.[`present.${l}.${kind}`] ?? new ort.Tensor('float32', new Float32Array(0), [B, shape.numKvHeads, 0, shape.headDim]);
  }
  return f;
}
const data = (t: ort.OnnxValue | undefined) => (t as ort.Tensor).data as Float32Array;
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);
const argmaxes = (logits: Float32Array) => Array.from({ length: logits.length / shape.vocabSize }, (_, r) => {
  const row = logits.subarray(r * shape.vocabSize, (r + 1) * shape.vocabSize);
  return row.indexOf(Math.max(...row));
});

async function sessions(bytes: Uint8Array) {
  const decoded = onnx.ModelProto.decode(bytes);
  const result = fuseAttention(decoded, attention);
  expect(result).toEqual({ layers: shape.numLayers });
  const nodes = decoded.graph!.node!;
  expect(nodes.filter((n) => n.opType === 'GroupQueryAttention')).toHaveLength(shape.numLayers);
  expect(nodes.map((n) => n.opType)).not.toContain('Softmax');
  // Only GroupQueryAttention reads the cache (no Concat copies it, no Expand repeats it).
  expect(new Set(nodes.filter((n) => n.input!.some((i) => i.startsWith('past_key_values.'))).map((n) => n.opType))).toEqual(new Set(['GroupQueryAttention']));
  // and it writes present.* itself (an Identity to a graph output would copy the cache on every run).
  expect(new Set(nodes.filter((n) => n.output!.some((o) => o.startsWith('present.'))).map((n) => n.opType))).toEqual(new Set(['GroupQueryAttention']));
  return { exported: await ort.InferenceSession.create(bytes), fused: await ort.InferenceSession.create(onnx.ModelProto.encode(decoded).finish()) };
}

describe('9 heads over 3 KV heads', () => {
  it('fp32: the same logits and KV cache for a prompt, a decoding step, and a left-padded batch', async () => {
    const { exported, fused } = await sessions(buildCausalLm({ shape, seed: 21 }));
    const prompt = [[5, 17, 250, 3, 99, 42, 7, 128, 64, 300, 301, 302]];
    const a = await exported.run(feeds(prompt, 0));
    const b = await fused.run(feeds(prompt, 0));
    expect(maxDiff(data(a.logits), data(b.logits))).toBeLessThan(1e-3);
    expect(argmaxes(data(b.logits))).toEqual(argmaxes(data(a.logits)));
    expect(maxDiff(data(a['present.2.value']), data(b['present.2.value']))).toBeLessThan(1e-5);
    expect((b['present.2.key'] as ort.Tensor).dims).toEqual([1, shape.numKvHeads, 12, shape.headDim]);
    // A step on each graph's own cache.
    const a2 = await exported.run(feeds([[9]], 12, a as Record<string, ort.Tensor>));
    const b2 = await fused.run(feeds([[9]], 12, b as Record<string, ort.Tensor>));
    expect(maxDiff(data(a2.logits), data(b2.logits))).toBeLessThan(1e-3);
    // Two rows, the second left-padded by 3 columns (as the batch decoder lays out rows of different lengths).
    const rows = [[5, 17, 250, 3, 99, 42], [0, 0, 0, 11, 12, 13]];
    const pa = await exported.run(feeds(rows, 0, undefined, [0, 3]));
    const pb = await fused.run(feeds(rows, 0, undefined, [0, 3]));
    const lastRows = (t: ort.OnnxValue | undefined) => Float32Array.from([0, 1].flatMap((r) => [...data(t).subarray((r * 6 + 5) * shape.vocabSize, (r * 6 + 6) * shape.vocabSize)]));
    expect(maxDiff(lastRows(pa.logits), lastRows(pb.logits))).toBeLessThan(1e-3);
    const sa = await exported.run(feeds([[7], [8]], 6, pa as Record<string, ort.Tensor>, [0, 3]));
    const sb = await fused.run(feeds([[7], [8]], 6, pb as Record<string, ort.Tensor>, [0, 3]));
    expect(maxDiff(data(sa.logits), data(sb.logits))).toBeLessThan(1e-3);
    expect(argmaxes(data(sb.logits))).toEqual(argmaxes(data(sa.logits)));
  });

  it('8-bit (dynamic quantization): logits within 2% of their range', async () => {
    // Activations are quantized at run time with a per-tensor scale, so last-bit float differences in
    // the attention output can move a value to the next 8-bit step: close, not equal.
    const { exported, fused } = await sessions(buildCausalLm({ shape, seed: 22, quantize: 'q8' }));
    const prompt = [[5, 17, 250, 3, 99, 42, 7, 128, 64, 300, 301, 302]];
    const a = data((await exported.run(feeds(prompt, 0))).logits);
    const b = data((await fused.run(feeds(prompt, 0))).logits);
    const range = Math.max(...a) - Math.min(...a);
    expect(maxDiff(a, b)).toBeLessThan(0.02 * range);
  });
});

describe('a graph it does not recognise', () => {
  /** The export with one layer's probabilities scaled by 1 between Softmax and the value product. */
  function altered(): Uint8Array {
    const decoded = onnx.ModelProto.decode(buildCausalLm({ shape, seed: 23 }));
    const graph = decoded.graph!;
    const softmax = graph.node!.filter((n) => n.opType === 'Softmax')[1]!;
    const probabilities = softmax.output![0]!;
    graph.initializer!.push(onnx.TensorProto.create({ name: 'one', dims: [], dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(Float32Array.of(1).buffer) }));
    const scaled = onnx.NodeProto.create({ name: 'scaled', opType: 'Mul', input: [probabilities, 'one'], output: ['scaled_probabilities'] });
    for (const node of graph.node!) if (node.opType === 'MatMul' && node.input![0] === probabilities) node.input![0] = 'scaled_probabilities';
    graph.node!.splice(graph.node!.indexOf(softmax) + 1, 0, scaled);
    return onnx.ModelProto.encode(decoded).finish();
  }

  it('is left whole, with the reason', () => {
    const decoded = onnx.ModelProto.decode(altered());
    const before = decoded.graph!.node!.map((n) => n.opType).join();
    expect(fuseAttention(decoded, attention)).toEqual({ skipped: 'layer 1: the probabilities do not multiply the values' });
    expect(decoded.graph!.node!.map((n) => n.opType).join()).toBe(before);
    expect(decoded.opsetImport!.map((o) => o.domain)).not.toContain('com.microsoft');
  });

  it('is served as exported (with last-position logits still applied), the reason in the notes', async () => {
    const dir = path.join(tmp, 'altered');
    fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), altered());
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ num_attention_heads: shape.numHeads, num_key_value_heads: shape.numKvHeads, head_dim: shape.headDim }));
    const info = { id: 'altered', dir, dtype: 'fp32', onnxFile: 'onnx/model.onnx', task: 'chat' } as ModelInfo;
    const prepared = prepareGraph(info, { lastLogits: true, fusedAttention: true });
    expect(prepared).toEqual({ modelFileName: 'model.fused-attention.last-logits', notes: ['attention as exported (layer 1: the probabilities do not multiply the values)', 'logits for the last position only'] });
    // Reused on the next load, notes included.
    expect(prepareGraph(info, { lastLogits: true, fusedAttention: true })).toEqual(prepared);
    const file = path.join(dir, 'onnx', 'model.fused-attention.last-logits.onnx');
    expect(isDerivedFile(file)).toBe(true);
    const ops = onnx.ModelProto.decode(fs.readFileSync(file)).graph!.node!.map((n) => n.opType);
    expect(ops).not.toContain('GroupQueryAttention');
    expect(ops.filter((op) => op === 'Softmax')).toHaveLength(shape.numLayers);
    await ort.InferenceSession.create(file); // and it loads
    // Neither rewrite asked for: the export's graph as it is, its weights referenced in place.
    expect(prepareGraph(info, { lastLogits: false, fusedAttention: false })).toEqual({ modelFileName: 'model.in-place', notes: [] });
    expect(isDerivedFile(path.join(dir, 'onnx', 'model.in-place.onnx'))).toBe(true); // never packed nor checksummed
    const inPlace = onnx.ModelProto.decode(fs.readFileSync(path.join(dir, 'onnx', 'model.in-place.onnx'))).graph!;
    expect(inPlace.node!.map((n) => n.opType)).toEqual(onnx.ModelProto.decode(altered()).graph!.node!.map((n) => n.opType));
    expect(inPlace.initializer!.filter((t) => t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL).length).toBeGreaterThan(0);
    await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.in-place.onnx'));
  });
});

/**
 * The causal-LM builder's graph, run directly on onnxruntime-node: decoding with the KV cache must
 * give the logits of a full forward pass without it, for grouped-query attention and for a
 * left-padded batch row. This is what makes the bundled model an honest stand-in for an export.
 */
import { describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import { buildCausalLm, type CausalLmShape } from '../../scripts/builders/onnx/causal-lm.js';

const shape: CausalLmShape = {
  vocabSize: 300, hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8,
  intermediateSize: 48, maxPositions: 64, ropeTheta: 10_000, rmsNormEps: 1e-6,
};
const TOLERANCE = 1e-4;

const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
const emptyPast = (batch: number) => {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < shape.numLayers; l++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [batch, shape.numKvHeads, 0, shape.headDim]);
    }
  }
  return feeds;
};
const presentAsPast = (out: ort.InferenceSession.OnnxValueMapType) => {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < shape.numLayers; l++) {
    for (const kind of ['key', 'value']) feeds[`past_key_values.${l}.${kind}`] = out[`present.${l}.${kind}`] as ort.Tensor;
  }
  return feeds;
};
const row = (logits: ort.Tensor, b: number, s: number) => {
  const [, S, V] = logits.dims as number[];
  return (logits.data as Float32Array).slice((b * S! + s) * V!, (b * S! + s + 1) * V!);
};
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

describe('causal LM graph', async () => {
  const session = await ort.InferenceSession.create(buildCausalLm({ shape, seed: 7 }));
  const tokens = [5, 17, 250, 3, 99, 42, 7, 128];

  it('has the input/output names of a Hugging Face export with KV cache', () => {
    expect(session.inputNames.slice(0, 3)).toEqual(['input_ids', 'attention_mask', 'position_ids']);
    expect(session.inputNames).toContain('past_key_values.1.value');
    expect(session.outputNames).toContain('logits');
    expect(session.outputNames).toContain('present.1.key');
  });

  it('gives the same logits token by token with the cache as in one pass without it', async () => {
    const n = tokens.length;
    const full = await session.run({
      input_ids: i64(tokens, [1, n]), attention_mask: i64(Array(n).fill(1), [1, n]),
      position_ids: i64(tokens.map((_, i) => i), [1, n]), ...emptyPast(1),
    });
    // Prefill three tokens, then one at a time.
    let out = await session.run({
      input_ids: i64(tokens.slice(0, 3), [1, 3]), attention_mask: i64([1, 1, 1], [1, 3]),
      position_ids: i64([0, 1, 2], [1, 3]), ...emptyPast(1),
    });
    expect(maxDiff(row(out.logits as ort.Tensor, 0, 2), row(full.logits as ort.Tensor, 0, 2))).toBeLessThan(TOLERANCE);
    for (let i = 3; i < n; i++) {
      out = await session.run({
        input_ids: i64([tokens[i]!], [1, 1]), attention_mask: i64(Array(i + 1).fill(1), [1, i + 1]),
        position_ids: i64([i], [1, 1]), ...presentAsPast(out),
      });
      expect((out['present.0.key'] as ort.Tensor).dims).toEqual([1, shape.numKvHeads, i + 1, shape.headDim]);
      expect(maxDiff(row(out.logits as ort.Tensor, 0, 0), row(full.logits as ort.Tensor, 0, i))).toBeLessThan(TOLERANCE);
    }
  });

  it('ignores left padding in a batch', async () => {
    const short = tokens.slice(0, 5);
    const alone = await session.run({
      input_ids: i64(short, [1, 5]), attention_mask: i64(Array(5).fill(1), [1, 5]),
      position_ids: i64([0, 1, 2, 3, 4], [1, 5]), ...emptyPast(1),
    });
    const pad = tokens.length - short.length;
    const batch = await session.run({
      input_ids: i64([...tokens, ...Array(pad).fill(0), ...short], [2, tokens.length]),
      attention_mask: i64([...Array(tokens.length).fill(1), ...Array(pad).fill(0), ...Array(5).fill(1)], [2, tokens.length]),
      position_ids: i64([...tokens.map((_, i) => i), ...Array(pad).fill(1), 0, 1, 2, 3, 4], [2, tokens.length]),
      ...emptyPast(2),
    });
    for (let s = 0; s < 5; s++) {
      expect(maxDiff(row(batch.logits as ort.Tensor, 1, pad + s), row(alone.logits as ort.Tensor, 0, s))).toBeLessThan(TOLERANCE);
    }
  });

  it('is deterministic: the same seed gives the same bytes', () => {
    const a = buildCausalLm({ shape, seed: 3 });
    const b = buildCausalLm({ shape, seed: 3 });
    expect(Buffer.compare(Buffer.from(a), Buffer.from(b))).toBe(0);
    expect(Buffer.compare(Buffer.from(a), Buffer.from(buildCausalLm({ shape, seed: 4 })))).not.toBe(0);
  });
});

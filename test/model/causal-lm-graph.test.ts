/**
 * The causal-LM builder's graph, run directly on onnxruntime-node: decoding with the KV cache must
 * give the logits of a full forward pass without it, for grouped-query attention and for a
 * left-padded batch row. This is what makes the bundled model an honest stand-in for an export.
 */
import { describe, expect, it } from 'vitest';
import ort from 'onnxruntime-node';
import { buildCausalLm, mropeRows, type CausalLmShape } from '../../scripts/builders/onnx/causal-lm.js';

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
/** A decoder export's names: `first` (input_ids or inputs_embeds), the mask, positions and KV cache in; logits and the cache out. */
function expectExportNames(session: ort.InferenceSession, first: string): void {
  expect(session.inputNames.slice(0, 3)).toEqual([first, 'attention_mask', 'position_ids']);
  expect(session.inputNames).toContain('past_key_values.1.value');
  expect(session.outputNames).toContain('logits');
  expect(session.outputNames).toContain('present.1.key');
}
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

describe('causal LM graph', async () => {
  const session = await ort.InferenceSession.create(buildCausalLm({ shape, seed: 7 }));
  const tokens = [5, 17, 250, 3, 99, 42, 7, 128];

  it('has the input/output names of a Hugging Face export with KV cache', () => expectExportNames(session, 'input_ids'));

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

/**
 * The decoder of a split vision-language export (the bundled tiny-qwen3-vl-random's): fed
 * inputs_embeds and three position rows (temporal, height, width), as transformers.js's Qwen-VL
 * classes feed it.
 */
describe('vision decoder graph (inputs_embeds, M-RoPE)', async () => {
  const vision = { mropeSection: [2, 1, 1] as [number, number, number], interleaved: true, vocabBlock: 60 };
  const session = await ort.InferenceSession.create(buildCausalLm({ shape, seed: 7, vision }));
  const H = shape.hiddenSize;
  const n = 6;
  const embeds = Float32Array.from({ length: n * H }, (_, i) => Math.sin(i * 0.37));
  const f32 = (from: number, to: number) => new ort.Tensor('float32', embeds.slice(from * H, to * H), [1, to - from, H]);
  // Text, then a 2x2 image grid at one temporal step (height and width rows differ), then text: as get_rope_index lays them out.
  const rows = [[0, 1, 1, 1, 1, 3], [0, 1, 1, 2, 2, 3], [0, 1, 2, 1, 2, 3]];
  const positions = (from: number, to: number) => i64(rows.flatMap((r) => r.slice(from, to)), [3, 1, to - from]);

  it('takes inputs_embeds instead of input_ids, with the rest of the text decoder\'s names', () => expectExportNames(session, 'inputs_embeds'));

  it('gives the same logits token by token with the cache as in one pass without it', async () => {
    const full = await session.run({ inputs_embeds: f32(0, n), attention_mask: i64(Array(n).fill(1), [1, n]), position_ids: positions(0, n), ...emptyPast(1) });
    expect((full.logits as ort.Tensor).dims).toEqual([1, n, shape.vocabSize]);
    let out = await session.run({ inputs_embeds: f32(0, 3), attention_mask: i64([1, 1, 1], [1, 3]), position_ids: positions(0, 3), ...emptyPast(1) });
    expect(maxDiff(row(out.logits as ort.Tensor, 0, 2), row(full.logits as ort.Tensor, 0, 2))).toBeLessThan(TOLERANCE);
    for (let i = 3; i < n; i++) {
      out = await session.run({ inputs_embeds: f32(i, i + 1), attention_mask: i64(Array(i + 1).fill(1), [1, i + 1]), position_ids: positions(i, i + 1), ...presentAsPast(out) });
      expect(maxDiff(row(out.logits as ort.Tensor, 0, 0), row(full.logits as ort.Tensor, 0, i))).toBeLessThan(TOLERANCE);
    }
  });

  it('reads every row: moving one token in width alone changes what follows it', async () => {
    const run = async (widthOfToken3: number) => {
      const moved = rows.map((r, k) => (k === 2 ? r.map((p, i) => (i === 3 ? widthOfToken3 : p)) : r));
      const out = await session.run({ inputs_embeds: f32(0, n), attention_mask: i64(Array(n).fill(1), [1, n]), position_ids: i64(moved.flat(), [3, 1, n]), ...emptyPast(1) });
      return out.logits as ort.Tensor;
    };
    const [a, b] = [await run(1), await run(2)];
    expect(maxDiff(row(a, 0, 2), row(b, 0, 2))).toBe(0); // before it: causal
    expect(maxDiff(row(a, 0, 4), row(b, 0, 4))).toBeGreaterThan(1e-3);
  });

  it("assigns frequencies to rows as transformers does: Qwen3-VL interleaved, Qwen2-VL in blocks", () => {
    const count = (rows: number[]) => [0, 1, 2].map((r) => rows.filter((x) => x === r).length);
    // Qwen3-VL (mrope_section [24, 20, 20], apply_interleaved_mrope): height at 1, 4, ..., 58, width at 2, 5, ..., 59, the rest temporal.
    const qwen3 = mropeRows({ mropeSection: [24, 20, 20], interleaved: true });
    expect(count(qwen3)).toEqual([24, 20, 20]);
    expect(qwen3.slice(0, 7)).toEqual([0, 1, 2, 0, 1, 2, 0]);
    expect(qwen3.slice(58)).toEqual([1, 2, 0, 0, 0, 0]);
    // Qwen2-VL / Qwen2.5-VL (mrope_section [16, 24, 24]): contiguous blocks.
    const qwen2 = mropeRows({ mropeSection: [16, 24, 24], interleaved: false });
    expect([qwen2[15], qwen2[16], qwen2[39], qwen2[40], qwen2[63]]).toEqual([0, 1, 1, 2, 2]);
  });
});

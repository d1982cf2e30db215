/**
 * Decoding steps that read the KV cache where it lies (issue 18). onnxruntime's CPU
 * GroupQueryAttention, unless its present output is the very buffer of its past input (which
 * onnxruntime-node cannot bind), first copies the whole past into a fresh present tensor on every
 * pass, layer by layer, and only then reads it: at long context that copy is most of a decoding step
 * (scripts/bench/profile-decode.ts: GroupQueryAttention 61% of a step's kernels at 2048 tokens of
 * context, 86% at 8160). The batch decoder keeps the cache itself and fetches only the new positions'
 * keys and values (`new_key_values.*`, src/engines/onnx/decode/kv-batch.ts append mode), so that copy, and
 * the present.* outputs it fills, serve nobody.
 *
 * This rewrite makes, from the graph ./fused-attention.ts or ./model-builder-attention.ts served
 * (present.* outputs already dropped), a second graph for decoding steps alone: one position per row.
 * Each layer's GroupQueryAttention becomes plain matrix products over the past as fed (capacity
 * columns wide, the first attention_mask-width - 1 of them in use) and the new key and value beside it:
 *
 *   scores = [K_past·q^T ; k_new·q^T] · scale + bias     (FusedMatMul transB: K is never transposed)
 *   out    = softmax(scores)[:, :T]·V_past + softmax(scores)[:, T:]·v_new
 *
 * with the query heads grouped by their KV head (one position, so a reshape), and nothing copied:
 * - The keys are the product's rows, [T, D] by the group's queries [D, group]: MLAS reads the rows
 *   where they lie and packs only the queries (a [group, D] by [D, T] product packs the keys first);
 *   the scores, [T + 1, group] per KV head, are then transposed (small: context x group).
 * - The values are multiplied one query head at a time, [1, T] by [T, D] (both views): MLAS streams a
 *   one-row product without packing its right side (sgemm.cpp's M == 1 path), where [group, T] by
 *   [T, D] packs the values first.
 * - Measured (scripts/bench/profile-decode.ts --extra-step, SmolLM2-135M shape q4, 8160 tokens of
 *   context, kernel ms per step): key products 29.1 as rows, 34.9-39.8 with the queries as rows,
 *   61.3 one query head at a time (MLAS's one-row kernel with a transposed right side is slow);
 *   value products 24.4-29.3 one head at a time, 40.0 grouped. A step's kernels: 87.6, against 92.9
 *   and 115.4 for the earlier layouts and 157.3 for GroupQueryAttention.
 * The bias (computed once per pass, shared by the layers) masks the left padding and the unused
 * capacity. The worker runs it in a session of its own (src/engines/onnx/decode/step-session.ts), for
 * steps at long context only.
 *
 * Why a second graph and session, measured (scripts/bench/profile-decode.ts, SmolLM2-135M shape,
 * model-builder q4, 2 threads, steps alternating in one process):
 * - In one graph for every pass, prefill in 512-token chunks took 2.1-2.2x as long as with
 *   GroupQueryAttention (a chunk's scores, [group x 512, context], go through memory where the
 *   kernel works per block).
 * - Choosing per pass inside one graph with `If` (per layer, or once around the whole model) costs
 *   onnxruntime's subgraph execution on every pass: a step at 32 tokens of context took 40-64 ms
 *   instead of 26-46 ms.
 * - The step graph alone, wall time of a step against GroupQueryAttention's (profiler off, which
 *   costs every node and so inflates the graph of more nodes): q4 22.6 against 24.2 ms at 32 tokens of
 *   context, 23.6 / 28.6 at 512, 26.5 / 35.2 at 1024; fp32 55.9 / 52.5 at 32 but 62.5 / 65.4 at
 *   512; q4f16 31.0 / 30.8 at 32, 31.4 / 35.1 at 512. Hence its session is used from a context
 *   length on (`inPlaceDecodeMinContext`, 512), and loaded only then: it prepacks its own copy of
 *   the weights.
 * - Served (bench/results/long-context-table.md, same subject, against llama.cpp Q4_0 on the same
 *   blocks): at 8168 tokens of context 16.5 tok/s against 8.0 with GroupQueryAttention and 11.8 for
 *   llama.cpp (layouts before the keys-as-rows one; with it, 1.55x llama.cpp at 8168 and 1.21x at 2048).
 *
 * A float16 cache (model-builder q4f16) is read through float32: onnxruntime's CPU MatMul has no
 * float16 kernel, so each layer's past is Cast as it is read (a transient tensor, freed after the
 * layer) and the products run in float32. That conversion is a copy of the cache per step after all,
 * but a cheaper one than GroupQueryAttention's: at 8160 tokens of context (SmolLM2-135M shape,
 * q4f16, earlier layout) a step takes 100 ms against 132 (Cast 28 ms of it); at 2048, 64 against 69;
 * the first step's logits are bit-identical, 16 steps on they differ by 6e-5 of the largest.
 *
 * Layers with a sliding window, softcap, smooth softmax, packed QKV, rotary inside the kernel or head
 * sinks leave the whole graph as it is, with the reason.
 */
import onnxProto from 'onnx-proto';
import { newKvOutput } from '../tensors.js';
import { GraphEdit, isFloatView, kvElemType, MS_DOMAIN, num, pastInputOf, pruneGraph } from './graph-edit.js';
import type { AttentionShape, FusedAttentionResult } from './fused-attention.js';

const { onnx } = onnxProto;
type ModelProto = InstanceType<typeof onnx.ModelProto>;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;

const MASKED = 1e9;

/** Why a GroupQueryAttention node cannot be read in place, or undefined when it can. */
function unsupported(node: NodeProto, shape: AttentionShape): string | undefined {
  const attr = (name: string, fallback: number) => {
    const a = node.attribute.find((x) => x.name === name);
    return a ? (a.type === onnx.AttributeProto.AttributeType.FLOAT ? a.f ?? fallback : num(a.i ?? fallback)) : fallback;
  };
  return !node.input[1] || !node.input[2] ? 'packed QKV'
    : !/^past_key_values\.\d+\.key$/.test(pastInputOf(node.input[3] ?? '')) ? 'a past that is not a graph input'
    : attr('do_rotary', 0) !== 0 ? 'rotary inside the kernel'
    : attr('local_window_size', -1) !== -1 ? 'a sliding window'
    : attr('softcap', 0) !== 0 ? 'softcap'
    : attr('smooth_softmax', 0) !== 0 ? 'smooth softmax'
    : node.input.slice(11).some(Boolean) ? 'head sinks'
    : attr('num_heads', 0) !== shape.numHeads || attr('kv_num_heads', 0) !== shape.kvHeads ? 'heads other than config.json\'s'
    : undefined;
}

const scaleOf = (node: NodeProto, headDim: number): number => node.attribute.find((a) => a.name === 'scale')?.f || 1 / Math.sqrt(headDim);

/**
 * Rewrites the decoded model in place into the graph of decoding steps; returns how many layers it
 * changed, or why it did not (the model is then untouched).
 */
export function decodeStepGraph(model: ModelProto, shape: AttentionShape): FusedAttentionResult {
  const graph = model.graph as Graph | null;
  if (!graph) return { skipped: 'no graph' };
  const { FLOAT, FLOAT16 } = onnx.TensorProto.DataType;
  const nodes = [...graph.node] as NodeProto[];
  const gqa = nodes.filter((n) => n.opType === 'GroupQueryAttention' && n.domain === MS_DOMAIN);
  if (gqa.length === 0) return { skipped: 'no GroupQueryAttention' };
  // The type the attention reads the cache in: the inputs' own, or float32 where a float16-stored cache
  // is converted before its attention (graph-edit.ts halfKvCache).
  const pastType = isFloatView(gqa[0]!.input[3] ?? '') ? FLOAT : kvElemType(graph);
  if (pastType !== FLOAT && pastType !== FLOAT16) return { skipped: 'the KV cache is neither float32 nor float16' };
  for (const node of gqa) {
    const why = unsupported(node, shape);
    if (why) return { skipped: `${node.name}: ${why}` };
  }
  const outputs = new Set(graph.output.map((o) => o.name ?? ''));
  if (gqa.some((n) => !outputs.has(newKvOutput(Number(/^past_key_values\.(\d+)\.key$/.exec(pastInputOf(n.input[3]!))![1]), 'key')))) return { skipped: 'no new_key_values outputs (the decoder could not append)' };

  const { numHeads, kvHeads, headDim } = shape;
  const group = numHeads / kvHeads;
  const edit = new GraphEdit('decode_step');
  const i64 = (v: number[]) => edit.i64(v);
  const dim = (tensor: string, index: number) => edit.op('Gather', [edit.op('Shape', [tensor]), i64([index])], { axis: 0 }); // [1]

  // The bias, shared by the layers: allowed [B, T + 1] is the mask's first L columns, the unused
  // capacity (0) and the fed column; 0 where allowed, -1e9 elsewhere, as [B, 1, 1, T + 1].
  const width = dim('attention_mask', 1);
  const L = edit.op('Sub', [width, i64([1])]); // past columns in use
  const T = dim('past_key_values.0.key', 2); // past columns fed (capacity)
  const mask = edit.op('Cast', ['attention_mask'], { to: FLOAT });
  const allowed = edit.op('Concat', [
    edit.op('Pad', [edit.op('Slice', [mask, i64([0]), L, i64([1])]), edit.op('Concat', [i64([0, 0, 0]), edit.op('Sub', [T, L])], { axis: 0 })]),
    edit.op('Slice', [mask, L, width, i64([1])]),
  ], { axis: 1 });
  const bias = edit.op('Unsqueeze', [edit.op('Mul', [edit.op('Sub', [allowed, edit.scalar(1, FLOAT)]), edit.scalar(MASKED, FLOAT)]), i64([1, 2])]);

  // A float16 cache is read through float32 (onnxruntime's CPU MatMul has no float16 kernel): each
  // layer's past is converted as it is read, a transient tensor freed after the layer.
  const float = (x: string) => (pastType === FLOAT ? x : edit.op('Cast', [x], { to: FLOAT }));
  for (const node of gqa) {
    const [q, k, v, pastKey, pastValue] = (node.input as string[]).slice(0, 5).map(float);
    const alpha = { float: scaleOf(node, headDim) };
    // [B, 1, heads * D] -> [B, kvHeads, group, D] (query head h reads KV head h / group); k, v [B, 1, kvHeads * D] -> [B, kvHeads, 1, D].
    const grouped = edit.op('Reshape', [q!, i64([0, kvHeads, group, headDim])]);
    const kNew = edit.op('Reshape', [k!, i64([0, kvHeads, 1, headDim])]);
    const vNew = edit.op('Reshape', [v!, i64([0, kvHeads, 1, 1, headDim])]);
    // The keys as the product's rows, [T, D] by the group's queries [D, group]: MLAS reads the rows
    // where they lie and packs only the queries; then [B, kvHeads, T + 1, group] -> [B, kvHeads, group, T + 1].
    const scores = edit.op('Transpose', [edit.op('Concat', [
      edit.op('FusedMatMul', [pastKey!, grouped], { transB: 1, alpha }, MS_DOMAIN),
      edit.op('FusedMatMul', [kNew, grouped], { transB: 1, alpha }, MS_DOMAIN),
    ], { axis: -2 })], { perm: [0, 1, 3, 2] }); // [B, kvHeads, group, T + 1]
    // One row per query head, [B, kvHeads, group, 1, T + 1], against the values as [B, kvHeads, 1, T, D]
    // (views): a one-row product, which MLAS streams without packing the values.
    const probs = edit.op('Unsqueeze', [edit.op('Softmax', [edit.op('Add', [scores, bias])], { axis: -1 }), i64([3])]);
    const attended = edit.op('Add', [
      edit.op('MatMul', [edit.op('Slice', [probs, i64([0]), T, i64([-1])]), edit.op('Unsqueeze', [pastValue!, i64([2])])]),
      edit.op('MatMul', [edit.op('Slice', [probs, T, i64([Number.MAX_SAFE_INTEGER]), i64([-1])]), vNew]),
    ]); // [B, kvHeads, group, 1, D]
    const out = pastType === FLOAT ? attended : edit.op('Cast', [attended], { to: FLOAT16 });
    edit.node('Reshape', { inputs: [out, i64([0, 1, numHeads * headDim])], outputs: [node.output[0]!] });
  }
  const replaced = new Set(gqa);
  // A float16-stored cache's conversions go last, so the ordering puts each right before the layer
  // that reads it (the served graph has them first: ./graph-edit.ts halfKvCache). Measured at 2048
  // tokens of context (SmolLM2-135M shape, q4; separate runs): 25.7 tok/s with every conversion
  // first, 30-33 with each before its layer, 39 with the float32 cache (converting the cache is a
  // copy of it per step).
  const views = new Set(nodes.filter((n) => n.opType === 'Cast' && isFloatView(n.output[0] ?? '')));
  pruneGraph(graph, [...nodes.filter((n) => !replaced.has(n) && !views.has(n)), ...edit.nodes, ...views], edit.initializers);
  return { layers: gqa.length };
}

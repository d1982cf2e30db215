/**
 * Decoding steps that read the KV cache where it lies (issue 18). onnxruntime's CPU
 * GroupQueryAttention, unless its present output is the very buffer of its past input (which
 * onnxruntime-node cannot bind), first copies the whole past into a fresh present tensor on every
 * pass, layer by layer, and only then reads it: at long context that copy is most of a decoding step
 * (scripts/bench/profile-decode.ts: GroupQueryAttention 61% of a step's kernels at 2048 tokens of
 * context, 86% at 8160). The batch decoder keeps the cache itself and fetches only the new positions'
 * keys and values (`new_key_values.*`, src/worker/decode/kv-batch.ts append mode), so that copy, and
 * the present.* outputs it fills, serve nobody.
 *
 * This rewrite runs after ./fused-attention.ts or ./model-builder-attention.ts. Each layer's
 * GroupQueryAttention goes into the else branch of an `If`; the then branch, taken when the pass
 * feeds one position per row (a decoding step), is plain matrix products over the past as fed
 * (capacity columns wide, the first attention_mask-width - 1 of them in use) and the new key and
 * value beside it:
 *
 *   scores = [q·K_past^T, q·k_new^T] · scale + bias      (FusedMatMul transB: K is never transposed)
 *   out    = softmax(scores)[:, :T]·V_past + softmax(scores)[:, T:]·v_new
 *
 * with the query heads grouped by their KV head ([B, kvHeads, group, headDim]: one position, so a
 * reshape), so each KV head is read once per step and nothing is copied. The bias (computed once per
 * pass, shared by the layers) masks the left padding and the unused capacity. Prefill passes (more
 * than one position) keep GroupQueryAttention, whose blocked kernel is 2.1-2.2x faster there than
 * these products (the scores of a 512-position chunk would go through memory). The present.* outputs
 * are dropped: the decoder of such a graph appends (src/worker/decode/session.ts).
 *
 * Applied to float32 caches only: onnxruntime's CPU MatMul has no float16 kernel, so a float16 cache
 * would be converted whole every step (the copy this exists to avoid). Layers with a sliding window,
 * softcap, smooth softmax, packed QKV, rotary inside the kernel or head sinks leave the whole graph as
 * it is, with the reason.
 */
import onnxProto from 'onnx-proto';
import { GraphEdit, MS_DOMAIN, newKvOutput, pruneGraph } from './graph-edit.js';
import type { AttentionShape, FusedAttentionResult } from './fused-attention.js';

const { onnx } = onnxProto;
type ModelProto = InstanceType<typeof onnx.ModelProto>;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;

const MASKED = 1e9;
/** An int or float attribute's value (protobufjs gives a Long for int64). */
const num = (v: unknown): number => (typeof v === 'number' ? v : (v as { toNumber(): number }).toNumber());

/** Why a GroupQueryAttention node cannot be read in place, or undefined when it can. */
function unsupported(node: NodeProto, shape: AttentionShape): string | undefined {
  const attr = (name: string, fallback: number) => {
    const a = node.attribute.find((x) => x.name === name);
    return a ? (a.type === onnx.AttributeProto.AttributeType.FLOAT ? a.f ?? fallback : num(a.i ?? fallback)) : fallback;
  };
  return !node.input[1] || !node.input[2] ? 'packed QKV'
    : !/^past_key_values\.\d+\.key$/.test(node.input[3] ?? '') ? 'a past that is not a graph input'
    : attr('do_rotary', 0) !== 0 ? 'rotary inside the kernel'
    : attr('local_window_size', -1) !== -1 ? 'a sliding window'
    : attr('softcap', 0) !== 0 ? 'softcap'
    : attr('smooth_softmax', 0) !== 0 ? 'smooth softmax'
    : node.input.slice(11).some(Boolean) ? 'head sinks'
    : attr('num_heads', 0) !== shape.numHeads || attr('kv_num_heads', 0) !== shape.kvHeads ? 'heads other than config.json\'s'
    : undefined;
}

const scaleOf = (node: NodeProto, headDim: number): number => node.attribute.find((a) => a.name === 'scale')?.f || 1 / Math.sqrt(headDim);

/** A branch of an If: its nodes and constants, and one float output. */
function branch(name: string, edit: GraphEdit, output: string): InstanceType<typeof onnx.GraphProto> {
  return onnx.GraphProto.create({
    name,
    node: edit.nodes,
    initializer: edit.initializers,
    output: [onnx.ValueInfoProto.create({ name: output, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT } } })],
  });
}

const graphAttribute = (name: string, g: InstanceType<typeof onnx.GraphProto>) => onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.GRAPH, g });

/**
 * Rewrites the decoded model in place; returns how many layers now decode in place, or why none do
 * (the model is then untouched).
 */
export function inPlaceDecode(model: ModelProto, shape: AttentionShape): FusedAttentionResult {
  const graph = model.graph as Graph | null;
  if (!graph) return { skipped: 'no graph' };
  const FLOAT = onnx.TensorProto.DataType.FLOAT;
  const pastType = graph.input.find((i) => i.name === 'past_key_values.0.key')?.type?.tensorType?.elemType;
  if (pastType !== FLOAT) return { skipped: 'the KV cache is not float32 (onnxruntime has no float16 MatMul on CPU)' };
  const nodes = [...graph.node] as NodeProto[];
  const gqa = nodes.filter((n) => n.opType === 'GroupQueryAttention' && n.domain === MS_DOMAIN);
  if (gqa.length === 0) return { skipped: 'no GroupQueryAttention' };
  for (const node of gqa) {
    const why = unsupported(node, shape);
    if (why) return { skipped: `${node.name}: ${why}` };
  }
  const outputs = new Set(graph.output.map((o) => o.name ?? ''));
  if (gqa.some((n) => !/^past_key_values\.(\d+)\.key$/.test(n.input[3]!) || !outputs.has(newKvOutput(Number(/\.(\d+)\.key$/.exec(n.input[3]!)![1]), 'key')))) {
    return { skipped: 'no new_key_values outputs (the decoder could not append)' };
  }

  const { numHeads, kvHeads, headDim } = shape;
  const group = numHeads / kvHeads;
  const edit = new GraphEdit('in_place_decode');
  const i64 = (v: number[]) => edit.i64(v);
  const dim = (tensor: string, index: number) => edit.op('Gather', [edit.op('Shape', [tensor]), i64([index])], { axis: 0 }); // [1]

  // Shared by every layer, computed once a pass: whether it is a decoding step, and that step's bias.
  const S = dim('input_ids', 1);
  const width = dim('attention_mask', 1);
  const L = edit.op('Sub', [width, S]); // past columns in use
  const T = dim('past_key_values.0.key', 2); // past columns fed (capacity)
  const step = edit.op('Equal', [S, i64([1])]); // [1] bool
  // allowed [B, T + S]: the mask's first L columns, the unused capacity (0), the fed columns' mask.
  const mask = edit.op('Cast', ['attention_mask'], { to: FLOAT });
  const allowed = edit.op('Concat', [
    edit.op('Pad', [edit.op('Slice', [mask, i64([0]), L, i64([1])]), edit.op('Concat', [i64([0, 0, 0]), edit.op('Sub', [T, L])], { axis: 0 })]),
    edit.op('Slice', [mask, L, width, i64([1])]),
  ], { axis: 1 });
  // 0 where allowed, -1e9 elsewhere, as [B, 1, 1, T + S] (one position: no causal part).
  const bias = edit.op('Unsqueeze', [edit.op('Mul', [edit.op('Sub', [allowed, edit.scalar(1, FLOAT)]), edit.scalar(MASKED, FLOAT)]), i64([1, 2])]);

  const renamed = new Map<string, string>();
  for (const node of gqa) {
    const [q, , , pastKey, pastValue] = node.input as string[];
    const layer = Number(/^past_key_values\.(\d+)\.key$/.exec(pastKey!)![1]);
    const output = edit.fresh(`attention_${layer}`);

    // Then: one position per row. [B, 1, heads * D] -> [B, kvHeads, group, D] (query head h reads KV head h / group).
    const then = new GraphEdit(`in_place_decode/step_${layer}`);
    const alpha = { float: scaleOf(node, headDim) };
    const grouped = then.op('Reshape', [q!, i64([0, kvHeads, group, headDim])]);
    const kNew = newKvOutput(layer, 'key'); // [B, kvHeads, 1, D]
    const vNew = newKvOutput(layer, 'value');
    const scores = then.op('Concat', [
      then.op('FusedMatMul', [grouped, pastKey!], { transB: 1, alpha }, MS_DOMAIN),
      then.op('FusedMatMul', [grouped, kNew], { transB: 1, alpha }, MS_DOMAIN),
    ], { axis: -1 }); // [B, kvHeads, group, T + 1]
    const probs = then.op('Softmax', [then.op('Add', [scores, bias])], { axis: -1 });
    const attended = then.op('Add', [
      then.op('MatMul', [then.op('Slice', [probs, i64([0]), T, i64([-1])]), pastValue!]),
      then.op('MatMul', [then.op('Slice', [probs, T, i64([Number.MAX_SAFE_INTEGER]), i64([-1])]), vNew]),
    ]); // [B, kvHeads, group, D]
    const thenOut = then.op('Reshape', [attended, i64([0, 1, numHeads * headDim])]);

    // Else: GroupQueryAttention as it was, its present outputs unread.
    const otherwise = new GraphEdit(`in_place_decode/prefill_${layer}`);
    const elseOut = otherwise.fresh('attention');
    otherwise.node('GroupQueryAttention', {
      inputs: node.input as string[], outputs: [elseOut, otherwise.fresh('present_key'), otherwise.fresh('present_value')], domain: MS_DOMAIN, name: node.name ?? otherwise.fresh('gqa'),
    }).attribute = node.attribute;

    const ifNode = edit.node('If', { inputs: [step], outputs: [output] });
    ifNode.attribute = [graphAttribute('then_branch', branch(`step_${layer}`, then, thenOut)), graphAttribute('else_branch', branch(`prefill_${layer}`, otherwise, elseOut))];
    renamed.set(node.output[0]!, output);
  }
  const dropped = new Set(gqa);
  for (const node of nodes) node.input = node.input.map((i: string) => renamed.get(i) ?? i);
  graph.output = graph.output.filter((o) => !/^present\.\d+\.(key|value)$/.test(o.name ?? ''));
  pruneGraph(graph, [...nodes.filter((n) => !dropped.has(n)), ...edit.nodes], edit.initializers);
  return { layers: gqa.length };
}

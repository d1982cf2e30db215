/**
 * Experimental (issue 18; measured by scripts/bench/profile-decode.ts, not served): attention that
 * reads the KV cache where it lies. onnxruntime's CPU GroupQueryAttention, unless its
 * present output is the very buffer of its past input (which onnxruntime-node cannot bind), first
 * copies the whole past into a fresh present tensor on every step, layer by layer, and only then
 * reads it: at long context that copy is most of a decoding step (scripts/bench/profile-decode.ts).
 * The batch decoder keeps the cache itself and fetches only the new positions' keys and values
 * (`new_key_values.*`, src/worker/decode/kv-batch.ts append mode), so the present copy serves
 * nobody.
 *
 * This rewrite runs after ./fused-attention.ts or ./model-builder-attention.ts and replaces each of
 * their GroupQueryAttention nodes by plain matrix products over the past as fed (capacity columns
 * wide, the first attention_mask-width - S of them in use) and the new keys and values beside it:
 *
 *   scores = [Q·K_past^T, Q·K_new^T] · scale + bias      (FusedMatMul transB: K is never transposed)
 *   out    = softmax(scores)[:, :T]·V_past + softmax(scores)[:, T:]·V_new
 *
 * with the query heads grouped by their KV head ([B, kvHeads, group * S, headDim]), so each KV head
 * is read once per step. The bias masks the left padding, the unused capacity and, among the fed
 * positions, the future. The present.* outputs are dropped.
 *
 * Applied to float32 caches only: onnxruntime's CPU MatMul has no float16 kernel, so a float16 cache
 * would be converted whole every step (the copy this exists to avoid). Layers with a sliding window,
 * softcap, smooth softmax, packed QKV or rotary inside the kernel are left as they are (then the whole
 * graph is, with the reason).
 *
 * Measured (bench/results/profile-decode-smollm2-135m-shape-mb-q4-{2048,8160}.md: SmolLM2-135M
 * shape, model-builder q4, 2 threads, both graphs in one process, steps alternating): decode kernels
 * 13% less than with GroupQueryAttention at 2048 tokens of context and 32% less at 8160 (wall 73 vs
 * 97 ms a step), logits within 1.2e-4 of the largest; but prefill in 512-token chunks takes 2.1-2.2x
 * as long (a chunk's scores, [group x 512, context], go through Concat, Add, Softmax and two Slices
 * in memory where the kernel works per block), and its ~16 extra nodes a layer cost at short
 * context. Not served until it runs for long-context decode steps only (an If on the step's length)
 * and keeps GroupQueryAttention for prefill.
 */
import onnxProto from 'onnx-proto';
import { GraphEdit, MS_DOMAIN, pruneGraph } from '../../../src/models/onnx/graph-edit.js';
import type { AttentionShape, FusedAttentionResult } from '../../../src/models/onnx/fused-attention.js';

const { onnx } = onnxProto;
type ModelProto = InstanceType<typeof onnx.ModelProto>;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;

const MASKED = -1e9;
/** An int attribute's value (protobufjs gives a Long for int64). */
const num = (v: unknown): number => (typeof v === 'number' ? v : (v as { toNumber(): number }).toNumber());

export function inPlaceAttention(model: ModelProto, shape: AttentionShape): FusedAttentionResult {
  const graph = model.graph as Graph | null;
  if (!graph) return { skipped: 'no graph' };
  const FLOAT = onnx.TensorProto.DataType.FLOAT;
  const pastType = graph.input.find((i) => i.name === 'past_key_values.0.key')?.type?.tensorType?.elemType;
  if (pastType !== FLOAT) return { skipped: 'the KV cache is not float32' };
  const nodes = [...graph.node] as NodeProto[];
  const gqa = nodes.filter((n) => n.opType === 'GroupQueryAttention' && n.domain === MS_DOMAIN);
  if (gqa.length === 0) return { skipped: 'no GroupQueryAttention' };
  const attr = (node: NodeProto, name: string, fallback: number) => {
    const a = node.attribute.find((x) => x.name === name);
    return a ? (a.type === onnx.AttributeProto.AttributeType.FLOAT ? a.f ?? fallback : num(a.i ?? fallback)) : fallback;
  };
  for (const node of gqa) {
    const why = !node.input[1] || !node.input[2] ? 'packed QKV'
      : !/^past_key_values\.\d+\.key$/.test(node.input[3] ?? '') ? 'a past that is not a graph input'
      : attr(node, 'do_rotary', 0) !== 0 ? 'rotary inside the kernel'
      : attr(node, 'local_window_size', -1) !== -1 ? 'a sliding window'
      : attr(node, 'softcap', 0) !== 0 ? 'softcap'
      : attr(node, 'smooth_softmax', 0) !== 0 ? 'smooth softmax'
      : node.input.slice(11).some(Boolean) ? 'head sinks'
      : attr(node, 'num_heads', 0) !== shape.numHeads || attr(node, 'kv_num_heads', 0) !== shape.kvHeads ? 'heads other than config.json\'s'
      : undefined;
    if (why) return { skipped: `${node.name}: ${why}` };
  }

  const { numHeads, kvHeads, headDim } = shape;
  const group = numHeads / kvHeads;
  const edit = new GraphEdit('in_place_attention');
  const i64 = (v: number[]) => edit.i64(v);
  const gather = (tensor: string, index: number) => edit.op('Gather', [edit.op('Shape', [tensor]), i64([index])], { axis: 0 }); // [1]

  // Shared by every layer: S (fed positions), L (past columns in use), T (past columns fed), the bias [B, 1, 1, S, T + S].
  const S = gather('input_ids', 1);
  const width = gather('attention_mask', 1);
  const L = edit.op('Sub', [width, S]);
  const T = gather('past_key_values.0.key', 2);
  const mask = edit.op('Cast', ['attention_mask'], { to: onnx.TensorProto.DataType.BOOL }); // [B, L + S]
  const biasOf = (allowed: string) => edit.op('Where', [allowed, edit.scalar(0, FLOAT), edit.scalar(MASKED, FLOAT)]);
  const batch = gather('attention_mask', 0);
  // Past columns: the mask's first L, then the unused capacity up to T, masked.
  const pastBias = edit.op('Pad', [biasOf(edit.op('Slice', [mask, i64([0]), L, i64([1])])), edit.op('Concat', [i64([0, 0, 0]), edit.op('Sub', [T, L])], { axis: 0 }), edit.scalar(MASKED, FLOAT)]); // [B, T]
  // Fed columns: the mask's last S, and no column after the row's own.
  const positions = edit.op('Range', [edit.i64([0], []), edit.op('Squeeze', [S, i64([0])]), edit.i64([1], [])]); // [S]
  const causal = edit.op('Not', [edit.op('Greater', [edit.op('Unsqueeze', [positions, i64([0])]), edit.op('Unsqueeze', [positions, i64([1])])])]); // [S, S]: column <= row
  const newBias = biasOf(edit.op('And', [causal, edit.op('Unsqueeze', [edit.op('Slice', [mask, L, width, i64([1])]), i64([1])])])); // [B, S, S]
  const bias = edit.op('Concat', [
    edit.op('Expand', [edit.op('Reshape', [pastBias, edit.op('Concat', [batch, i64([1, 1, 1]), T], { axis: 0 })]), edit.op('Concat', [batch, i64([1, 1]), S, T], { axis: 0 })]),
    edit.op('Reshape', [newBias, edit.op('Concat', [batch, i64([1, 1]), S, S], { axis: 0 })]),
  ], { axis: -1 }); // [B, 1, 1, S, T + S]
  const byRowShape = edit.op('Concat', [i64([0, kvHeads, group]), S, i64([-1])], { axis: 0 });
  const groupedShape = edit.op('Concat', [i64([0, kvHeads, -1]), edit.op('Add', [T, S])], { axis: 0 });

  /** [B, S, heads * D] -> [B, heads, S, D]. */
  const toBnsh = (tensor: string, heads: number) => edit.op('Transpose', [edit.op('Reshape', [tensor, i64([0, 0, heads, headDim])])], { perm: [0, 2, 1, 3] });
  // The new keys and values in [B, kvHeads, S, D], as the rewrites publish them (new_key_values.*), else transposed here.
  const published = new Map(nodes.filter((n) => n.opType === 'Identity' && /^new_key_values\./.test(n.output[0] ?? '')).map((n) => [n.output[0]!, n.input[0]!]));
  const renamed = new Map<string, string>();
  for (const node of gqa) {
    const [q, k, v, pastKey, pastValue] = node.input as string[];
    const layer = /^past_key_values\.(\d+)\.key$/.exec(pastKey!)![1];
    const scale = attr(node, 'scale', 0) || 1 / Math.sqrt(headDim);
    // Query heads grouped by KV head: [B, S, kvHeads, group, D] -> [B, kvHeads, group, S, D] -> [B, kvHeads, group * S, D].
    const grouped = edit.op('Reshape', [edit.op('Transpose', [edit.op('Reshape', [q!, i64([0, 0, kvHeads, group, headDim])])], { perm: [0, 2, 3, 1, 4] }), i64([0, kvHeads, -1, headDim])]);
    const kNew = published.get(`new_key_values.${layer}.key`) ?? toBnsh(k!, kvHeads);
    const vNew = published.get(`new_key_values.${layer}.value`) ?? toBnsh(v!, kvHeads);
    const scores = edit.op('Concat', [
      edit.op('FusedMatMul', [grouped, pastKey!], { transB: 1, alpha: { float: scale } }, MS_DOMAIN),
      edit.op('FusedMatMul', [grouped, kNew], { transB: 1, alpha: { float: scale } }, MS_DOMAIN),
    ], { axis: -1 }); // [B, kvHeads, group * S, T + S]
    const byRow = edit.op('Reshape', [scores, byRowShape]); // [B, kvHeads, group, S, T + S]
    const probs = edit.op('Reshape', [edit.op('Softmax', [edit.op('Add', [byRow, bias])], { axis: -1 }), groupedShape]);
    const attended = edit.op('Add', [
      edit.op('MatMul', [edit.op('Slice', [probs, i64([0]), T, i64([-1])]), pastValue!]),
      edit.op('MatMul', [edit.op('Slice', [probs, T, i64([Number.MAX_SAFE_INTEGER]), i64([-1])]), vNew]),
    ]); // [B, kvHeads, group * S, D]
    // Back to [B, S, heads * D]: [B, kvHeads, group, S, D] -> [B, S, kvHeads, group, D].
    const output = edit.op('Reshape', [edit.op('Transpose', [edit.op('Reshape', [attended, i64([0, kvHeads, group, -1, headDim])])], { perm: [0, 3, 1, 2, 4] }), i64([0, 0, numHeads * headDim])]);
    renamed.set(node.output[0]!, output);
  }
  const dropped = new Set(gqa);
  for (const node of nodes) node.input = node.input.map((i: string) => renamed.get(i) ?? i);
  graph.output = graph.output.filter((o) => !/^present\.\d+\.(key|value)$/.test(o.name ?? ''));
  pruneGraph(graph, [...nodes.filter((n) => !dropped.has(n)), ...edit.nodes], edit.initializers);
  return { layers: gqa.length };
}

/**
 * Makes an onnxruntime-genai model-builder export drivable by the batch decoder
 * (src/engines/onnx/decode/scheduler.ts), written beside the export like the other rewrites.
 *
 * Such an export (many onnx-community `model_q4.onnx` / `model_q4f16.onnx`) has no position_ids
 * input: each layer's `com.microsoft` GroupQueryAttention rotates query and key itself (do_rotary=1,
 * cos_cache / sin_cache) at positions it derives from seqlens_k = ReduceSum(attention_mask) - 1, and
 * reads each row's past at columns [0, seqlens_k): a batch must be right-padded, every row's
 * positions starting at column 0. The decoder's batch is left-padded instead (src/engines/onnx/decode/kv-batch.ts:
 * one common length, a row's real positions rightmost, its position ids its own), and in `append`
 * mode it fetches only logits and the fed positions' keys and values, never `present.*`.
 *
 * Why rewrite the graph rather than give the decoder a right-padded layout: a right-padded batch
 * would need per-row appends at different columns and, with the rotation inside the kernel, the
 * rotated new keys exist only inside `present.*` (fetching that copies the whole cache into
 * JavaScript every step, the cost the append mode exists to avoid). The rewrite costs a few nodes and
 * makes these exports the same contract as the optimum exports the fused-attention rewrite
 * (./fused-attention.ts) produces, so one decoder, one KV layout and one prefix cache serve both:
 *
 * - a `position_ids` input [B, S] int64 is added; query and key are rotated by `com.microsoft`
 *   RotaryEmbedding at those positions with the export's own cos/sin caches and interleaving (the
 *   kernel GroupQueryAttention runs inside for do_rotary), and GroupQueryAttention gets do_rotary 0;
 * - seqlens_k / total_sequence_length come from attention_mask's width and the padding becomes
 *   `attention_bias`, as in the fused-attention rewrite (./graph-edit.ts leftPaddedInputs);
 * - `new_key_values.N.key/value` outputs: the rotated keys and the values of the fed positions.
 *
 * Recognised: inputs input_ids, attention_mask, past_key_values.N.key/value and no position_ids;
 * each past pair read by exactly one GroupQueryAttention (inputs 3 and 4) with do_rotary=1, cos/sin
 * caches, and no position_ids / attention_bias / head_sink of its own; query, key and value separate
 * or packed in the query (then split). Anything else leaves the graph as exported, with the reason.
 */
import onnxProto from 'onnx-proto';
import { addNewKvOutput, GraphEdit, leftPaddedInputs, MS_DOMAIN, num, pruneGraph } from './graph-edit.js';
import type { AttentionShape } from './fused-attention.js';

const { onnx } = onnxProto;
type ModelProto = InstanceType<typeof onnx.ModelProto>;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;

export type ModelBuilderAttentionResult = { layers: number } | { skipped: string };

/** True when the graph looks like a model-builder export (GroupQueryAttention reading the past directly). */
export function isModelBuilderForm(model: ModelProto): boolean {
  return (model.graph?.node ?? []).some((n) => n.opType === 'GroupQueryAttention' && n.domain === MS_DOMAIN && /^past_key_values\.\d+\.key$/.test(n.input?.[3] ?? ''));
}

/**
 * Rewrites the decoded model in place; returns how many layers it changed, or why it did not (the
 * model is then untouched).
 */
export function openModelBuilderAttention(model: ModelProto, shape: AttentionShape): ModelBuilderAttentionResult {
  const graph = model.graph as Graph | null;
  if (!graph) return { skipped: 'no graph' };
  const inputs = new Map(graph.input.map((i) => [i.name ?? '', i]));
  if (inputs.has('position_ids')) return { skipped: 'the export already has position_ids' };
  if (!inputs.has('input_ids') || !inputs.has('attention_mask')) return { skipped: 'no attention_mask or input_ids input' };
  const pastKeys = [...inputs.keys()].filter((n) => /^past_key_values\.\d+\.key$/.test(n));
  if (pastKeys.length === 0) return { skipped: 'no past_key_values inputs' };
  const kvType = inputs.get(pastKeys[0]!)!.type?.tensorType?.elemType ?? onnx.TensorProto.DataType.FLOAT;
  if (kvType !== onnx.TensorProto.DataType.FLOAT && kvType !== onnx.TensorProto.DataType.FLOAT16) return { skipped: `past_key_values of ONNX type ${kvType}` };

  const nodes = [...graph.node] as NodeProto[];
  const consumers = new Map<string, NodeProto[]>();
  for (const node of nodes) for (const i of node.input) if (i) consumers.set(i, [...(consumers.get(i) ?? []), node]);
  const attr = (node: NodeProto, name: string) => node.attribute.find((a) => a.name === name);
  const initializerDims = new Map(graph.initializer.map((t) => [t.name ?? '', (t.dims ?? []).map(num)]));

  const layers: Array<{ index: number; node: NodeProto }> = [];
  for (const pastKey of pastKeys) {
    const index = Number(/\.(\d+)\.key$/.exec(pastKey)![1]);
    const pastValue = `past_key_values.${index}.value`;
    const readers = consumers.get(pastKey) ?? [];
    const node = readers[0];
    if (readers.length !== 1 || node?.opType !== 'GroupQueryAttention' || node.domain !== MS_DOMAIN || node.input[3] !== pastKey || node.input[4] !== pastValue || (consumers.get(pastValue) ?? []).length !== 1) {
      return { skipped: `${pastKey} is not read by one GroupQueryAttention alone` };
    }
    if (num(attr(node, 'do_rotary')?.i ?? 0) !== 1) return { skipped: `layer ${index}: GroupQueryAttention without do_rotary (rotary outside the attention)` };
    if (!node.input[7] || !node.input[8]) return { skipped: `layer ${index}: no cos/sin caches` };
    if (node.input.slice(9).some(Boolean)) return { skipped: `layer ${index}: GroupQueryAttention already has position_ids, attention_bias or head_sink inputs` };
    if (num(attr(node, 'num_heads')?.i ?? 0) !== shape.numHeads || num(attr(node, 'kv_num_heads')?.i ?? 0) !== shape.kvHeads) return { skipped: `layer ${index}: heads differ from config.json's` };
    layers.push({ index, node });
  }

  const edit = new GraphEdit('model_builder_attention');
  graph.input.push(onnx.ValueInfoProto.create({
    name: 'position_ids',
    type: { tensorType: { elemType: onnx.TensorProto.DataType.INT64, shape: { dim: [{ dimParam: 'batch_size' }, { dimParam: 'sequence_length' }] } } },
  }));
  const { seqlensK, total, bias } = leftPaddedInputs(edit, kvType);
  const { numHeads, kvHeads, headDim } = shape;
  for (const { index, node } of layers) {
    let [q, k, v] = node.input as string[];
    if (!k) {
      // Packed QKV in the query input: [B, S, (heads + 2 kvHeads) * headDim].
      const parts = [edit.fresh('q'), edit.fresh('k'), edit.fresh('v')];
      edit.node('Split', { inputs: [q!, edit.i64([numHeads * headDim, kvHeads * headDim, kvHeads * headDim])], outputs: parts, attrs: { axis: -1 } });
      [q, k, v] = parts;
    }
    const interleaved = num(attr(node, 'rotary_interleaved')?.i ?? 0);
    const cosDims = initializerDims.get(node.input[7]!);
    const rotaryDim = cosDims?.length === 2 ? cosDims[1]! * 2 : headDim;
    const rotate = (tensor: string, heads: number) => edit.op('RotaryEmbedding', [tensor, 'position_ids', node.input[7]!, node.input[8]!], {
      interleaved, num_heads: heads, ...(rotaryDim !== headDim ? { rotary_embedding_dim: rotaryDim } : {}),
    }, MS_DOMAIN);
    const qRotated = rotate(q!, numHeads);
    const kRotated = rotate(k!, kvHeads);
    node.input = [qRotated, kRotated, v!, node.input[3]!, node.input[4]!, seqlensK, total, '', '', '', bias];
    node.attribute = node.attribute.filter((a) => a.name !== 'do_rotary' && a.name !== 'rotary_interleaved');
    const toBnsh = (tensor: string) => edit.op('Transpose', [edit.op('Reshape', [tensor, edit.i64([0, 0, kvHeads, headDim])])], { perm: [0, 2, 1, 3] });
    addNewKvOutput(graph, edit, { layer: index, kind: 'key', tensor: toBnsh(kRotated), kvHeads, headDim, dataType: kvType });
    addNewKvOutput(graph, edit, { layer: index, kind: 'value', tensor: toBnsh(v!), kvHeads, headDim, dataType: kvType });
  }
  // The export's seqlens_k / total length subgraph is read by nobody now: pruned.
  pruneGraph(graph, [...nodes, ...edit.nodes], edit.initializers);
  return { layers: layers.length };
}

/**
 * Grouped-query attention as one onnxruntime kernel. An optimum-style causal-LM export spells
 * attention out op by op: per layer and per decoded token it concatenates the past and new keys and
 * values (copying the whole cache), repeats the KV heads for grouped-query attention (copying it
 * again, once per query group), transposes the keys (and again), then MatMul, scale, mask, Softmax,
 * MatMul. Those copies grow with the context, and at 2048 tokens they, not the weights, set the
 * speed of a decoding step (issue 18: 6-8x slower than at 32 tokens, where llama.cpp is 1.3-2x).
 *
 * This rewrite replaces each layer's pattern with `com.microsoft` `GroupQueryAttention` (onnxruntime's
 * CPU contrib kernel, the one onnxruntime-genai's model builder emits): it reads the past cache in
 * place, shares KV heads between query groups without copying them, and writes the present cache
 * (past + new) itself. The graph keeps its inputs and outputs, so the decoder drives it as before:
 *
 * - rotary embedding stays where the export put it (before the concatenation); GroupQueryAttention
 *   gets the rotated query and key (do_rotary 0), transposed back to [B, S, heads * headDim];
 * - the causal part of the mask is GroupQueryAttention's own; the padding part (left padding of a
 *   batch) becomes its `attention_bias`, 0 where attention_mask is 1 and -1e9 where it is 0, as the
 *   export's additive mask was; every row's total length is attention_mask's width;
 * - the scale is the constant the export multiplied (or divided) the scores by.
 *
 * It also outputs each layer's new keys and values alone (`newKvOutput`), so a decoder can keep the
 * cache in buffers with room to grow and append to them: GroupQueryAttention reads the first
 * attention_mask-width columns of a past tensor that may be wider.
 *
 * Recognised structurally, per layer, from the past inputs: `past_key_values.N.key` feeds one Concat
 * on axis 2 whose result reaches the scores' MatMul (input 1) through reshapes, expands and one
 * last-two-axes Transpose; the scores go through Mul/Div by a constant and an Add to a Softmax on the
 * last axis, then a MatMul with the values (the value Concat's result through reshapes and expands);
 * that result is transposed back to [B, S, heads, headDim] and reshaped to [B, S, heads * headDim].
 * Anything else (another op on a path, a layer that differs, a scale that is not a constant) leaves
 * the whole graph as exported, with the reason.
 */
import onnxProto from 'onnx-proto';
import { addNewKvOutput, GraphEdit, leftPaddedInputs, MS_DOMAIN, num, pruneGraph } from './graph-edit.js';

const { onnx } = onnxProto;
type ModelProto = InstanceType<typeof onnx.ModelProto>;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type TensorProto = InstanceType<typeof onnx.TensorProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;


export interface AttentionShape {
  numHeads: number;
  kvHeads: number;
  headDim: number;
}

export type FusedAttentionResult = { layers: number } | { skipped: string };

/** Ops a key or value path may take between the Concat and the attention MatMul (repeat-KV, layout). */
const KV_PATH = new Set(['Unsqueeze', 'Expand', 'Reshape', 'Identity', 'Transpose']);

class Skip extends Error {}
const skip = (reason: string): never => {
  throw new Skip(reason);
};

/**
 * Rewrites the decoded model in place; returns how many layers now use GroupQueryAttention, or why
 * none do (the model is then untouched).
 */
export function fuseAttention(model: ModelProto, shape: AttentionShape): FusedAttentionResult {
  const graph = model.graph as Graph | null; // decoded messages carry every repeated field, empty or not
  if (!graph) return { skipped: 'no graph' };
  const pastKeys = graph.input.map((i) => i.name ?? '').filter((n) => /^past_key_values\.\d+\.key$/.test(n));
  if (pastKeys.length === 0) return { skipped: 'no past_key_values inputs' };
  if (!graph.input.some((i) => i.name === 'attention_mask') || !graph.input.some((i) => i.name === 'input_ids')) return { skipped: 'no attention_mask or input_ids input' };
  if (shape.numHeads % shape.kvHeads !== 0) return { skipped: `${shape.numHeads} heads are not a multiple of ${shape.kvHeads} KV heads` };
  const nodes = [...graph.node] as NodeProto[];
  const consumers = new Map<string, NodeProto[]>();
  for (const node of nodes) for (const i of node.input) if (i) consumers.set(i, [...(consumers.get(i) ?? []), node]);
  const producer = new Map<string, NodeProto>();
  for (const node of nodes) for (const o of node.output) producer.set(o, node);
  const initializers = new Map<string, TensorProto>(graph.initializer.map((t) => [t.name ?? '', t as TensorProto]));
  const outputs = new Set(graph.output.map((o) => o.name ?? ''));

  const attr = (node: NodeProto, name: string) => node.attribute.find((a) => a.name === name);
  const constantOf = (name: string): number[] | undefined => {
    const tensor: TensorProto | undefined = initializers.get(name) ?? (() => {
      const p = producer.get(name);
      return p?.opType === 'Constant' ? ((attr(p, 'value')?.t ?? undefined) as TensorProto | undefined) : undefined;
    })() ?? undefined;
    if (!tensor) return undefined;
    return tensorValues(tensor);
  };
  const only = (tensor: string, what: string): NodeProto => {
    const users = (consumers.get(tensor) ?? []).filter((n) => n.opType !== 'Identity' || !n.output.every((o) => outputs.has(o)));
    if (users.length !== 1) skip(`${what} (${tensor}) has ${users.length} consumers besides graph outputs`);
    return users[0]!;
  };

  /** Follows a key or value from its Concat to the attention MatMul that reads it. */
  const walkKv = (start: string, what: string): { matmul: NodeProto; transposes: number } => {
    let tensor = start;
    let transposes = 0;
    for (let hops = 0; hops < 16; hops++) {
      const node = only(tensor, what);
      if (node.opType === 'MatMul') return { matmul: node, transposes };
      if (!KV_PATH.has(node.opType)) skip(`${node.opType} ${node.name} on the ${what} path`);
      if (node.opType === 'Transpose') {
        const perm = (attr(node, 'perm')?.ints ?? []).map(num);
        if (perm.join() !== '0,1,3,2') skip(`Transpose ${node.name} with perm [${perm}] on the ${what} path`);
        transposes++;
      }
      if (node.input[0] !== tensor) skip(`${node.opType} ${node.name} reads the ${what} as a shape`);
      tensor = node.output[0]!;
    }
    return skip(`no MatMul within 16 ops of the ${what}`);
  };

  interface LayerMatch {
    index: number;
    q: string;
    kNew: string;
    vNew: string;
    pastKey: string;
    pastValue: string;
    keys: string;
    values: string;
    scale: number;
    out: NodeProto; // the Reshape to [B, S, heads * headDim]
  }
  const layers: LayerMatch[] = [];
  try {
    for (const pastKey of pastKeys) {
      const index = Number(/\.(\d+)\.key$/.exec(pastKey)![1]);
      const pastValue = `past_key_values.${index}.value`;
      const concatOf = (past: string) => {
        // Shape readers (the export's mask takes the past length from the cache) are left as they are.
        const users = (consumers.get(past) ?? []).filter((n) => n.opType !== 'Shape');
        const concat = users[0];
        if (users.length !== 1 || concat?.opType !== 'Concat' || concat.input.length !== 2 || concat.input[0] !== past) skip(`${past} is not read by one Concat(past, new)`);
        const axis = num(attr(concat!, 'axis')?.i ?? 0);
        if (axis !== 2 && axis !== -2) skip(`Concat ${concat!.name} on axis ${axis}`);
        return concat!;
      };
      const kConcat = concatOf(pastKey);
      const vConcat = concatOf(pastValue);
      const keys = kConcat.output[0]!;
      const values = vConcat.output[0]!;
      const k = walkKv(keys, `layer ${index} keys`);
      if (k.transposes !== 1 || k.matmul.input[1] === keys) skip(`layer ${index}: keys reach the scores without one transpose`);
      const v = walkKv(values, `layer ${index} values`);
      if (v.transposes !== 0) skip(`layer ${index}: values are transposed`);
      // Scores: MatMul(q, K^T) -> Mul/Div by a constant -> Add(mask) -> Softmax(last axis) -> MatMul(probs, V).
      let scale = 1;
      let tensor = k.matmul.output[0]!;
      let softmax: NodeProto | undefined;
      for (let hops = 0; hops < 6 && !softmax; hops++) {
        const node = only(tensor, `layer ${index} scores`);
        if (node.opType === 'Softmax') {
          const axis = num(attr(node, 'axis')?.i ?? -1);
          if (axis !== -1 && axis !== 3) skip(`Softmax ${node.name} on axis ${axis}`);
          softmax = node;
          break;
        }
        const other = node.input[0] === tensor ? node.input[1]! : node.input[0]!;
        if (node.opType === 'Mul' || node.opType === 'Div') {
          const c = constantOf(other);
          if (c?.length !== 1 || (node.opType === 'Div' && node.input[1] !== other)) skip(`${node.opType} ${node.name} of the scores by a non-constant`);
          scale *= node.opType === 'Mul' ? c![0]! : 1 / c![0]!;
        } else if (node.opType !== 'Add') {
          skip(`${node.opType} ${node.name} between the scores and the Softmax`);
        }
        tensor = node.output[0]!;
      }
      if (!softmax) skip(`layer ${index}: no Softmax after the scores`);
      const pv = only(softmax!.output[0]!, `layer ${index} probabilities`);
      if (pv !== v.matmul || pv.input[0] !== softmax!.output[0]) skip(`layer ${index}: the probabilities do not multiply the values`);
      const back = only(pv.output[0]!, `layer ${index} attention output`);
      const perm = back.opType === 'Transpose' ? (attr(back, 'perm')?.ints ?? []).map(num) : [];
      if (perm.join() !== '0,2,1,3') skip(`layer ${index}: ${back.opType} ${back.name} after the attention instead of Transpose [0,2,1,3]`);
      const out = only(back.output[0]!, `layer ${index} transposed output`);
      const target = out.opType === 'Reshape' ? constantOf(out.input[1]!) : undefined;
      if (!target || target.length !== 3 || ![-1, shape.numHeads * shape.headDim].includes(target[2]!)) skip(`layer ${index}: ${out.opType} ${out.name} is not a reshape to [B, S, ${shape.numHeads * shape.headDim}]`);
      layers.push({ index, q: k.matmul.input[0]!, kNew: kConcat.input[1]!, vNew: vConcat.input[1]!, pastKey, pastValue, keys, values, scale, out });
    }
  } catch (error) {
    if (error instanceof Skip) return { skipped: error.message };
    throw error;
  }

  // Shared inputs of every layer's GroupQueryAttention.
  const edit = new GraphEdit('fused_attention');
  const { seqlensK, total, bias } = leftPaddedInputs(edit, onnx.TensorProto.DataType.FLOAT);
  const toBsh = (tensor: string, heads: number) => edit.op('Reshape', [edit.op('Transpose', [tensor], { perm: [0, 2, 1, 3] }), edit.i64([0, 0, heads * shape.headDim])]);

  const renamed = new Map<string, string>();
  /** Identity nodes that copied a Concat's result to a present.* output: GroupQueryAttention writes that output itself. */
  const replaced = new Set<NodeProto>();
  /** The graph output a KV Concat's result is published as (through one Identity), or undefined. */
  const publishedAs = (tensor: string): string | undefined => {
    if (outputs.has(tensor)) return undefined; // the Concat itself produces it: renamed below, with an Identity
    const identity = (consumers.get(tensor) ?? []).find((n) => n.opType === 'Identity' && n.output.length === 1 && outputs.has(n.output[0]!));
    if (!identity) return undefined;
    replaced.add(identity);
    return identity.output[0]!;
  };
  for (const layer of layers) {
    const name = `/fused_attention/layers.${layer.index}/GroupQueryAttention`;
    const output = `${name}/output_0`;
    // An Identity to a graph output copies its tensor on every run, fetched or not: GroupQueryAttention
    // writes present.* directly instead.
    const presentKey = publishedAs(layer.keys) ?? `${name}/present_key`;
    const presentValue = publishedAs(layer.values) ?? `${name}/present_value`;
    edit.node('GroupQueryAttention', {
      inputs: [toBsh(layer.q, shape.numHeads), toBsh(layer.kNew, shape.kvHeads), toBsh(layer.vNew, shape.kvHeads), layer.pastKey, layer.pastValue, seqlensK, total, '', '', '', bias],
      outputs: [output, presentKey, presentValue],
      attrs: { num_heads: shape.numHeads, kv_num_heads: shape.kvHeads, scale: { float: layer.scale } },
      domain: MS_DOMAIN,
      name,
    });
    renamed.set(layer.out.output[0]!, output);
    renamed.set(layer.keys, presentKey);
    renamed.set(layer.values, presentValue);
  }
  // Readers of the old results read GroupQueryAttention's; a graph output produced directly by a
  // Concat keeps its name through an Identity.
  for (const node of nodes) node.input = node.input.map((i: string) => renamed.get(i) ?? i);
  for (const [from, to] of renamed) if (outputs.has(from)) edit.node('Identity', { inputs: [to], outputs: [from], name: `${from}/identity` });
  for (const layer of layers) {
    for (const [kind, tensor] of [['key', layer.kNew], ['value', layer.vNew]] as const) {
      addNewKvOutput(graph, edit, { layer: layer.index, kind, tensor, kvHeads: shape.kvHeads, headDim: shape.headDim, dataType: onnx.TensorProto.DataType.FLOAT });
    }
  }
  pruneGraph(graph, [...nodes.filter((n) => !replaced.has(n) && !n.output.some((o: string) => renamed.has(o) && outputs.has(o))), ...edit.nodes], edit.initializers);
  if (!model.opsetImport.some((o) => o.domain === MS_DOMAIN)) model.opsetImport.push(onnx.OperatorSetIdProto.create({ domain: MS_DOMAIN, version: 1 }));
  return { layers: layers.length };
}

/** Values of a small constant tensor (float or int), or undefined for types it does not read. */
function tensorValues(t: TensorProto): number[] | undefined {
  const raw = t.rawData;
  const T = onnx.TensorProto.DataType;
  if (raw && raw.byteLength > 0) {
    const copy = Uint8Array.from(raw).buffer; // a copy: rawData may be a view into the whole file (a Buffer)
    if (t.dataType === T.FLOAT) return Array.from(new Float32Array(copy));
    if (t.dataType === T.INT64) return Array.from(new BigInt64Array(copy), Number);
    if (t.dataType === T.INT32) return Array.from(new Int32Array(copy));
    if (t.dataType === T.DOUBLE) return Array.from(new Float64Array(copy));
    return undefined;
  }
  if (t.floatData?.length) return [...t.floatData];
  if (t.int64Data?.length) return t.int64Data.map(num);
  if (t.int32Data?.length) return [...t.int32Data];
  if (t.doubleData?.length) return [...t.doubleData];
  return undefined;
}

/**
 * What the attention rewrites (./fused-attention.ts, ./model-builder-attention.ts) share: adding
 * nodes and constants to a decoded graph, the GroupQueryAttention inputs that let a left-padded
 * batch through it, the `new_key_values` outputs the decoder appends, and pruning what no output
 * reads any more.
 */
import onnxProto from 'onnx-proto';
import { newKvOutput } from '../tensors.js';

const { onnx } = onnxProto;
type NodeProto = InstanceType<typeof onnx.NodeProto>;
type TensorProto = InstanceType<typeof onnx.TensorProto>;
type Graph = InstanceType<typeof onnx.GraphProto>;

export const MS_DOMAIN = 'com.microsoft';

/** An integer attribute's value as a number (protobufjs decodes int64 as a Long). */
export const num = (v: unknown): number => (typeof v === 'number' ? v : (v as { toNumber(): number }).toNumber());

type Attr = number | number[] | { float: number };

/** Nodes and initializers to add to a graph, named under `/${prefix}/`. */
export class GraphEdit {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private counter = 0;

  constructor(private readonly prefix: string) {}

  fresh(name: string): string {
    return `/${this.prefix}/${name}_${this.counter++}`;
  }

  /** One node with one output (`domain`: a contrib op's); returns the output's name. */
  op(opType: string, inputs: string[], attrs: Record<string, Attr> = {}, domain = ''): string {
    const output = this.fresh(opType);
    this.node(opType, { inputs, outputs: [output], attrs, domain, name: output });
    return output;
  }

  /** One node writing the outputs named (default name: a fresh one). */
  node(opType: string, spec: { inputs: string[]; outputs: string[]; attrs?: Record<string, Attr>; domain?: string; name?: string }): NodeProto {
    const node = onnx.NodeProto.create({
      name: spec.name ?? this.fresh(opType), opType, domain: spec.domain ?? '', input: spec.inputs, output: spec.outputs,
      attribute: Object.entries(spec.attrs ?? {}).map(([k, v]) => attribute(k, v)),
    });
    this.nodes.push(node);
    return node;
  }

  i64(values: number[], dims = [values.length]): string {
    const name = this.fresh('const');
    this.initializers.push(onnx.TensorProto.create({ name, dims, dataType: onnx.TensorProto.DataType.INT64, rawData: new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer) }));
    return name;
  }

  /** A scalar of float type `dataType` (FLOAT or FLOAT16). */
  scalar(value: number, dataType: number): string {
    const name = this.fresh('const');
    const raw = dataType === onnx.TensorProto.DataType.FLOAT16 ? new Uint8Array(Uint16Array.of(halfOf(value)).buffer) : new Uint8Array(Float32Array.of(value).buffer);
    this.initializers.push(onnx.TensorProto.create({ name, dims: [], dataType, rawData: raw }));
    return name;
  }
}

function attribute(name: string, value: Attr) {
  const { AttributeType } = onnx.AttributeProto;
  if (Array.isArray(value)) return onnx.AttributeProto.create({ name, type: AttributeType.INTS, ints: value });
  if (typeof value === 'number') return onnx.AttributeProto.create({ name, type: AttributeType.INT, i: value });
  return onnx.AttributeProto.create({ name, type: AttributeType.FLOAT, f: value.float });
}

/** Half bits of the few constants a rewrite needs (0, the padding bias): exact for those, no subnormals. */
function halfOf(value: number): number {
  if (value === 0) return 0;
  if (value <= -65504) return 0xfbff; // the most negative finite half
  throw new Error(`no half constant for ${value}`);
}

/** What the export's additive mask puts on padding; the same here, so scores match (the most negative half for float16). */
const MASKED = -1e9;

/**
 * GroupQueryAttention's batch inputs for the decoder's left-padded layout (src/engines/onnx/decode/kv-batch.ts):
 * every row's total length is attention_mask's width (seqlens_k = width - 1 for each row, so the
 * kernel's causal mask lines the fed positions up with the last columns), and the padding part of the
 * mask becomes `attention_bias` [B, 1, S, T]: 0 where attention_mask is 1, very negative where it is 0.
 */
export function leftPaddedInputs(edit: GraphEdit, dataType: number): { seqlensK: string; total: string; bias: string } {
  const INT32 = onnx.TensorProto.DataType.INT32;
  const maskShape = edit.op('Shape', ['attention_mask']);
  const width = edit.op('Gather', [maskShape, edit.i64([1])], { axis: 0 }); // [1]
  const batch = edit.op('Gather', [maskShape, edit.i64([0])], { axis: 0 }); // [1]
  const total = edit.op('Cast', [edit.op('Squeeze', [width, edit.i64([0])])], { to: INT32 });
  const seqlensK = edit.op('Cast', [edit.op('Expand', [edit.op('Sub', [width, edit.i64([1], [])]), batch])], { to: INT32 });
  const queryLength = edit.op('Gather', [edit.op('Shape', ['input_ids']), edit.i64([1])], { axis: 0 });
  const masked = dataType === onnx.TensorProto.DataType.FLOAT16 ? -65504 : MASKED;
  const padding = edit.op('Where', [edit.op('Cast', [edit.op('Unsqueeze', ['attention_mask', edit.i64([1, 2])])], { to: onnx.TensorProto.DataType.BOOL }), edit.scalar(0, dataType), edit.scalar(masked, dataType)]); // [B,1,1,T]
  const bias = edit.op('Expand', [padding, edit.op('Concat', [edit.i64([1, 1]), queryLength, edit.i64([1])], { axis: 0 })]); // [B,1,S,T]
  return { seqlensK, total, bias };
}

/** Adds output `newKvOutput(layer, kind)` [B, kvHeads, S, headDim] of element type `dataType`, produced by an Identity of `tensor`. */
export function addNewKvOutput(graph: Graph, edit: GraphEdit, at: { layer: number; kind: 'key' | 'value'; tensor: string; kvHeads: number; headDim: number; dataType: number }): string {
  const name = newKvOutput(at.layer, at.kind);
  edit.node('Identity', { inputs: [at.tensor], outputs: [name], name: `${name}/identity` });
  graph.output.push(onnx.ValueInfoProto.create({
    name,
    type: { tensorType: { elemType: at.dataType, shape: { dim: [{ dimParam: 'batch_size' }, { dimValue: at.kvHeads }, { dimParam: 'sequence_length' }, { dimValue: at.headDim }] } } },
  }));
  return name;
}

/** Name of the float32 view of a past_key_values input stored as float16 (`halfKvCache`). */
const FLOAT_VIEW = '/float';

/** True for the float32 view of a float16-stored past input (`halfKvCache`). */
export const isFloatView = (name: string): boolean => name.endsWith(FLOAT_VIEW);

/** The past_key_values input a node input reads: the name itself, or the input under its float32 view. */
export const pastInputOf = (name: string): string => (isFloatView(name) ? name.slice(0, -FLOAT_VIEW.length) : name);

/** The ONNX element type of the graph's KV cache inputs (past_key_values.0.key's), if it has them. */
export const kvElemType = (graph: Graph): number | undefined => graph.input.find((i) => i.name === 'past_key_values.0.key')?.type?.tensorType?.elemType ?? undefined;

/**
 * Stores a float32 KV cache as float16 (KV_CACHE_DTYPE=float16): each past_key_values input becomes
 * float16 and is converted to float32 for the nodes that read it, and each new_key_values output (the
 * Identity `addNewKvOutput` wrote) is converted to float16. Everything between runs in float32 as
 * before. For graphs whose attention reads the past inputs directly (after the fused-attention or
 * model-builder rewrite). False, and the graph untouched, when its cache is not float32.
 *
 * The conversions go first in the node list. Measured on the SmolLM2-135M-shape model-builder q4 graph
 * at 9472 cache columns, one decoding step through GroupQueryAttention: 30 MiB above the cache at the
 * pass's peak, against 416 MiB with each conversion placed right before its layer's attention, and
 * 415 MiB for the float32 cache read directly (onnxruntime then holds every layer's present copy until
 * the pass returns, ./prepare-graph.ts).
 */
export function halfKvCache(graph: Graph): boolean {
  const { FLOAT, FLOAT16 } = onnx.TensorProto.DataType;
  if (kvElemType(graph) !== FLOAT) return false;
  const nodes = [...graph.node] as NodeProto[];
  const casts: NodeProto[] = [];
  /** Each past input's float32 view, read by the nodes that read the input before. */
  const views = new Map<string, string>();
  for (const input of graph.input) {
    const name = input.name ?? '';
    if (!/^past_key_values\.\d+\.(key|value)$/.test(name)) continue;
    input.type!.tensorType!.elemType = FLOAT16;
    const view = `${name}${FLOAT_VIEW}`;
    views.set(name, view);
    casts.push(onnx.NodeProto.create({ name: view, opType: 'Cast', input: [name], output: [view], attribute: [attribute('to', FLOAT)] }));
  }
  for (const node of nodes) node.input = node.input.map((i) => views.get(i) ?? i);
  const producer = producers(nodes);
  for (const output of graph.output) {
    if (!/^new_key_values\./.test(output.name ?? '')) continue;
    output.type!.tensorType!.elemType = FLOAT16;
    const node = producer.get(output.name!)!;
    node.opType = 'Cast';
    node.attribute = [attribute('to', FLOAT16)];
  }
  graph.node = [...casts, ...nodes];
  return true;
}

/**
 * Replaces the graph's nodes by the live ones of `nodes` (those the outputs depend on, in
 * topological order) and drops the initializers and value infos nothing reads any more (onnxruntime
 * warns about each unused initializer); appends `extra` initializers.
 */
export function pruneGraph(graph: Graph, nodes: NodeProto[], extra: TensorProto[]): void {
  const outputs = new Set(graph.output.map((o) => o.name ?? ''));
  const reachable = liveNodes(nodes, outputs);
  graph.node = reachable;
  const live = new Set(reachable.flatMap((n) => [...n.input, ...n.output]));
  graph.initializer = [...graph.initializer.filter((t) => live.has(t.name ?? '')), ...extra];
  graph.valueInfo = graph.valueInfo.filter((v) => live.has(v.name ?? ''));
}

/**
 * Drops the present.* outputs of a graph whose decoder appends new_key_values.* to a cache it keeps
 * (and the nodes that only fed them): not fetched, they would still be held until the pass returns.
 */
export function dropPresentOutputs(graph: Graph): void {
  graph.output = graph.output.filter((o) => !/^present\.\d+\.(key|value)$/.test(o.name ?? ''));
  pruneGraph(graph, [...graph.node] as NodeProto[], []);
}

/** The node producing each named tensor (an empty name is an absent optional input or output, not a tensor). */
function producers(nodes: NodeProto[]): Map<string, NodeProto> {
  const producer = new Map<string, NodeProto>();
  for (const node of nodes) for (const o of node.output) if (o) producer.set(o, node);
  return producer;
}

/** The nodes that the graph outputs depend on, in their original (topological) order. */
function liveNodes(nodes: NodeProto[], outputs: Set<string>): NodeProto[] {
  const producer = producers(nodes);
  const live = new Set<NodeProto>();
  const queue = [...outputs];
  while (queue.length > 0) {
    const node = producer.get(queue.pop()!);
    if (!node || live.has(node)) continue;
    live.add(node);
    for (const i of node.input) if (i) queue.push(i);
  }
  return topological(nodes.filter((n) => live.has(n)));
}

/** Orders nodes so that each comes after the producers of its inputs (the added nodes went last). */
function topological(nodes: NodeProto[]): NodeProto[] {
  const producer = producers(nodes);
  const done = new Set<NodeProto>();
  const order: NodeProto[] = [];
  const visit = (root: NodeProto) => {
    const stack: Array<[NodeProto, number]> = [[root, 0]];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [node, next] = top;
      if (done.has(node)) {
        stack.pop();
        continue;
      }
      if (next < node.input.length) {
        top[1]++;
        const input = node.input[next];
        const dep = input ? producer.get(input) : undefined;
        if (dep && !done.has(dep)) stack.push([dep, 0]);
        continue;
      }
      done.add(node);
      order.push(node);
      stack.pop();
    }
  };
  for (const node of nodes) visit(node);
  return order;
}

/**
 * Logits for the last position only. A Hugging Face causal-LM export returns logits for every
 * input position ([B, S, V]); generation reads only the last row. At 2048 prompt tokens and a
 * 152k-token vocabulary that is 1.2 GB of output and, for Qwen2.5-0.5B, a quarter of the prefill's
 * arithmetic (the lm_head). llama.cpp computes the last row only; so do we, by rewriting the graph:
 * the activation entering the lm_head is sliced to its last position, so logits come out [B, 1, V].
 *
 * The rewrite is found structurally: walking back from `logits`, every node up to the lm_head must
 * work position by position (casts, element-wise arithmetic, the dynamic quantization of 8-bit
 * exports); the walk stops at matrix products by a constant weight, and all of them must read the
 * same activation. Anything else (a Reshape, an attention product, logits that are not rank 3)
 * leaves the model as it is, with the reason.
 *
 * Weights stay where they are: initializers stored inline become external-data references into the
 * original file (`sourceName`, by byte offset), so the rewritten graph is small whatever the model's
 * size; initializers that were already external keep their references.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import onnxProto from 'onnx-proto';
import { pointToExternalData } from './external-data.js';

const { onnx } = onnxProto;
interface Node {
  name: string;
  opType: string;
  input: string[];
  output: string[];
}
type Graph = InstanceType<typeof onnx.GraphProto>;

/**
 * Products by a weight that the walk stops at; input 0 is the activation, [B, S, H]. (Not Gemm,
 * which is 2-D, nor FusedMatMul, whose transA would put the positions elsewhere.)
 */
const MATMULS = new Set(['MatMul', 'MatMulInteger', 'MatMulNBits']);
/** Operators that treat every position on its own (and keep the rank). */
const POSITIONWISE = new Set([
  'Identity', 'Cast', 'Add', 'Sub', 'Mul', 'Div', 'Neg', 'Tanh', 'Sigmoid', 'Relu', 'Clip', 'Softcap',
  'DequantizeLinear', 'QuantizeLinear',
]);
/** Inline initializers at least this large become references into the source file. */
const EXTERNAL_MIN_BYTES = 1024;

export type LastLogitsResult = { graph: Uint8Array; activation: string } | { skipped: string };

/** Bump when the rewrite changes, so files written by an older version are rebuilt. */
const REWRITE_VERSION = 1;
export const STAMP_KEY = 'local-inference.source';

/** Tensors that depend on initializers and Constant nodes only. */
function constantTensors(nodes: Node[], initializers: Iterable<string>): Set<string> {
  const constant = new Set(initializers);
  for (let changed = true; changed; ) {
    changed = false;
    for (const node of nodes) {
      const inputs = node.input.filter(Boolean);
      if (node.opType === 'Constant' || (inputs.length > 0 && inputs.every((i) => constant.has(i)))) {
        for (const o of node.output) {
          if (constant.has(o)) continue;
          constant.add(o);
          changed = true;
        }
      }
    }
  }
  return constant;
}

/**
 * Rewrites a causal LM graph (the bytes of its .onnx file) so that `logits` holds the last position
 * only. `sourceName` is how the rewritten graph refers to the original file for inline weights.
 */
export function lastPositionLogits(model: Uint8Array, sourceName: string, stamp = ''): LastLogitsResult {
  const decoded = onnx.ModelProto.decode(model);
  const result = sliceLastPosition(decoded);
  if ('skipped' in result) return result;
  return { graph: encodeDerived(decoded, model, sourceName, stamp), activation: result.activation };
}

/** The rewrite itself, on a decoded model, in place; untouched when skipped. */
export function sliceLastPosition(decoded: InstanceType<typeof onnx.ModelProto>): { activation: string } | { skipped: string } {
  const graph = decoded.graph as Graph | null; // decoded messages carry every repeated field, empty or not
  if (!graph) return { skipped: 'no graph' };
  const output = graph.output.find((o) => o.name === 'logits');
  const outDims = output?.type?.tensorType?.shape?.dim;
  if (!output || outDims?.length !== 3) return { skipped: 'no rank-3 logits output' };

  const nodes = graph.node as Node[];
  const producer = new Map<string, Node>();
  for (const node of nodes) for (const o of node.output) producer.set(o, node);
  const constant = constantTensors(nodes, graph.initializer.map((t) => t.name ?? ''));

  // Walk back from logits to the lm_head; the boundary nodes read the activation as their input 0.
  const boundary = new Set<Node>();
  const seen = new Set<string>();
  const queue = ['logits'];
  let matmuls = 0;
  while (queue.length > 0) {
    const tensor = queue.pop()!;
    if (seen.has(tensor) || constant.has(tensor)) continue;
    seen.add(tensor);
    const node = producer.get(tensor);
    if (!node) return { skipped: `logits depend on graph input ${tensor} without a matrix product` };
    const [activation, ...rest] = node.input;
    if (MATMULS.has(node.opType)) {
      const weights = rest.filter((i, k) => i && !(node.opType === 'MatMulInteger' && k === 1)); // input 2: the activation's zero point
      if (!weights.every((w) => constant.has(w))) return { skipped: `${node.opType} ${node.name} multiplies two activations` };
      matmuls++;
      const quantizer = producer.get(activation!);
      if (quantizer?.opType === 'DynamicQuantizeLinear') queue.push(quantizer.output[0]!); // its input is the real boundary
      else boundary.add(node);
      continue;
    }
    if (node.opType === 'DynamicQuantizeLinear') {
      boundary.add(node); // reached from the MatMulInteger it feeds, or through its scale
      continue;
    }
    if (!POSITIONWISE.has(node.opType)) return { skipped: `${node.opType} ${node.name} between the lm_head and logits` };
    for (const input of node.input) if (input) queue.push(input);
  }
  const activations = new Set([...boundary].map((node) => node.input[0]!));
  if (matmuls === 0 || activations.size !== 1) return { skipped: `expected one lm_head activation, found ${activations.size} from ${matmuls} matrix product(s)` };
  const activation = activations.values().next().value!;

  const sliced = `${activation}/last_position`;
  const names = { starts: `${sliced}/starts`, ends: `${sliced}/ends`, axes: `${sliced}/axes` };
  const int64 = (name: string, value: bigint) =>
    onnx.TensorProto.create({ name, dims: [1], dataType: onnx.TensorProto.DataType.INT64, rawData: new Uint8Array(BigInt64Array.of(value).buffer) });
  graph.initializer.push(int64(names.starts, -1n), int64(names.ends, 2n ** 62n), int64(names.axes, 1n));
  const slice = onnx.NodeProto.create({ name: sliced, opType: 'Slice', input: [activation, names.starts, names.ends, names.axes], output: [sliced] });
  for (const node of boundary) node.input[0] = sliced;
  graph.node.splice(Math.min(...[...boundary].map((node) => nodes.indexOf(node))), 0, slice);
  outDims[1] = onnx.TensorShapeProto.Dimension.create({ dimValue: 1 });
  graph.valueInfo = graph.valueInfo.filter((v) => !seen.has(v.name ?? '')); // shapes along the walk changed
  return { activation };
}

/** The inline initializers that a derived graph references in the source file: weights of some size, still views into `source`. */
function inPlaceInitializers(decoded: InstanceType<typeof onnx.ModelProto>, source: Uint8Array): Array<InstanceType<typeof onnx.TensorProto>> {
  return (decoded.graph?.initializer ?? []).filter((tensor): tensor is InstanceType<typeof onnx.TensorProto> => {
    const raw = tensor.rawData;
    return !!raw && raw.byteLength >= EXTERNAL_MIN_BYTES && raw.buffer === source.buffer;
  });
}

/** Bytes of weights stored inline in `source` that a derived graph would reference in place. */
export function inlineWeightBytes(decoded: InstanceType<typeof onnx.ModelProto>, source: Uint8Array): number {
  return inPlaceInitializers(decoded, source).reduce((n, tensor) => n + tensor.rawData.byteLength, 0);
}

/**
 * Encodes a rewritten model small: its inline weights (still views into `source`, the bytes it was
 * decoded from) become references into the source file by offset; `stamp` records what it was made from.
 */
export function encodeDerived(decoded: InstanceType<typeof onnx.ModelProto>, source: Uint8Array, sourceName: string, stamp: string): Uint8Array {
  for (const tensor of inPlaceInitializers(decoded, source)) {
    pointToExternalData(tensor as InstanceType<typeof onnx.TensorProto>, sourceName, tensor.rawData.byteOffset - source.byteOffset);
  }
  decoded.metadataProps = [...decoded.metadataProps.filter((p) => p.key !== STAMP_KEY), { key: STAMP_KEY, value: stamp }];
  return onnx.ModelProto.encode(decoded).finish();
}

/**
 * What the rewritten graph was made from: size, modification time and a hash of the first and last
 * MiB (a copy that keeps size and time, as `cp -p` and tar do, must not reuse offsets into other bytes).
 */
export function stampOf(file: string): string {
  const stat = fs.statSync(file);
  const hash = createHash('sha256');
  const span = Math.min(stat.size, 2 ** 20);
  const buffer = Buffer.alloc(span);
  const fd = fs.openSync(file, 'r');
  try {
    for (const position of [0, stat.size - span]) {
      fs.readSync(fd, buffer, 0, span, position);
      hash.update(buffer);
    }
  } finally {
    fs.closeSync(fd);
  }
  return `${REWRITE_VERSION}:${stat.size}:${stat.mtimeMs}:${hash.digest('hex')}`;
}

/** A derived graph's metadata (its stamp under STAMP_KEY), decoded once; undefined when it cannot be read. */
export function readMetadata(file: string): Map<string, string> | undefined {
  try {
    return new Map(onnx.ModelProto.decode(fs.readFileSync(file)).metadataProps.map((p) => [p.key ?? '', p.value ?? '']));
  } catch {
    return undefined;
  }
}

/**
 * A small ONNX graph builder over the protobuf classes of `onnx-proto`.
 *
 * Used by the scripts that build the bundled models and by test fixtures. It writes standard ONNX
 * (default domain, opset 17), plus onnxruntime's `com.microsoft` contrib ops when a builder asks for
 * them by domain (the model-builder form: ./model-builder-lm.ts).
 */
import onnxProto from 'onnx-proto';
import { pointToExternalData } from '../../../src/engines/onnx/graph/external-data.js';

const { onnx } = onnxProto;

export type ElemType = 'float32' | 'float16' | 'int64' | 'int32' | 'bool' | 'int8' | 'uint8';

export const ELEM: Record<ElemType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  float16: onnx.TensorProto.DataType.FLOAT16,
  int32: onnx.TensorProto.DataType.INT32,
  int64: onnx.TensorProto.DataType.INT64,
  bool: onnx.TensorProto.DataType.BOOL,
  int8: onnx.TensorProto.DataType.INT8,
  uint8: onnx.TensorProto.DataType.UINT8,
};

export const OPSET = 17;

/** A dimension is a fixed size or a symbolic name ("batch_size", "sequence_length", ...). */
export type Dim = number | string;

type AttrValue = number | number[] | string | { float: number };

export class GraphBuilder {
  private readonly nodes: InstanceType<typeof onnx.NodeProto>[] = [];
  private readonly initializers: InstanceType<typeof onnx.TensorProto>[] = [];
  private readonly inputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private readonly outputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  private counter = 0;
  /** Operator domains besides the default one that nodes use (opset version 1 each). */
  private readonly domains = new Set<string>();

  /** A fresh value name with a readable prefix. */
  name(prefix: string): string {
    this.counter += 1;
    return `${prefix}_${this.counter}`;
  }

  input(name: string, type: ElemType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    return name;
  }

  output(name: string, type: ElemType, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, type, dims));
  }

  /** A float32 initializer (weights). */
  weight(name: string, dims: number[], data: Float32Array): string {
    if (data.length !== dims.reduce((a, b) => a * b, 1)) {
      throw new Error(`initializer ${name}: ${data.length} values for dims [${dims}]`);
    }
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims,
        dataType: ELEM.float32,
        rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      }),
    );
    return name;
  }

  /** A float16 initializer from IEEE half bits (Node 20 has no Float16Array). */
  halfs(name: string, dims: number[], bits: Uint16Array): string {
    if (bits.length !== dims.reduce((a, b) => a * b, 1)) throw new Error(`initializer ${name}: ${bits.length} values for dims [${dims}]`);
    this.initializers.push(onnx.TensorProto.create({ name, dims, dataType: ELEM.float16, rawData: new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength) }));
    return name;
  }

  /** An int8 or uint8 initializer (quantized weights, zero points). */
  bytes(name: string, type: 'int8' | 'uint8', dims: number[], data: Int8Array | Uint8Array): string {
    this.initializers.push(
      onnx.TensorProto.create({ name, dims, dataType: ELEM[type], rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) }),
    );
    return name;
  }

  /** An int64 constant initializer (shapes, axes, indices). */
  int64s(values: number[], dims: number[] = [values.length]): string {
    const name = this.name('const_i64');
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims,
        dataType: ELEM.int64,
        rawData: new Uint8Array(data.buffer),
      }),
    );
    return name;
  }

  /** A float32 constant (scalar when dims is []). */
  floats(values: number[], dims: number[] = [values.length]): string {
    return this.weight(this.name('const_f32'), dims, Float32Array.from(values));
  }

  /** Adds one node and returns the names of its outputs. */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, nOutputs = 1): string[] {
    const outs = Array.from({ length: nOutputs }, () => this.name(opType.toLowerCase()));
    this.opTo(opType, { inputs, outputs: outs, attrs });
    return outs;
  }

  /**
   * Adds one node writing the outputs named (a graph output written directly, as model builders do;
   * '' for an optional output left out); `domain`: a contrib op's, e.g. com.microsoft.
   */
  opTo(opType: string, spec: { inputs: string[]; outputs: string[]; attrs?: Record<string, AttrValue>; domain?: string }): void {
    const { domain } = spec;
    if (domain) this.domains.add(domain);
    this.nodes.push(
      onnx.NodeProto.create({
        opType,
        ...(domain ? { domain } : {}), // protobufjs encodes an empty string it is given
        input: spec.inputs,
        output: spec.outputs,
        name: this.name(`node_${opType}`),
        attribute: Object.entries(spec.attrs ?? {}).map(([k, v]) => attribute(k, v)),
      }),
    );
  }

  /** Single-output shorthand for `op`. */
  op1(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}): string {
    return this.op(opType, inputs, attrs, 1)[0]!;
  }

  /** Renames a value by an Identity node, to give a graph output its public name. */
  alias(value: string, publicName: string): void {
    this.nodes.push(
      onnx.NodeProto.create({ opType: 'Identity', input: [value], output: [publicName], name: this.name('node_Identity') }),
    );
  }

  /** Serialises the model to ONNX protobuf bytes (weights inline; protobuf caps that at 2 GB). */
  encode(producer: string): Uint8Array {
    return this.encodeModel(producer);
  }

  /**
   * Serialises with the weights in separate files, the layout of large Hugging Face exports
   * (`model.onnx` + `model.onnx_data`, then `model.onnx_data_1`, ... past `maxChunkBytes`, since
   * neither protobuf nor a single Node read can hold 2 GB): initializers above 1 KiB point into a
   * chunk by offset.
   */
  encodeWithExternalData(producer: string, dataFile: string, maxChunkBytes = 1_900_000_000): { model: Uint8Array; chunks: Array<{ name: string; data: Uint8Array }> } {
    const ALIGN = 4096;
    const chunks: Array<{ name: string; parts: Uint8Array[]; size: number }> = [];
    let chunk = { name: dataFile, parts: [] as Uint8Array[], size: 0 };
    chunks.push(chunk);
    for (const tensor of this.initializers) {
      const raw = tensor.rawData as Uint8Array;
      if (!raw || raw.byteLength <= 1024) continue;
      let padding = (ALIGN - (chunk.size % ALIGN)) % ALIGN;
      if (chunk.size > 0 && chunk.size + padding + raw.byteLength > maxChunkBytes) {
        chunk = { name: `${dataFile}_${chunks.length}`, parts: [], size: 0 };
        chunks.push(chunk);
        padding = 0;
      }
      if (padding) chunk.parts.push(new Uint8Array(padding));
      chunk.size += padding;
      pointToExternalData(tensor, chunk.name, chunk.size);
      chunk.parts.push(raw);
      chunk.size += raw.byteLength;
    }
    const joined = chunks.map(({ name, parts, size }) => {
      const data = new Uint8Array(size);
      let at = 0;
      for (const part of parts) {
        data.set(part, at);
        at += part.byteLength;
      }
      return { name, data };
    });
    return { model: this.encodeModel(producer), chunks: joined };
  }

  private encodeModel(producer: string): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName: producer,
      opsetImport: [{ domain: '', version: OPSET }, ...[...this.domains].map((domain) => ({ domain, version: 1 }))],
      graph: onnx.GraphProto.create({
        name: producer,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      }),
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function valueInfo(name: string, type: ElemType, dims: Dim[]) {
  return onnx.ValueInfoProto.create({
    name,
    type: {
      tensorType: {
        elemType: ELEM[type],
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  });
}

function attribute(name: string, value: AttrValue) {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'number') {
    return onnx.AttributeProto.create({ name, type: AttributeType.INT, i: value });
  }
  if (typeof value === 'string') {
    return onnx.AttributeProto.create({ name, type: AttributeType.STRING, s: new TextEncoder().encode(value) });
  }
  if (Array.isArray(value)) {
    return onnx.AttributeProto.create({ name, type: AttributeType.INTS, ints: value });
  }
  return onnx.AttributeProto.create({ name, type: AttributeType.FLOAT, f: value.float });
}

/**
 * Deterministic pseudo-random numbers (mulberry32 + Box-Muller), so every build of a model is
 * byte-identical: tests can pin exact greedy outputs.
 */
export class SeededRandom {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  uniform(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  normal(): number {
    const u = Math.max(this.uniform(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.uniform());
  }
  /** A tensor of normal values with the given standard deviation. */
  normals(n: number, std: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * std;
    return out;
  }
}

/**
 * External-data references (ONNX `TensorProto.external_data`): the one piece of graph writing the
 * runtime needs (the last-logits rewrite). The build-time graph builder (scripts/builders/onnx/)
 * imports it from here; the runtime never imports the builder.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

/** Makes an inline initializer refer to its bytes in an external data file instead (same length). */
export function pointToExternalData(tensor: InstanceType<typeof onnx.TensorProto>, location: string, offset: number): void {
  tensor.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
  tensor.externalData = [
    { key: 'location', value: location },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(tensor.rawData.byteLength) },
  ];
  tensor.rawData = new Uint8Array(0);
}

/**
 * Files the server writes into a model folder itself (not part of the model as published). The hub
 * (pack, checksums) leaves them out; the modules that write them take their names from here.
 */
import path from 'node:path';

/** Base name of the last-position-logits graph (transformers.js `model_file_name`): onnx/model.last-logits{dtype suffix}.onnx. */
export const LAST_LOGITS_BASE = 'model.last-logits';
/** Base name of the fused-attention graph (with last-position logits too: `model.fused-attention.last-logits`). */
export const FUSED_ATTENTION_BASE = 'model.fused-attention';
/**
 * Base name of the export's graph unchanged but for its weights, which it references in the export by
 * offset (onnxruntime then maps them from the file instead of copying them; see onnx/prepare-graph.ts).
 */
export const IN_PLACE_BASE = 'model.in-place';

/** True for a file the server derives (never packed or checksummed). */
export function isDerivedFile(name: string): boolean {
  const base = path.basename(name);
  return [LAST_LOGITS_BASE, FUSED_ATTENTION_BASE, IN_PLACE_BASE].some((derived) => base.startsWith(derived));
}

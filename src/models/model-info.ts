import type { ModelDescription } from '../core/model.js';
import type { Dtype } from './manifest.js';
import type { VisionSpec } from './vision.js';

/**
 * A scanned model folder: the core's description (src/core/model.ts) and what a worker needs to load
 * it. Plain data: crosses threads.
 */
export interface ModelInfo extends ModelDescription {
  /** Absolute path of the model folder (a GGUF model: the folder its files are in). */
  dir: string;
  /** ONNX models: the transformers.js dtype of the graph served. */
  dtype: Dtype;
  /**
   * GGUF models: the file and its split parts (./gguf.ts), and the quantization its name gives;
   * chat models: the KV budget their sequences are laid out in and a token's KV bytes (./gguf-kv.ts).
   */
  gguf?: { parts: string[]; quant?: string; kv?: { budgetBytes: number; bytesPerToken: number } };
  /** Relative path of the ONNX file the dtype selects. */
  onnxFile: string;
  /** Number of external data chunks (model.onnx_data, _data_1, ...), 0 when the weights are inline. */
  externalDataChunks: number;
  poolSize: number;
  pooling: 'mean' | 'cls';
  normalize: boolean;
  /** The vector may be shortened to its first `dimensions` values (then re-normalised). */
  matryoshka: boolean;
  /** Put before every string input (embedding models trained with instruction prefixes). */
  prefix: string;
  /** Chat models: the chat template's source, for the chat layer's reading of it where the models
   * list needs more than its markers say (src/inference/chat-format.ts). Never reaches HTTP. */
  chatTemplate?: string;
  /** The manifest's `randomWeights`: the model runs but its outputs mean nothing (a test model); a request that names no model gets it only when nothing else can serve. */
  randomWeights?: boolean;
  /** A split vision-language export (then `onnxFile` is its decoder, and `imageInput` is set): what its images become (./vision.ts). */
  vision?: VisionSpec;
}

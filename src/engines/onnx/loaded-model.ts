/**
 * A model as a worker holds it once loaded: the transformers.js tokenizer and model, what its
 * configuration says about generation, and the sessions the decoder drives. Types only: the decoder
 * (./decode/) reads it, ./load.ts builds it.
 */
import type { PreTrainedModel, PreTrainedTokenizer } from '@huggingface/transformers';
import type { EngineSettings } from '../../core/engine-settings.js';
import type { ModelInfo } from '../../models/registry.js';
import type { LoadedTokenizer } from '../../tokenize/load-tokenizer.js';
import type { GenerationDefaults } from '../sequence.js';
import type { StepSession } from './decode/step-session.js';
import type { VisionModel } from './decode/vision-inputs.js';

export interface LoadedModel extends LoadedTokenizer<PreTrainedTokenizer> {
  model: PreTrainedModel;
  /** End-of-sequence ids from generation_config.json (may be several) or config.json. */
  eosTokenIds: number[];
  /** Sampling defaults from generation_config.json. */
  generationDefaults: GenerationDefaults;
  hiddenSize: number | null;
  /** Rows of the logits (config.json vocab_size): the size of a logits mask. */
  vocabSize: number;
  /** Input names of the ONNX session (token_type_ids only when the export has it). */
  inputNames: string[];
  /** What the load did beyond the plain model (for the server log). */
  notes: string[];
  /** The engine's settings it was loaded with (the decoder reads its own from here). */
  engine: EngineSettings;
  /**
   * The graph quantizes activations at run time (DynamicQuantizeLinear: one scale per tensor, over
   * whatever tokens the forward pass holds), so a token's KV depends on which tokens shared its pass.
   */
  dynamicQuantization: boolean;
  /** A split vision-language export's image processor and its embedding and vision graphs (./decode/vision-inputs.ts). */
  vision?: VisionModel;
  /** Decoding steps at long context through the in-place step graph (./decode/step-session.ts), when the graph has one and it is asked for. */
  decodeSteps?: StepSession;
}

/**
 * How a turn's next token is chosen: the request's sampling fields, and where it leaves one out,
 * the model's generation_config (temperature, top-k, top-p, repetition penalty).
 */
import type { ChatRequest } from '../core/types.js';
import type { SamplingSettings } from '../engines/sequence.js';
import type { GenerationDefaults } from './model.js';

export function samplingFor(sampling: ChatRequest['sampling'], defaults: GenerationDefaults): SamplingSettings {
  const doSample = sampling.temperature === undefined ? defaults.doSample : sampling.temperature > 0;
  const penalties = { presence: sampling.presencePenalty ?? 0, frequency: sampling.frequencyPenalty ?? 0, repetition: sampling.repetitionPenalty ?? defaults.repetitionPenalty ?? 1 };
  const penalized = penalties.presence !== 0 || penalties.frequency !== 0 || penalties.repetition !== 1;
  return {
    doSample,
    temperature: sampling.temperature || defaults.temperature || 1,
    topK: sampling.topK ?? defaults.topK ?? 0,
    topP: sampling.topP ?? defaults.topP ?? 1,
    ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
    ...(penalized ? { penalties } : {}),
  };
}

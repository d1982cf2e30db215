/**
 * The format a chat model is served in, as the models list says it: the model scanner reads it from
 * the template's markers (src/models/template-features.ts chatFormat), but a template no dedicated
 * format knows is served with what the differential analysis of its renders found
 * (src/chat/template/family-features.ts), which the scanner, below the chat layer, cannot run. So
 * the list asks the chat layer's reading: `auto:json` / `auto:tagged` for an analysed call form,
 * `auto-tags` for analysed thought markers. The analysis renders through @huggingface/jinja alone
 * (no transformers.js in the main thread) and is cached per template source.
 */
import { familyFeatures } from '../chat/template/family-features.js';
import type { ModelInfo } from '../models/registry.js';

export function servedFormat(info: ModelInfo): ModelInfo {
  if (info.task !== 'chat' || info.chatTemplate === undefined || !info.chatFormat) return info;
  const features = familyFeatures(info.chatTemplate);
  const calls = features.toolFormat === 'auto' ? features.auto?.calls : undefined;
  const toolFormat = calls ? `auto:${calls.shape}` : features.toolFormat;
  if (toolFormat === info.chatFormat.toolFormat && features.reasoning === info.chatFormat.reasoning) return info;
  return { ...info, chatFormat: { ...info.chatFormat, toolFormat, reasoning: features.reasoning } };
}

/**
 * A template's family description as the chat layer uses it: what its markers say
 * (src/models/template-features.ts templateFeatures), completed by the differential analysis of its
 * renders (./analyze.ts) where no dedicated format knows it:
 *
 * - a template that describes tools but whose markers name no format (`generic`: Command R / R7B,
 *   Seed-OSS, Apriel 1.6) gets the call form the analysis found (`auto`), rendered by the template
 *   itself instead of the server's generic prompt; so does one taken for hermes by a `<tool_call>`
 *   in its prose whose renders write calls otherwise (Apriel 1.5's `<tool_calls>[…]`);
 * - a template with no known thought style gets the thought's markers the analysis found
 *   (`auto-tags`: Seed-OSS's `<seed:think>`, Command R7B's `<|START_THINKING|>`, Apriel 1.6's
 *   `[BEGIN FINAL RESPONSE]`), and its text wrappers and turn markers are kept from the client.
 *
 * The dedicated formats keep their parsers (GLM, DeepSeek, MiniMax M2, Hermes, …): where the analysis
 * would read them too, its unit test shows it. Cached per template source (a few renders each).
 */
import { templateFeatures, type AutoFormat, type TemplateFeatures } from '../../models/template-features.js';
import { analyzeTemplate } from './analyze.js';

const cache = new Map<string, TemplateFeatures>();

export function familyFeatures(template: string): TemplateFeatures {
  let found = cache.get(template);
  if (found === undefined) {
    found = complete(template, templateFeatures(template));
    if (cache.size >= 64) cache.delete(cache.keys().next().value!);
    cache.set(template, found);
  }
  return found;
}

function complete(template: string, features: TemplateFeatures): TemplateFeatures {
  const unknownCalls = features.toolFormat === 'generic' || features.toolFormat === 'hermes';
  if (template === '' || (!unknownCalls && features.reasoning !== 'none')) return features;
  const auto = analyzeTemplate(template);
  if (!auto) return features;
  const calls = auto.calls;
  const ownCalls = calls !== undefined && features.nativeTools && (features.toolFormat === 'generic' || (calls.shape === 'json' && calls.open !== '<tool_call>'));
  const ownThought = features.reasoning === 'none' && auto.thought !== undefined;
  if (!ownCalls && !ownThought) return features;
  return {
    ...features,
    ...(ownCalls ? { toolFormat: 'auto' as const } : {}),
    ...(ownThought ? { reasoning: 'auto-tags' as const } : {}),
    auto: ownCalls ? auto : withoutCalls(auto),
  };
}

/** The thought and markers alone, where the calls keep their dedicated (or generic) format. */
function withoutCalls({ calls: _calls, ...rest }: AutoFormat): AutoFormat {
  return rest;
}

/**
 * A model family as the chat layer uses it: what its template says (src/models/template-features.ts:
 * call format, reasoning style), the marker strings it writes, and what they mean for the model's
 * vocabulary — which special tokens the answer must keep when decoded (the markers the parser reads)
 * and which end the turn besides the end-of-sequence ids. Read once per tokenizer; worker thread.
 *
 * Why decoding keeps the markers: a tokenizer calls many markers special (Mistral's `[TOOL_CALLS]`,
 * harmony's `<|channel|>`, Kimi's section tokens), and decoding with special tokens skipped drops
 * them, so the parser saw `get_weather{"location": "Paris"}` as text. The answer is now decoded with
 * every special token dropped except the family's markers; the parser consumes those, and the
 * answer builder removes any stray one, so the client's text never holds a marker.
 */
import { familyMarkers, FORMAT_CONTINUE_MARKERS, FORMAT_END_MARKERS, thoughtTags, type TemplateFeatures } from '../models/template-features.js';
import type { ThoughtTags } from './answer.js';
import type { ChatModel, ChatTokenizer } from './model.js';
import { featuresOf } from './prompt.js';

export interface Family {
  features: TemplateFeatures;
  /** The thought's tags, for the styles that have them. */
  tags: ThoughtTags | undefined;
  /** Strings never shown as the client's text: the call format's markers and the thought's tags. */
  markers: readonly string[];
  /** Single-token ids that end the turn besides the end-of-sequence ids (harmony's `<|call|>`). */
  endIds: readonly number[];
  /** Ids that never end the turn, even among the end-of-sequence ids (harmony's `<|end|>`). */
  continueIds: readonly number[];
  /** Decodes generated ids to the text the parser reads: markers kept, other special tokens dropped. */
  decode(ids: number[]): string;
}

const families = new WeakMap<ChatTokenizer, Family>();

/**
 * The tokens that end the model's turn: its end-of-sequence ids and the family's end markers
 * (harmony's <|call|> and <|return|>), less its message ends (harmony's <|end|>), even where the model
 * lists them (llama.cpp counts <|end|> among a gpt-oss GGUF's end-of-generation tokens).
 */
export function turnEndIds(model: ChatModel): number[] {
  const family = familyOf(model);
  return [...new Set([...model.eosTokenIds, ...family.endIds])].filter((id) => !family.continueIds.includes(id));
}

/**
 * The tokens a grammar ends on: the model's end-of-sequence ids less the family's message ends, as
 * for the turn (else the grammar would end at harmony's <|end|> after the analysis, and the call that
 * follows would go unconstrained). The family's end markers are not added: a call's grammar writes
 * them as the end of its syntax (harmony's `<|call|>`).
 */
export function grammarStopIds(model: ChatModel): number[] {
  const { continueIds } = familyOf(model);
  return model.eosTokenIds.filter((id) => !continueIds.includes(id));
}

export function familyOf(model: ChatTokenizer): Family {
  let found = families.get(model);
  if (!found) {
    found = describe(model);
    families.set(model, found);
  }
  return found;
}

function describe(model: ChatTokenizer): Family {
  const features = featuresOf(model);
  const tags = thoughtTags(features);
  const markers = familyMarkers(features);
  const tokenizer = model.tokenizer;
  const single = (text: string) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    return ids.length === 1 ? ids[0] : undefined;
  };
  // Every token of a marker stays in the text the parser reads: a marker of several tokens (Gemma 4's
  // thought opens with `<|channel>thought`, a special token then text) would not match without its
  // special one.
  const keep = new Set(markers.flatMap((marker) => tokenizer.encode(marker, { add_special_tokens: false })));
  const drop = new Set((tokenizer as unknown as { all_special_ids?: number[] }).all_special_ids ?? []);
  for (const id of keep) drop.delete(id);
  const ids = (texts: readonly string[] | undefined) => (texts ?? []).map(single).filter((id): id is number => id !== undefined);
  const endIds = ids(FORMAT_END_MARKERS[features.toolFormat]);
  const continueIds = ids(FORMAT_CONTINUE_MARKERS[features.toolFormat]);
  return {
    features,
    tags,
    markers,
    endIds,
    continueIds,
    decode: (ids) => {
      const shown = drop.size === 0 ? ids : ids.filter((id) => !drop.has(id));
      return shown.length === 0 ? '' : tokenizer.decode(shown, { skip_special_tokens: false });
    },
  };
}

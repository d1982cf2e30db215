/**
 * The text a chat turn's parser reads (src/chat/family.ts decode): special tokens are dropped
 * unless they are, or are part of, one of the family's markers. Gemma 4's thought opens with
 * `<|channel>thought` (a special token, then text): its special token must stay, or the thought
 * reaches the client as text.
 */
import { AutoTokenizer, env } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { familyOf } from '../../src/chat/family.js';
import type { ChatTokenizer } from '../../src/chat/model.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels } from '../helpers/family-model.js';

describe('family decode', () => {
  let models: FamilyModels;
  let model: ChatTokenizer;
  beforeAll(async () => {
    models = makeFamilyModels([FAMILY_SPECS.gemma4]);
    env.allowRemoteModels = false;
    env.localModelPath = `${models.modelsDir}/`;
    model = { info: { id: FAMILY_SPECS.gemma4.id } as ChatTokenizer['info'], tokenizer: await AutoTokenizer.from_pretrained(FAMILY_SPECS.gemma4.id) };
  });
  afterAll(() => models?.close());

  it("keeps the special token that starts a marker of several tokens (Gemma 4's thought channel), drops other special tokens", () => {
    const text = '<|channel>thought\nNeed the weather.<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><turn|>';
    const ids = model.tokenizer.encode(text, { add_special_tokens: false });
    const family = familyOf(model);
    expect(family.markers).toContain('<|channel>thought');
    expect(family.decode(ids)).toBe(text.replace('<turn|>', ''));
  });
});

/**
 * A strict call's grammar on a gpt-oss model whose end tokens include harmony's `<|end|>` (llama.cpp
 * lists it among a GGUF's end-of-generation tokens; it ends one message, not the turn): the grammar
 * must not take `<|end|>` as its end, or it stops constraining before the call that follows the
 * analysis message (src/chat/family.ts grammarStopIds, the stop tokens of the guide's matcher).
 */
import { AutoTokenizer, env } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grammarStopIds, turnEndIds } from '../../src/chat/family.js';
import { planConstraint } from '../../src/chat/grammar/constraint.js';
import { matcherFor } from '../../src/chat/grammar/xgrammar.js';
import type { ChatModel } from '../../src/chat/model.js';
import type { ChatRequest, ToolSpec } from '../../src/core/types.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels } from '../helpers/family-model.js';

const VOCAB = 151936;
const TOOL: ToolSpec = { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };
const strict = { model: FAMILY_SPECS.gptOss.id, messages: [{ role: 'user', content: 'x' }], tools: [TOOL], toolChoice: { mode: 'auto', parallel: true }, maxTokens: 100, sampling: {} } as unknown as ChatRequest;

describe('harmony: the grammar ends with the turn, not with a message', () => {
  let models: FamilyModels;
  let model: ChatModel;
  let id: (text: string) => number;
  beforeAll(async () => {
    models = makeFamilyModels([FAMILY_SPECS.gptOss]);
    env.allowRemoteModels = false;
    env.localModelPath = `${models.modelsDir}/`;
    const tokenizer = await AutoTokenizer.from_pretrained(FAMILY_SPECS.gptOss.id);
    id = (text) => tokenizer.encode(text, { add_special_tokens: false })[0]!;
    const ends = ['<|return|>', '<|end|>', '<|call|>'].map((t) => tokenizer.encode(t, { add_special_tokens: false })[0]!);
    model = { info: { id: FAMILY_SPECS.gptOss.id } as ChatModel['info'], tokenizer, eosTokenIds: ends, vocabSize: VOCAB } as unknown as ChatModel;
  });
  afterAll(() => models?.close());

  it('the turn ends on <|return|> and <|call|>, not <|end|>', () => {
    expect(turnEndIds(model).sort()).toEqual([id('<|return|>'), id('<|call|>')].sort());
    expect(grammarStopIds(model).sort()).toEqual([id('<|return|>'), id('<|call|>')].sort());
  });

  /** Feeds `text` to a fresh matcher: the index of the first token it refuses, or -1; the matcher never ends before the text does. */
  const feed = async (text: string) => {
    const matcher = await matcherFor(model, VOCAB, planConstraint(strict, 'harmony')!.source, grammarStopIds(model));
    try {
      const ids = model.tokenizer.encode(text, { add_special_tokens: false });
      for (const [i, token] of ids.entries()) {
        expect(matcher.terminated(), `terminated before token ${i} (${JSON.stringify(model.tokenizer.decode([token]))})`).toBe(false);
        if (!matcher.accept(token)) return i;
      }
      return -1;
    } finally {
      matcher.dispose();
    }
  };
  /** The grammar writes compact JSON. (Up to the call's end: `<|call|>`, a turn end too, is both a stop token of this model's matcher and the end text of the call's tag; see docs/not-done-yet.md.) */
  const turn = (args: string) => `<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>${args}`;

  it('the analysis message, its <|end|>, then the call: all under the grammar, which has not ended', async () => {
    expect(await feed(turn('{"city":"Paris"}'))).toBe(-1);
    // The call after the analysis is still constrained: an argument the strict schema lacks is refused.
    expect(await feed(turn('{"town":"Paris"}'))).toBeGreaterThan(0);
  });
});

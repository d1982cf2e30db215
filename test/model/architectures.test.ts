/**
 * Every common export layout and family loads through the registry and answers over HTTP:
 * llama (external weights, q8 file name), qwen2 (chat_template.jinja), gemma (strict template),
 * and a BERT encoder (CLS pooling, declared prefix).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { buildApp } from '../../src/app.js';
import type { LocalInferenceService } from '../../src/inference/service.js';
import { scanModels } from '../../src/models/registry.js';
import { buildFixtureModels, CHAT_FIXTURES } from '../helpers/fixture-models.js';
import { ANTHROPIC_HEADERS, JSON_HEADERS } from '../helpers/inject.js';
import { startRealService } from '../helpers/real-service.js';

let dir: string;
let service: LocalInferenceService;
let app: FastifyInstance;
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fixtures-'));
  buildFixtureModels(dir);
  service = await startRealService({ modelsDir: dir });
  app = await buildApp({ config: { apiKeys: [], bodyLimit: 1 << 20, pingIntervalMs: 60_000 }, inference: service });
  env.allowRemoteModels = false;
  env.localModelPath = `${dir}/`;
});
afterAll(async () => {
  await app?.close();
  await service?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('model folders in Hugging Face layouts', () => {
  it('the registry reads each folder as users bring it', () => {
    const { models, skipped } = scanModels({ modelsDir: dir, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    const byId = Object.fromEntries(models.map((m) => [m.id, m]));
    expect(byId['llama3-tiny']).toMatchObject({ task: 'chat', dtype: 'q8', onnxFile: 'onnx/model_quantized.onnx', externalDataChunks: 1, contextLength: 2048 });
    expect(byId['llama3-chunked']).toMatchObject({ task: 'chat', dtype: 'fp32', onnxFile: 'onnx/model.onnx' });
    expect(byId['llama3-chunked']!.externalDataChunks).toBeGreaterThan(1);
    expect(byId['qwen2-tiny']).toMatchObject({ task: 'chat', dtype: 'fp32' });
    expect(byId['gemma3-tiny']).toMatchObject({ task: 'chat', dtype: 'q4', onnxFile: 'onnx/model_q4.onnx' });
    expect(byId['bert-tiny']).toMatchObject({ task: 'embedding', pooling: 'cls', prefix: 'query: ', contextLength: 128 });
    expect(fs.existsSync(path.join(dir, 'qwen2-tiny', 'chat_template.jinja'))).toBe(true);
  });

  it.each(Object.keys(CHAT_FIXTURES))('%s answers /v1/messages with usage equal to count_tokens and its own tokenizer', async (id) => {
    const conversation = {
      model: id,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Hello there.' }, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Tell me a fact.' }],
    };
    const res = await app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: { ...conversation, max_tokens: 4, temperature: 0 } });
    expect(res.statusCode, res.body).toBe(200);
    const message = res.json();
    expect(message).toMatchObject({ type: 'message', model: id, stop_reason: 'max_tokens', usage: { output_tokens: 4 } });
    const count = await app.inject({ method: 'POST', url: '/v1/messages/count_tokens', headers: ANTHROPIC_HEADERS, payload: conversation });
    expect(count.json()).toEqual({ input_tokens: message.usage.input_tokens });

    const tokenizer = await AutoTokenizer.from_pretrained(id);
    const jinja = path.join(dir, id, 'chat_template.jinja');
    const rendered = tokenizer.apply_chat_template(
      [{ role: 'system', content: 'Be brief.' }, ...conversation.messages],
      // Thinking off unless asked for: a template with Qwen3's switch renders its empty think pair.
      { tokenize: false, add_generation_prompt: true, enable_thinking: false, ...(fs.existsSync(jinja) ? { chat_template: fs.readFileSync(jinja, 'utf8') } : {}) } as never,
    ) as unknown as string;
    expect(message.usage.input_tokens).toBe(tokenizer.encode(rendered, { add_special_tokens: false }).length);
  });

  it('the BERT encoder answers /v1/embeddings with CLS-pooled unit vectors of the prefixed text', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/engines/bert-tiny/embeddings', headers: JSON_HEADERS, payload: { input: ['rivers and bridges', 'music'] } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.data).toHaveLength(2);
    for (const { embedding } of body.data) expect(Math.abs(Math.hypot(...embedding) - 1)).toBeLessThan(1e-5);
    const tokenizer = await AutoTokenizer.from_pretrained('bert-tiny');
    // [CLS] query : rivers and bridges [SEP] + [CLS] query : music [SEP]
    expect(body.usage.prompt_tokens).toBe(tokenizer.encode('query: rivers and bridges').length + tokenizer.encode('query: music').length);
    expect(body.usage.prompt_tokens).toBe(7 + 5);
  });
});

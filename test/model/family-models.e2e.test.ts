/**
 * The model-family test models (scripts/builders/families/family-models.ts: gpt-oss, DeepSeek
 * V3.1, Mistral, GLM-4.6, Kimi K2, MiniMax M2 tokenizers and templates on tiny random weights)
 * load through the registry and the ONNX engine, count a conversation's tokens as their own
 * tokenizer counts the prompt their template renders, and carry their markers as single tokens,
 * special exactly where the builder says.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { buildApp } from '../../src/app.js';
import { scanModels } from '../../src/models/registry.js';
import { buildFamilyModels, FAMILY_MODELS, templateText } from '../../scripts/builders/families/family-models.js';
import { ANTHROPIC_HEADERS } from '../helpers/inject.js';
import { ROOT } from '../helpers/paths.js';
import { startRealService, type RealService } from '../helpers/real-service.js';

const DIR = path.join(ROOT, 'test-artifacts', 'family-models');
const IDS = Object.keys(FAMILY_MODELS);

/** Rebuilds when the builder, its specs or the templates change (a stamp of them beside the folders). */
function ensureBuilt(): void {
  const hash = createHash('sha256');
  hash.update(fs.readFileSync(path.join(ROOT, 'scripts/builders/families/family-models.ts')));
  for (const spec of Object.values(FAMILY_MODELS)) hash.update(templateText(spec.template));
  const stamp = hash.digest('hex');
  const stampFile = path.join(DIR, 'stamp');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp && IDS.every((id) => fs.existsSync(path.join(DIR, id, 'onnx', 'model.onnx')))) return;
  fs.rmSync(DIR, { recursive: true, force: true });
  buildFamilyModels(DIR);
  fs.writeFileSync(stampFile, stamp);
}

/** Each model's tokenizer, loaded once (a full vocabulary takes seconds). */
const tokenizers = new Map<string, ReturnType<typeof AutoTokenizer.from_pretrained>>();
const tokenizerOf = (id: string) => {
  if (!tokenizers.has(id)) tokenizers.set(id, AutoTokenizer.from_pretrained(id));
  return tokenizers.get(id)!;
};

beforeAll(() => {
  ensureBuilt();
  env.allowRemoteModels = false;
  env.localModelPath = `${DIR}/`;
}, 300_000);

const CONVERSATION = {
  system: 'Be brief.',
  messages: [
    { role: 'user' as const, content: 'Hello there.' },
    { role: 'assistant' as const, content: 'Hi.' },
    { role: 'user' as const, content: 'Tell me a fact.' },
  ],
};

describe('model-family test models', () => {
  it('the registry reads each as a chat model', () => {
    const { models, skipped } = scanModels({ modelsDir: DIR, defaultPoolSize: 1 });
    expect(skipped).toEqual([]);
    for (const id of IDS) expect(models.find((m) => m.id === id), id).toMatchObject({ task: 'chat', dtype: 'fp32' });
  });

  it.each(IDS)('%s: the family\'s template, and its markers single tokens, special as the family makes them', async (id) => {
    const tokenizer = await tokenizerOf(id);
    expect((tokenizer as unknown as { chat_template: string }).chat_template).toBe(templateText(FAMILY_MODELS[id]!.template));
    for (const marker of FAMILY_MODELS[id]!.markers) {
      const ids = tokenizer.encode(marker.content, { add_special_tokens: false });
      expect(ids, marker.content).toHaveLength(1);
      if (marker.id !== undefined) expect(ids[0], marker.content).toBe(marker.id);
      const shown = tokenizer.decode([...tokenizer.encode('a', { add_special_tokens: false }), ...ids], { skip_special_tokens: true });
      expect(shown, marker.content).toBe(marker.special ? 'a' : `a${marker.content}`);
    }
  });

  // One model served at a time: six full vocabularies in one service's workers made closing the
  // test process outlast vitest's limit on two loaded cores.
  describe.each(IDS)('%s served', (id) => {
    let service: RealService;
    let app: FastifyInstance;
    beforeAll(async () => {
      service = await startRealService({ modelsDir: DIR, only: [id] });
      app = await buildApp({ config: { apiKeys: [], bodyLimit: 1 << 20, pingIntervalMs: 60_000 }, inference: service });
    });
    afterAll(async () => {
      await app?.close();
      await service?.close();
    });

    it('count_tokens and a reply\'s usage equal its tokenizer\'s count of the prompt its template renders', async () => {
      const count = await app.inject({ method: 'POST', url: '/v1/messages/count_tokens', headers: ANTHROPIC_HEADERS, payload: { model: id, ...CONVERSATION } });
      expect(count.statusCode, count.body).toBe(200);
      const reply = await app.inject({ method: 'POST', url: '/v1/messages', headers: ANTHROPIC_HEADERS, payload: { model: id, ...CONVERSATION, max_tokens: 2, temperature: 0 } });
      expect(reply.statusCode, reply.body).toBe(200);
      expect(reply.json().usage.input_tokens).toBe(count.json().input_tokens);

      const tokenizer = await tokenizerOf(id);
      const rendered = tokenizer.apply_chat_template([{ role: 'system', content: CONVERSATION.system }, ...CONVERSATION.messages], {
        tokenize: false,
        add_generation_prompt: true,
        enable_thinking: false,
      } as never) as unknown as string;
      expect(count.json().input_tokens).toBe(tokenizer.encode(rendered, { add_special_tokens: false }).length);
    });
  });
});

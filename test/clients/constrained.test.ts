/**
 * Grammar-constrained decoding against a listening server on the bundled chat model, whose random
 * weights are the honest stress case: only the grammar can make its output valid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import Anthropic from '@anthropic-ai/sdk';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'test-key';
let server: RealServer;
let client: Anthropic;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL] });
  client = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
});
afterAll(() => server?.close());

const ajv = new Ajv({ strict: false });
const PERSON = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 }, tags: { type: 'array', items: { type: 'string', enum: ['a', 'bb'] }, minItems: 1, maxItems: 3 } },
  required: ['name', 'age', 'tags'],
  additionalProperties: false,
};

describe('structured outputs', () => {
  it('smoke', async () => {
    for (const seed of [1, 2, 3]) {
      const t0 = performance.now();
      const msg = await client.messages.create({ model: CHAT_MODEL, max_tokens: 60, temperature: 1, messages: [{ role: 'user', content: `person ${seed}` }], output_config: { format: { type: 'json_schema', schema: PERSON } } } as never);
      const text = (msg.content[0] as { text: string }).text;
      console.log(performance.now() - t0, msg.stop_reason, msg.usage.output_tokens, text);
      expect(ajv.validate(PERSON, JSON.parse(text)), text).toBe(true);
    }
  });
});

/**
 * Image input judged by the official clients against a listening server on the bundled chat model:
 * `@anthropic-ai/sdk` with an image block (in a user turn and in a tool_result) and `openai` with an
 * image_url part each get a 400 whose message names the model and why it takes no image (no model
 * takes images until the vision engine lands, issue 42), raised as the SDKs' BadRequestError; and the
 * service itself refuses images for such a model before anything reaches its workers (the model is
 * never even loaded).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { CoreError } from '../../src/core/errors.js';
import { NO_IMAGE_INPUT } from '../../src/core/model.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { bytesOf, dataUrl, IMAGES } from '../../scripts/fuzz/images.js';

const KEY = 'sk-images';
let server: RealServer;
let reason: string;
beforeAll(async () => {
  // Nothing loads at start: every refusal below comes before the model would have to load.
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL], lifecycle: { pinned: [], keepAliveMs: -1, maxLoadedModels: 0, loadTimeoutMs: 60_000 } });
  reason = `${CHAT_MODEL} takes no image input (${NO_IMAGE_INPUT[server.service.findModel(CHAT_MODEL)!.engine]})`;
});
afterAll(() => server?.close());

/** The error a client call raised (it must raise one). */
async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  const error = await call.then(() => undefined, (e: unknown) => e);
  expect(error, 'the call must fail').toBeDefined();
  return error as { status: number; message: string };
}

describe('image input to a model that takes none, through the SDKs', () => {
  it('@anthropic-ai/sdk: an image block, and one inside a tool_result, are a BadRequestError naming the model and the block', async () => {
    const anthropic = new Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
    const image: Anthropic.ImageBlockParam = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGES.png } };
    const plain = await refusal(anthropic.messages.create({ model: CHAT_MODEL, max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image] }] }));
    expect(plain).toBeInstanceOf(Anthropic.BadRequestError);
    expect(plain.status).toBe(400);
    expect(plain.message).toContain(`messages.0.content.1: ${reason}`);
    const inResult = await refusal(anthropic.messages.countTokens({
      model: CHAT_MODEL,
      messages: [
        { role: 'user', content: 'Take a screenshot.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [image] }] },
      ],
    }));
    expect(inResult).toBeInstanceOf(Anthropic.BadRequestError);
    expect(inResult.message).toContain(`messages.2.content.0.content.0: ${reason}`);
  });

  it('openai: an image_url data URL is a BadRequestError naming the model and the part', async () => {
    const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const error = await refusal(openai.chat.completions.create({
      model: CHAT_MODEL, max_tokens: 5,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: dataUrl(IMAGES.jpeg, 'image/jpeg'), detail: 'low' } }] }],
    }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toContain(`messages[0].content[1]: ${reason}`);
  });

  it('the service refuses images for the model before its workers see them', async () => {
    const bytes = new Uint8Array(bytesOf(IMAGES.png));
    const images = [{ mediaType: 'image/png' as const, bytes, width: 3, height: 2, hash: 'h', offset: 0 }];
    const error = await server.service.countTokens({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'x', images }] }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(CoreError);
    expect(error).toMatchObject({ code: 'image_input_unsupported', details: { model: CHAT_MODEL } });
    // No request above reached a worker: the model was never loaded.
    expect(server.service.status().models.find((m) => m.id === CHAT_MODEL)?.state).toBe('unloaded');
  });
});

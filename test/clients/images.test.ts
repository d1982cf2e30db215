/**
 * Image input judged by the official clients against a listening server.
 *
 * On the bundled vision model (tiny-qwen3-vl-random): Claude Code's screenshot turn through
 * `@anthropic-ai/sdk` (an image block in a user message, one in a tool_result), and an `openai`
 * image_url data URL (at detail low and high too), are served with exact counts: each image is its
 * tokens as worked out by hand from the model's preprocessor_config.json
 * (test/model/vision-model.test.ts: 300x200 -> 70, 500x333 -> 160; a 1000x700 image 682 at detail
 * high, 247 at low: test/unit/vision-resolution.test.ts) plus its two markers (<|vision_start|>, <|vision_end|>), over the same text
 * without it; a repeated image is a cache read, another image of the same size is not.
 *
 * On the bundled Gemma 3-shaped model (tiny-gemma3-vl-random): an `openai` image_url counted
 * exactly (its processor_config.json's 16 soft tokens per image, its markers and blank lines,
 * by hand) and read from the cache when repeated, and an image turn streamed under a forced tool
 * call's grammar.
 *
 * On the bundled text model: an image block, in a user turn or a tool_result, and an image_url part
 * each get a 400 whose message names the model and why it takes no image, raised as the SDKs'
 * BadRequestError; and the service itself refuses images for such a model before anything reaches
 * its workers (the model is never even loaded).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { CoreError } from '../../src/core/errors.js';
import { NO_IMAGE_INPUT } from '../../src/core/model.js';
import sharp from 'sharp';
import { CHAT_MODEL, GEMMA_VISION_MODEL, MODELS_DIR, VISION_MODEL } from '../helpers/paths.js';
import { promptTokens, startRealServer, type RealServer } from '../helpers/real-server.js';
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

/** A width x height PNG, base64; `shade` changes its pixels, not its size. */
async function png(width: number, height: number, shade = 128): Promise<string> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) raw.set([(i % width) % 256, Math.floor(i / width) % 256, shade], i * 3);
  return (await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer()).toString('base64');
}

/** An image's tokens, by hand (see the module comment), and the two markers around them. */
const SMALL_TOKENS = 70 + 2;
const WIDE_TOKENS = 160 + 2;
/**
 * A 1000x700 image at OpenAI's detail high (the model's own settings) and low (max_pixels lowered to
 * 512 x 512), by hand from preprocessor_config.json (16-pixel patches merged 2x2, one token per 32x32
 * pixels, 65,536 to 16,777,216 pixels; test/unit/vision-resolution.test.ts). High: 1000 and 700
 * round to 992 x 704 (698,368 pixels, in bounds), 31 x 22 tokens = 682. Low: 698,368 is over
 * 262,144, so both sides shrink by sqrt(700,000 / 262,144) = 1.6341 and round down to 32: 608 x 416,
 * 19 x 13 tokens = 247.
 */
const PHOTO_HIGH_TOKENS = 682 + 2;
const PHOTO_LOW_TOKENS = 247 + 2;

describe('image input served by the bundled vision model, through the SDKs', () => {
  let vision: RealServer;
  let small: string;
  let smallOther: string;
  let wide: string;
  beforeAll(async () => {
    // The bundled models' folder on either engine's pass: the vision model is ONNX.
    vision = await startRealServer({ apiKeys: [KEY], modelsDir: MODELS_DIR, only: [VISION_MODEL] });
    [small, smallOther, wide] = await Promise.all([png(300, 200), png(300, 200, 7), png(500, 333)]);
  });
  afterAll(() => vision?.close());

  it('GET /v1/models says the vision model takes images', async () => {
    const res = await fetch(`${vision.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    const { data } = (await res.json()) as { data: Array<{ id: string; capabilities: { image_input: { supported: boolean } } }> };
    expect(data.find((m) => m.id === VISION_MODEL)?.capabilities.image_input.supported).toBe(true);
  });

  it('@anthropic-ai/sdk: a screenshot in a user message and one in a tool_result, counted exactly; the repeated request reads them from the cache', async () => {
    const anthropic = new Anthropic({ baseURL: vision.url, apiKey: KEY, maxRetries: 0 });
    const image = (data: string): Anthropic.ImageBlockParam => ({ type: 'image', source: { type: 'base64', media_type: 'image/png', data } });
    const turn = (user: string, result: string): Anthropic.MessageParam[] => [
      { role: 'user', content: [{ type: 'text', text: 'What is on my screen?' }, image(user)] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'the screen' }, image(result)] }] },
    ];
    const textOnly: Anthropic.MessageParam[] = [
      { role: 'user', content: 'What is on my screen?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'the screen' }] },
    ];
    const text = (await anthropic.messages.countTokens({ model: VISION_MODEL, messages: textOnly })).input_tokens;
    const counted = (await anthropic.messages.countTokens({ model: VISION_MODEL, messages: turn(small, wide) })).input_tokens;
    expect(counted).toBe(text + SMALL_TOKENS + WIDE_TOKENS);

    const first = await anthropic.messages.create({ model: VISION_MODEL, max_tokens: 4, messages: turn(small, wide) });
    expect(promptTokens(first.usage)).toBe(counted);
    // The same screenshots again: all but the prompt's last token is a cache read.
    const again = await anthropic.messages.create({ model: VISION_MODEL, max_tokens: 4, messages: turn(small, wide) });
    expect(promptTokens(again.usage)).toBe(counted);
    expect(again.usage.cache_read_input_tokens).toBe(counted - 1);
    // Another first screenshot of the same size (the same tokens): nothing from it on is read, not even its opening marker.
    const other = await anthropic.messages.create({ model: VISION_MODEL, max_tokens: 4, messages: turn(smallOther, wide) });
    expect(promptTokens(other.usage)).toBe(counted);
    expect(other.usage.cache_read_input_tokens ?? 0).toBeLessThanOrEqual(counted - SMALL_TOKENS - WIDE_TOKENS);
  });

  it('openai: an image_url data URL, counted exactly; the repeated request is a cache read', async () => {
    const openai = new OpenAI({ baseURL: `${vision.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const ask = (url?: string) => openai.chat.completions.create({
      model: VISION_MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe this picture.' }, ...(url ? [{ type: 'image_url' as const, image_url: { url } }] : [])] }],
    });
    const text = (await ask()).usage!.prompt_tokens;
    const first = await ask(dataUrl(wide));
    expect(first.usage!.prompt_tokens).toBe(text + WIDE_TOKENS);
    const again = await ask(dataUrl(wide));
    expect(again.usage!.prompt_tokens_details?.cached_tokens).toBe(text + WIDE_TOKENS - 1);
  });

  it('openai: detail low and high on a 1000x700 image, counted exactly as the processor config says, both served; the cache tells them apart', async () => {
    const openai = new OpenAI({ baseURL: `${vision.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const photo = dataUrl(await png(1000, 700));
    const ask = (detail?: 'low' | 'high') => openai.chat.completions.create({
      model: VISION_MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [...(detail ? [{ type: 'image_url' as const, image_url: { url: photo, detail } }] : []), { type: 'text', text: 'Describe this picture.' }] }],
    });
    const text = (await ask()).usage!.prompt_tokens;
    const high = await ask('high');
    expect(high.usage!.prompt_tokens).toBe(text + PHOTO_HIGH_TOKENS);
    expect(high.usage!.completion_tokens).toBeGreaterThan(0);
    // The same bytes at low detail: fewer tokens, other features; nothing from the image on is read
    // from the cache (the template puts <|im_start|>, user and a newline before <|vision_start|>).
    const low = await ask('low');
    expect(low.usage!.prompt_tokens).toBe(text + PHOTO_LOW_TOKENS);
    expect(low.usage!.completion_tokens).toBeGreaterThan(0);
    expect(low.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeLessThanOrEqual(3);
    // Each again is a read of its own.
    expect((await ask('low')).usage!.prompt_tokens_details?.cached_tokens).toBe(text + PHOTO_LOW_TOKENS - 1);
    expect((await ask('high')).usage!.prompt_tokens_details?.cached_tokens).toBe(text + PHOTO_HIGH_TOKENS - 1);
  });

  it('an image whose pixels do not decode past a valid header, and one too narrow for the processor, are BadRequestErrors naming the image', async () => {
    const anthropic = new Anthropic({ baseURL: vision.url, apiKey: KEY, maxRetries: 0 });
    const ask = (data: string) => anthropic.messages.create({ model: VISION_MODEL, max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] }] });
    // The signature and IHDR chunk (the first 33 bytes) intact, the image data scrambled.
    const corrupt = Buffer.from(small, 'base64');
    for (let i = 60; i < corrupt.length - 20; i++) corrupt[i] = (i * 7) & 255;
    const unreadable = await refusal(ask(corrupt.toString('base64')));
    expect(unreadable).toBeInstanceOf(Anthropic.BadRequestError);
    expect(unreadable.message).toContain(`Image 1 of the prompt cannot be read by the model \`${VISION_MODEL}\`'s image processor: its bytes do not decode`);
    // 4020x20: the processor scales the short side up to 32, which makes it 201:1.
    const narrow = await refusal(ask(await png(4020, 20)));
    expect(narrow).toBeInstanceOf(Anthropic.BadRequestError);
    expect(narrow.message).toContain('Image 1 of the prompt cannot be read by the model `tiny-qwen3-vl-random`\'s image processor: it is 4020x20: an aspect ratio of 201:1 (the model\'s image processor takes at most 200:1)');
    // Streamed too: the images are decoded before the reply starts, so it is the same 400.
    const streamed = await refusal(anthropic.messages.stream({ model: VISION_MODEL, max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: corrupt.toString('base64') } }] }] }).finalMessage());
    expect(streamed).toBeInstanceOf(Anthropic.BadRequestError);
    expect(streamed.message).toContain('its bytes do not decode');
    // The server serves on.
    expect((await ask(small)).usage.output_tokens).toBeGreaterThan(0);
  });

  it('an image turn streams under a forced tool call\'s grammar, as a text turn does', async () => {
    const anthropic = new Anthropic({ baseURL: vision.url, apiKey: KEY, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      model: VISION_MODEL, max_tokens: 200,
      tools: [{ name: 'click', description: 'Click a point on the screen', input_schema: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'], additionalProperties: false } }],
      tool_choice: { type: 'tool', name: 'click' },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Click the button.' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: small } }] }],
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    const call = message.content.find((b) => b.type === 'tool_use');
    expect(call).toMatchObject({ name: 'click', input: { x: expect.any(Number), y: expect.any(Number) } });
    expect(Object.keys(call!.input as object).sort()).toEqual(['x', 'y']);
  });

  it('POST /v1/responses/input_tokens counts an input_image as its tokens', async () => {
    const count = async (content: unknown[]) => {
      const res = await fetch(`${vision.url}/v1/responses/input_tokens`, {
        method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: VISION_MODEL, input: [{ role: 'user', content }] }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { input_tokens: number }).input_tokens;
    };
    const text = await count([{ type: 'input_text', text: 'Two pictures' }]);
    expect(await count([{ type: 'input_text', text: 'Two pictures' }, { type: 'input_image', image_url: dataUrl(small) }, { type: 'input_image', image_url: dataUrl(wide) }])).toBe(text + SMALL_TOKENS + WIDE_TOKENS);
    // detail: a 1000x700 image at low and at high; a small one is the same at low (under the budget already).
    const photo = dataUrl(await png(1000, 700));
    expect(await count([{ type: 'input_text', text: 'Two pictures' }, { type: 'input_image', image_url: photo, detail: 'low' }, { type: 'input_image', image_url: dataUrl(small), detail: 'low' }])).toBe(text + PHOTO_LOW_TOKENS + SMALL_TOKENS);
    expect(await count([{ type: 'input_text', text: 'Two pictures' }, { type: 'input_image', image_url: photo, detail: 'high' }, { type: 'input_image', image_url: dataUrl(small), detail: 'auto' }])).toBe(text + PHOTO_HIGH_TOKENS + SMALL_TOKENS);
  });
});

describe('image input served by the bundled Gemma 3-shaped model, through the SDKs', () => {
  let gemma: RealServer;
  let small: string;
  beforeAll(async () => {
    gemma = await startRealServer({ apiKeys: [KEY], modelsDir: MODELS_DIR, only: [GEMMA_VISION_MODEL] });
    small = await png(300, 200);
  });
  afterAll(() => gemma?.close());

  it('openai: an image_url after the text, counted exactly; the repeated request is a cache read', async () => {
    const openai = new OpenAI({ baseURL: `${gemma.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const ask = (url?: string) => openai.chat.completions.create({
      model: GEMMA_VISION_MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe this picture.' }, ...(url ? [{ type: 'image_url' as const, image_url: { url } }] : [])] }],
    });
    const text = (await ask()).usage!.prompt_tokens;
    // By hand: Gemma 3's template renders the image as <start_of_image> after "picture.", which
    // Gemma3Processor makes "\n\n" <start_of_image> + image_seq_length (16, processor_config.json)
    // soft tokens + <end_of_image> "\n\n" before <end_of_turn>: 16 + 2 markers + 2 blank-line tokens,
    // whatever the image's size (every image is resized to 64x64).
    const first = await ask(dataUrl(small));
    expect(first.usage!.prompt_tokens).toBe(text + 20);
    const again = await ask(dataUrl(small));
    expect(again.usage!.prompt_tokens_details?.cached_tokens).toBe(text + 20 - 1);
  });

  it("@anthropic-ai/sdk: an image turn streams under a forced tool call's grammar", async () => {
    const anthropic = new Anthropic({ baseURL: gemma.url, apiKey: KEY, maxRetries: 0 });
    const stream = anthropic.messages.stream({
      // Greedy, one call, each coordinate one of a few values: the grammar's output is short and the
      // same every run (the bundled model's generation_config samples, an open integer let the random
      // model write digits to the limit, and parallel calls let it write calls to the limit).
      model: GEMMA_VISION_MODEL, max_tokens: 200, temperature: 0,
      tools: [{ name: 'click', description: 'Click a point on the screen', input_schema: { type: 'object', properties: { x: { type: 'integer', enum: [10, 20, 30] }, y: { type: 'integer', enum: [10, 20, 30] } }, required: ['x', 'y'], additionalProperties: false } }],
      tool_choice: { type: 'tool', name: 'click', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Click the button.' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: small } }] }],
    });
    let events = 0;
    stream.on('streamEvent', () => events++);
    const message = await stream.finalMessage();
    expect(events).toBeGreaterThan(3);
    expect(message.stop_reason).toBe('tool_use');
    const call = message.content.find((b) => b.type === 'tool_use');
    expect(call).toMatchObject({ name: 'click', input: { x: expect.any(Number), y: expect.any(Number) } });
    expect(Object.keys(call!.input as object).sort()).toEqual(['x', 'y']);
  });
});

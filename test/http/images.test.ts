/**
 * Image input in every chat dialect over app.inject with the fake inference service: image blocks and
 * parts parsed and checked from their bytes (format, header size, pixel, byte and count limits), each
 * failure a 400 in the dialect's envelope naming the block; a well-formed image to a model that takes
 * none refused naming the model; on a model that takes images (a fake one: none exists yet), the core
 * type the service receives. URL sources: refused with the fetch setting off, fetched from a loopback
 * server with it and the private-range setting on, refused before connecting with the latter off.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { ImageSettings } from '../../src/http/shared/image-settings.js';
import { FAKE_CHAT, FakeInference } from '../helpers/fake-inference.js';
import { ANTHROPIC_HEADERS, JSON_HEADERS } from '../helpers/inject.js';
import { bytesOf, dataUrl, imageBody, IMAGES, pngBomb, TRUNCATED_PNG, type ImageDialect, type WireImage } from '../../scripts/fuzz/images.js';
import type { ModelInfo } from '../../src/models/registry.js';

/** The fetch time limit of the tests of servers that never answer. */
const FETCH_TIMEOUT_MS = 200;

const FAKE_VISION: ModelInfo = { ...FAKE_CHAT, id: 'fake-vision', aliases: [], displayName: 'Fake vision', imageInput: true };

/** The fake service with one more chat model, which takes images (what the vision step will add for real). */
class VisionFake extends FakeInference {
  override listModels(): ModelInfo[] {
    return [...super.listModels(), FAKE_VISION];
  }
}

async function appWith(images: Partial<ImageSettings> = {}): Promise<{ app: FastifyInstance; fake: VisionFake }> {
  const fake = new VisionFake();
  const app = await buildApp({ config: { apiKeys: [], bodyLimit: 1024 * 1024, pingIntervalMs: 60_000, ...images }, inference: fake });
  return { app, fake };
}

type Dialect = 'anthropic' | 'openai' | 'responses';
/** The fuzzer's request builder, by this file's dialect names. */
const WIRE: Record<Dialect, ImageDialect> = { anthropic: 'messages', openai: 'chat', responses: 'responses' };
const body = (dialect: Dialect, model: string, sources: WireImage[]) => imageBody(WIRE[dialect], model, sources);

const ROUTES: Record<Dialect, { url: string; count: string; headers: Record<string, string>; block: (j: number) => string }> = {
  anthropic: { url: '/v1/messages', count: '/v1/messages/count_tokens', headers: ANTHROPIC_HEADERS, block: (j) => `messages.0.content.${j}` },
  openai: { url: '/v1/chat/completions', count: '/tokenize', headers: JSON_HEADERS, block: (j) => `messages[0].content[${j}]` },
  responses: { url: '/v1/responses', count: '/v1/responses/input_tokens', headers: JSON_HEADERS, block: (j) => `input[0].content[${j}]` },
};

const post = (app: FastifyInstance, dialect: Dialect, payload: object, url = ROUTES[dialect].url) =>
  app.inject({ method: 'POST', url, headers: ROUTES[dialect].headers, payload });

/** The answer is a 400 in the dialect's envelope whose message names the block and says `says`. */
function expect400(dialect: Dialect, res: { statusCode: number; json(): any }, block: string, says: string | RegExp) {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(400);
  const { error } = res.json();
  if (dialect === 'anthropic') expect(res.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  else expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(error.message).toContain(`${block}:`);
  expect(error.message).toMatch(says);
}

const DIALECTS: Dialect[] = ['anthropic', 'openai', 'responses'];

describe.each(DIALECTS)('image input, %s dialect', (dialect) => {
  let app: FastifyInstance;
  let fake: VisionFake;
  beforeAll(async () => ({ app, fake } = await appWith({ imagesPerRequest: 3, imageMaxBytes: 4096 })));
  afterAll(() => app.close());
  const at = ROUTES[dialect].block;

  it('a well-formed image to a text-only model: 400 naming the model and why', async () => {
    const res = await post(app, dialect, body(dialect, 'fake-chat', [{ base64: IMAGES.png }]));
    expect400(dialect, res, at(1), 'fake-chat takes no image input (text-only onnx model)');
    expect(fake.calls.chat).toHaveLength(0);
  });

  it('counting tokens with an image on a text-only model: the same refusal', async () => {
    const payload = dialect === 'openai' ? { ...body(dialect, 'fake-chat', [{ base64: IMAGES.png }]), max_tokens: undefined } : body(dialect, 'fake-chat', [{ base64: IMAGES.png }]);
    if (dialect === 'anthropic') delete (payload as { max_tokens?: number }).max_tokens;
    if (dialect === 'responses') delete (payload as { max_output_tokens?: number }).max_output_tokens;
    const res = await post(app, dialect, payload, ROUTES[dialect].count);
    expect400(dialect, res, at(1), 'fake-chat takes no image input');
  });

  it.each([
    ['png', 'image/png'],
    ['jpeg', 'image/jpeg'],
    ['webpLossy', 'image/webp'],
    ['webpLossless', 'image/webp'],
    ['gif', 'image/gif'],
  ] as const)('a %s reaches a model that takes images as the core type: bytes, format, size, hash, place', async (name, mediaType) => {
    const before = fake.calls.chat.length;
    const res = await post(app, dialect, body(dialect, 'fake-vision', [{ base64: IMAGES[name], mediaType }]));
    expect(res.statusCode, res.body).toBe(200);
    const message = fake.calls.chat[before]!.messages.at(-1)!;
    expect(message).toMatchObject({ role: 'user', content: 'look' });
    const [image] = (message as { images: unknown[] }).images as Array<Record<string, unknown>>;
    const bytes = bytesOf(IMAGES[name]);
    expect(image).toEqual({ mediaType, bytes: new Uint8Array(bytes), width: 3, height: 2, hash: createHash('sha256').update(bytes).digest('hex'), offset: 4 });
    // Its own buffer, not a view of Node's shared Buffer pool (which a structured clone would copy whole).
    expect((image!.bytes as Uint8Array).buffer.byteLength).toBe(bytes.length);
  });

  it('bad base64: 400 naming the block', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ base64: 'not*base64!' }])), at(1), 'not valid base64');
  });

  it('a media type that is not the data\'s: 400', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ base64: IMAGES.png, mediaType: 'image/jpeg' }])), at(1), 'the image data is PNG but its media type says image/jpeg');
  });

  it('a media type not accepted, and bytes of no image format: 400', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ base64: IMAGES.png, mediaType: 'image/bmp' }])), at(1), 'the media type `image/bmp` is not accepted');
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ base64: Buffer.from('hello, world').toString('base64') }])), at(1), 'not a PNG, JPEG, WebP or GIF');
  });

  it('a truncated header: 400', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ base64: TRUNCATED_PNG }])), at(1), 'PNG header is cut short');
  });

  it('a bomb (100000x100000 declared in 90 bytes): 400 before decoding', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ base64: pngBomb() }])), at(1), /100000x100000 \(10000000000 pixels\), over the 40000000 pixels accepted .* refused before decoding/);
  });

  it('more images than a request may carry: 400 naming the first one over', async () => {
    const four = Array.from({ length: 4 }, () => ({ base64: IMAGES.gif, mediaType: 'image/gif' }));
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', four)), at(4), 'more than 3 images in one request');
  });

  it('an image over the byte limit: 400', async () => {
    const big = Buffer.concat([bytesOf(IMAGES.png), Buffer.alloc(5000)]).toString('base64');
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ base64: big }])), at(1), /over the 4096 accepted \(--image-max-bytes\)/);
  });

  it('a URL source with fetching off: 400 that says how to turn it on', async () => {
    expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: 'https://example.com/cat.png' }])), at(1), '--image-url-fetch (IMAGE_URL_FETCH=true)');
  });
});

describe('dialect specifics', () => {
  let app: FastifyInstance;
  let fake: VisionFake;
  beforeAll(async () => ({ app, fake } = await appWith()));
  afterAll(() => app.close());

  it('Anthropic: an image inside a tool_result becomes the tool message\'s image', async () => {
    const res = await post(app, 'anthropic', {
      model: 'fake-vision', max_tokens: 5,
      messages: [
        { role: 'user', content: 'take a screenshot' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'here:' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: IMAGES.jpeg } }] }, { type: 'text', text: 'what is it?' }] },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const tool = fake.calls.chat.at(-1)!.messages.find((m) => m.role === 'tool')!;
    expect(tool).toMatchObject({ content: 'here:', images: [{ mediaType: 'image/jpeg', width: 3, height: 2, offset: 5 }] });
  });

  it('Anthropic: a tool_result image on a text-only model names the block inside it', async () => {
    const res = await post(app, 'anthropic', {
      model: 'fake-chat', max_tokens: 5,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: IMAGES.png } }] }] },
      ],
    });
    expect400('anthropic', res, 'messages.2.content.0.content.0', 'fake-chat takes no image input');
  });

  it('Anthropic: merged user turns keep each image at its place; an image-only turn is not empty', async () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: IMAGES.gif } };
    const res = await post(app, 'anthropic', { model: 'fake-vision', max_tokens: 5, messages: [{ role: 'user', content: 'ab' }, { role: 'user', content: [image] }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(fake.calls.chat.at(-1)!.messages).toMatchObject([{ role: 'user', content: 'ab\n\n', images: [{ offset: 4 }] }]);
  });

  it('Anthropic: an image in an assistant turn, and a file source, are refused', async () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: IMAGES.gif } };
    const assistant = await post(app, 'anthropic', { model: 'fake-vision', max_tokens: 5, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [image] }, { role: 'user', content: 'b' }] });
    expect400('anthropic', assistant, 'messages.1.content.0', 'image blocks belong to user messages');
    const file = await post(app, 'anthropic', { model: 'fake-vision', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f_1' } }] }] });
    expect400('anthropic', file, 'messages.0.content.0.source', 'the Files API');
  });

  it('OpenAI chat: detail low is a low-resolution view, high and auto the default; an image_url in a system message is refused', async () => {
    const res = await post(app, 'openai', { model: 'fake-vision', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(IMAGES.png), detail: 'low' } }, { type: 'text', text: 'hi' }] }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(fake.calls.chat.at(-1)!.messages[0]).toMatchObject({ content: 'hi', images: [{ offset: 0, lowResolution: true }] });
    for (const detail of ['high', 'auto', undefined]) {
      const other = await post(app, 'openai', { model: 'fake-vision', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(IMAGES.png), ...(detail ? { detail } : {}) } }] }] });
      expect(other.statusCode, other.body).toBe(200);
      const images = (fake.calls.chat.at(-1)!.messages[0] as { images: object[] }).images;
      expect(images[0], detail).not.toHaveProperty('lowResolution');
    }
    const system = await post(app, 'openai', { model: 'fake-vision', messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: dataUrl(IMAGES.png) } }] }, { role: 'user', content: 'x' }] });
    expect400('openai', system, 'messages[0].content[0]', 'image_url parts belong to user messages');
  });

  it('Responses: a file_id image is refused with the reason; an input_image in function_call_output is the tool result\'s', async () => {
    const file = await post(app, 'responses', { model: 'fake-vision', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] });
    expect(file.statusCode).toBe(400);
    expect(file.json().error).toMatchObject({ param: 'input[0].content[0].file_id', message: expect.stringContaining('file_id (the Files API) are not served') });
    const res = await post(app, 'responses', {
      model: 'fake-vision',
      input: [
        { role: 'user', content: 'look at it' },
        { type: 'function_call', call_id: 'c1', name: 'view_image', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_image', image_url: dataUrl(IMAGES.webpLossless, 'image/webp'), detail: 'low' }, { type: 'input_image', image_url: dataUrl(IMAGES.png), detail: 'high' }] },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const tool = fake.calls.chat.at(-1)!.messages.at(-1) as { images: object[] };
    expect(tool).toMatchObject({ role: 'tool', content: '', images: [{ mediaType: 'image/webp', lowResolution: true }, { mediaType: 'image/png' }] });
    expect(tool.images[1]).not.toHaveProperty('lowResolution');
  });

  it('a malformed image block or part: 400 naming the field, from the dialect\'s zod schema', async () => {
    const anthropic = (image: object) => post(app, 'anthropic', { model: 'fake-vision', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', ...image }] }] });
    expect400('anthropic', await anthropic({}), 'messages.0.content.0.source', 'Field required');
    expect400('anthropic', await anthropic({ source: { type: 'base64', data: IMAGES.png } }), 'messages.0.content.0.source.media_type', 'Field required');
    expect400('anthropic', await anthropic({ source: { type: 'url', url: 5 } }), 'messages.0.content.0.source.url', 'expected a string, got the integer 5');
    const chat = (part: object) => post(app, 'openai', { model: 'fake-vision', messages: [{ role: 'user', content: [{ type: 'image_url', ...part }] }] });
    expect400('openai', await chat({ image_url: { detail: 'low' } }), 'messages[0].content[0].image_url', 'matches none of the accepted forms');
    expect400('openai', await chat({ image_url: { url: dataUrl(IMAGES.png), detail: 'ultra' } }), 'messages[0].content[0].image_url', 'matches none of the accepted forms');
    const responses = (part: object) => post(app, 'responses', { model: 'fake-vision', input: [{ role: 'user', content: [{ type: 'input_image', ...part }] }] });
    expect400('responses', await responses({ image_url: dataUrl(IMAGES.png), detail: 'ultra' }), 'input[0].content[0].detail', 'expected one of "auto", "low", "high", "original"');
    expect400('responses', await responses({}), 'input[0].content[0].image_url', 'Field required');
  });

  it('vLLM /tokenize with messages: an image on a text-only model is refused', async () => {
    const res = await post(app, 'openai', { model: 'fake-chat', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(IMAGES.png) } }] }] }, '/tokenize');
    expect400('openai', res, 'messages[0].content[0]', 'fake-chat takes no image input');
  });

  it('GET /v1/models says per model whether it takes images (capabilities.image_input)', async () => {
    const models = (await app.inject({ method: 'GET', url: '/v1/models' })).json().data as Array<{ id: string; capabilities: { image_input: { supported: boolean } } | null }>;
    expect(Object.fromEntries(models.map((m) => [m.id, m.capabilities?.image_input.supported ?? null]))).toEqual({ 'fake-chat': false, 'fake-embed': null, 'fake-vision': true });
  });
});

describe('image URLs (a loopback server)', () => {
  let server: http.Server;
  let base: string;
  const served = new Map<string, Buffer>([['/cat.png', bytesOf(IMAGES.png)], ['/bomb.png', bytesOf(pngBomb())], ['/text.png', Buffer.from('not an image')], ['/big.png', Buffer.alloc(10_000)]]);
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits++;
      if (req.url === '/moved') return res.writeHead(302, { location: '/cat.png' }).end();
      if (req.url === '/bad-redirect') return res.writeHead(302, { location: 'http://[::1' }).end();
      // Never answers; or starts an answer and stalls; or streams past the byte limit without a length.
      if (req.url === '/hang.png') return;
      if (req.url === '/stall.png') return res.writeHead(200, { 'content-type': 'image/png' }).write(bytesOf(IMAGES.png).subarray(0, 10));
      if (req.url === '/chunked.png') {
        res.writeHead(200, { 'content-type': 'image/png' });
        for (let i = 0; i < 10; i++) res.write(Buffer.alloc(1000));
        return res.end();
      }
      const bytes = served.get(req.url ?? '');
      if (!bytes) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': bytes.length }).end(bytes);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => {
    server.close(resolve);
    server.closeAllConnections();
  }));

  it('with fetching and private addresses allowed: fetched (a redirect followed) and checked like base64', async () => {
    const { app, fake } = await appWith({ imageUrlFetch: true, imageUrlPrivate: true, imageMaxBytes: 4096 });
    try {
      for (const dialect of DIALECTS) {
        for (const path of ['/cat.png', '/moved']) {
          const res = await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}${path}` }]));
          expect(res.statusCode, res.body).toBe(200);
          expect(fake.calls.chat.at(-1)!.messages[0]).toMatchObject({ images: [{ mediaType: 'image/png', width: 3, height: 2, bytes: new Uint8Array(bytesOf(IMAGES.png)) }] });
        }
        const block = ROUTES[dialect].block(1);
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/bomb.png` }])), block, 'refused before decoding');
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/text.png` }])), block, 'not a PNG, JPEG, WebP or GIF');
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/big.png` }])), block, 'could not be fetched: the image is larger than 4096 bytes');
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/nope.png` }])), block, 'could not be fetched: the server answered 404');
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/bad-redirect` }])), block, 'could not be fetched: the server redirected to an invalid URL');
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-vision', [{ url: `${base}/chunked.png` }])), block, 'could not be fetched: the image is larger than 4096 bytes');
        // Fetched, checked, then refused by the model that takes none.
        expect400(dialect, await post(app, dialect, body(dialect, 'fake-chat', [{ url: `${base}/cat.png` }])), block, 'fake-chat takes no image input');
      }
    } finally {
      await app.close();
    }
  });

  it('a server that never answers, or stalls mid-answer: 400 once the time limit passes', async () => {
    const { app } = await appWith({ imageUrlFetch: true, imageUrlPrivate: true, imageUrlTimeoutMs: FETCH_TIMEOUT_MS });
    try {
      for (const path of ['/hang.png', '/stall.png']) {
        const started = Date.now();
        expect400('openai', await post(app, 'openai', body('openai', 'fake-vision', [{ url: `${base}${path}` }])), 'messages[0].content[1]', 'could not be fetched: timed out');
        expect(Date.now() - started).toBeLessThan(FETCH_TIMEOUT_MS * 10);
      }
    } finally {
      await app.close();
    }
  });

  it('with private addresses not allowed: refused before any connection (a literal and a name that resolves to loopback)', async () => {
    const { app } = await appWith({ imageUrlFetch: true });
    try {
      const before = hits;
      const port = (server.address() as AddressInfo).port;
      for (const dialect of DIALECTS) {
        for (const host of ['127.0.0.1', 'localhost', '[::1]']) {
          const res = await post(app, dialect, body(dialect, 'fake-vision', [{ url: `http://${host}:${port}/cat.png` }]));
          expect400(dialect, res, ROUTES[dialect].block(1), /is in a private, loopback or link-local range, which is not fetched unless the server is started with --image-url-private/);
        }
      }
      expect(hits).toBe(before);
    } finally {
      await app.close();
    }
  });
});

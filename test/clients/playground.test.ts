/**
 * The playground page (src/web, issue 31) in headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) against a listening server on the bundled models. Skipped, with the reason
 * printed, where no Chromium is installed (.ci/run installs it).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import sharp from 'sharp';
import { pngBomb } from '../../scripts/fuzz/images.js';
import { CHAT_MODEL, EMBED_MODEL, MODELS_DIR, ROOT, SERVED_MODELS_DIR, VISION_MODEL } from '../helpers/paths.js';
import { modelVariant } from '../helpers/model-variant.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { CHROMIUM, launchChromium, warnIfNoChromium, watchedPage, type Watched } from '../helpers/browser.js';

/** The page's renderer (src/web/markdown.js), a global of its scripts: used inside page.evaluate. */
declare const Markdown: { render(text: string): DocumentFragment };

warnIfNoChromium('playground.test.ts');

/** Screenshots of each view (git-ignored). */
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'playground');
const KEY = 'sk-playground-test';
/** How long the page may take to show a reply or a result. */
const PAGE_TIMEOUT_MS = 30_000;
/** Tests that load models or generate a few hundred tokens (slower on llama.cpp: npm run test:llama). */
const SLOW_TEST_TIMEOUT_MS = 120_000;
/** The keep-alive of the model that is not pinned (its idle timer shows in the server view). */
const IDLE_MS = 30 * 60_000;

const FIXED_REPLY = 'Hello from the playground.';
const XSS_REPLY = '<img src=x onerror="window.__pwned = 1"> and <b>bold</b>';
const THINKING_REPLY = '<think>\nPlanning the answer.\n</think>\n\nDone thinking.';
/** Long enough that a stop lands mid-stream: the scripted model writes it all unless cancelled. */
const LONG_REPLY = 'word '.repeat(2500);
/** Markdown the page must build as elements: a heading, bold, italic, inline code, a list, links, a code block. */
const MARKDOWN_REPLY = [
  '## Steps',
  '',
  'Use **bold** and *care* with `npm test`:',
  '',
  '- first item',
  '- the [docs](https://example.com/docs)',
  '- a [bad link](javascript:window.__pwned=1)',
  '',
  '```js',
  'const x = 1 < 2; // <b>not bold</b>',
  '```',
].join('\n');
/** A reply as a model would write it: the README's screenshot (docs/images/playground.png) is of it. */
const EXAMPLE_REPLY = [
  'To embed texts, call **`POST /v1/embeddings`** with the model\'s id:',
  '',
  '```sh',
  'curl http://127.0.0.1:8080/v1/embeddings \\',
  "  -H 'content-type: application/json' \\",
  '  -d \'{"model": "glove-sif-100d", "input": ["The cat sat.", "A cat sat down."]}\'',
  '```',
  '',
  'The answer holds:',
  '',
  '1. one vector per input, in `data[i].embedding`;',
  '2. the token count, in `usage.prompt_tokens`.',
  '',
  'The *Embeddings* tab shows the cosine similarity of each pair.',
].join('\n');
/** The bundled chat model again under another id (a manifest of its own), to switch between two. */
const SECOND_MODEL = 'tiny-qwen3-second';

/**
 * A models folder with both bundled models (their files linked), SECOND_MODEL, and the bundled vision
 * model (ONNX on either engine's pass: from models/); the caller removes it.
 */
function modelsFolder(): string {
  const dir = modelVariant(CHAT_MODEL, SECOND_MODEL, { 'manifest.json': { contextLength: 4096 } });
  for (const [from, id] of [[SERVED_MODELS_DIR, CHAT_MODEL], [SERVED_MODELS_DIR, EMBED_MODEL], [MODELS_DIR, VISION_MODEL]] as const) {
    fs.mkdirSync(path.join(dir, id));
    for (const entry of fs.readdirSync(path.join(from, id))) fs.symlinkSync(path.join(from, id, entry), path.join(dir, id, entry));
  }
  return dir;
}

const lastUserText = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
/** Each "numbered please" gets the next number: a regenerated reply differs from the one it replaces. */
let numbered = 0;
const script = (request: ChatRequest) => {
  const text = lastUserText(request);
  if (text.includes('fixed please')) return FIXED_REPLY;
  if (text.includes('markdown please')) return MARKDOWN_REPLY;
  if (text.includes('How do I embed two sentences?')) return EXAMPLE_REPLY;
  if (text.includes('numbered please')) return `Reply number ${++numbered}.`;
  if (text.includes('xss please')) return XSS_REPLY;
  if (text.includes('long please')) return LONG_REPLY;
  if (text.includes('think please')) return THINKING_REPLY;
  return undefined;
};

let server: RealServer;
let browser: Browser;
let modelsDir: string;

/** A fresh incognito page that records console errors and every request it makes. */
const openPage = (options: { key?: string } = {}): Promise<Watched> => watchedPage(browser, options);

async function shot(page: Page, name: string) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) as `${string}.png`, fullPage: true });
}

/** Types a message, sends it with Enter, and waits for the line under the reply. */
async function chat(page: Page, text: string, settings: { temperature?: number; maxTokens?: number } = {}) {
  await page.waitForSelector('#chat-model option');
  const before = await page.$$eval('.msg.assistant .stats', (nodes) => nodes.length);
  if (settings.temperature !== undefined) await setValue(page, '#temperature', String(settings.temperature));
  if (settings.maxTokens !== undefined) await setValue(page, '#max-tokens', String(settings.maxTokens));
  await page.focus('#prompt');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n: number) => document.querySelectorAll('.msg.assistant .stats').length > n, { timeout: PAGE_TIMEOUT_MS }, before);
  return page.$$eval('.msg.assistant', (nodes) => {
    const last = nodes.at(-1)!;
    return { text: last.querySelector('.text')!.textContent ?? '', stats: last.querySelector('.stats')!.textContent ?? '', html: last.querySelector('.text')!.innerHTML };
  });
}

async function setValue(page: Page, selector: string, value: string) {
  await page.$eval(selector, (node, v) => ((node as HTMLInputElement).value = v), value);
}

/** The usage the page shows under a reply. */
function shownUsage(stats: string) {
  const prompt = /prompt (\d+) tokens \((\d+) cached\)/.exec(stats);
  const completion = /completion (\d+) tokens/.exec(stats);
  return { prompt: Number(prompt?.[1]), cached: Number(prompt?.[2]), completion: Number(completion?.[1]) };
}

const api = (pathname: string, body: unknown, key = KEY) =>
  fetch(`${server.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

describe.skipIf(!CHROMIUM)('the playground page in headless Chromium', () => {
  beforeAll(async () => {
    modelsDir = modelsFolder();
    // SECOND_MODEL is not pinned: it loads on first use and has an idle timer (the server view shows it).
    const lifecycle = { pinned: [CHAT_MODEL, EMBED_MODEL], keepAliveMs: IDLE_MS, maxLoadedModels: 0, loadTimeoutMs: PAGE_TIMEOUT_MS };
    // VISION_MODEL is not pinned either: only the image test loads it.
    server = await startRealServer({ apiKeys: [KEY], modelsDir, only: [CHAT_MODEL, SECOND_MODEL, EMBED_MODEL, VISION_MODEL], script, lifecycle });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (modelsDir) fs.rmSync(modelsDir, { recursive: true, force: true });
  });

  it('API clients keep the JSON at /; a browser gets the page with a strict CSP', async () => {
    const json = await fetch(server.url);
    expect(await json.json()).toEqual({ status: 'ok', service: 'local-inference-server' });
    const html = await fetch(server.url, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(html.headers.get('content-security-policy')).not.toMatch(/unsafe/);
    expect(html.headers.get('cache-control')).toBe('no-cache');
    const page = await html.text();
    const script = /src="(\/web\/app\.js\?v=[^"]+)"/.exec(page)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${server.url}${script}`);
    expect(asset.headers.get('cache-control')).toMatch(/immutable/);
    expect((await fetch(`${server.url}/web/app.js`, { headers: { 'if-none-match': asset.headers.get('etag')! } })).status).toBe(304);
    expect((await fetch(`${server.url}/web/nothing.js`)).status).toBe(404);
  });

  it('loads with no console error and no request leaving 127.0.0.1; lists the models by task', async () => {
    const { page, context, consoleErrors, requests } = await openPage({ key: KEY });
    try {
      await page.goto(server.url, { waitUntil: 'networkidle0' });
      await page.waitForSelector('#chat-model option');
      expect((await page.$$eval('#chat-model option', (o) => o.map((x) => x.textContent))).sort()).toEqual([CHAT_MODEL, SECOND_MODEL, VISION_MODEL].sort());
      // The first listed is chosen: the text model every other test talks to.
      expect(await page.$eval('#chat-model', (n) => (n as HTMLSelectElement).value)).toBe(CHAT_MODEL);
      expect(await page.$$eval('#embed-model option', (o) => o.map((x) => x.textContent))).toEqual([EMBED_MODEL]);
      expect(consoleErrors).toEqual([]);
      expect(requests.length).toBeGreaterThan(3);
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
      await shot(page, 'chat-empty');
      await page.click('#tab-server');
      await page.waitForSelector('#server-table tbody tr');
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('streams a reply into the page; the usage shown equals the API usage for the same request', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      const reply = await chat(page, 'fixed please', { temperature: 0, maxTokens: 64 });
      expect(reply.text).toBe(FIXED_REPLY);
      expect(reply.stats).toMatch(/first token \d+ ms/);
      expect(reply.stats).toMatch(/finish: stop/);
      const shown = shownUsage(reply.stats);
      const answer = await api('/v1/chat/completions', { model: CHAT_MODEL, messages: [{ role: 'user', content: 'fixed please' }], temperature: 0, max_tokens: 64 });
      const { usage, choices } = (await answer.json()) as { usage: { prompt_tokens: number; completion_tokens: number }; choices: { message: { content: string } }[] };
      expect(choices[0]!.message.content).toBe(FIXED_REPLY);
      expect(shown.prompt).toBe(usage.prompt_tokens);
      expect(shown.completion).toBe(usage.completion_tokens);
      expect(shown.cached).toBeGreaterThanOrEqual(0);

      // A second turn on the random-weights model: counts, not text (temperature 0).
      const second = await chat(page, 'Count to three.', { temperature: 0, maxTokens: 6 });
      const again = shownUsage(second.stats);
      expect(again.completion).toBeLessThanOrEqual(6);
      const messages = [{ role: 'user', content: 'fixed please' }, { role: 'assistant', content: FIXED_REPLY }, { role: 'user', content: 'Count to three.' }];
      const usage2 = ((await (await api('/v1/chat/completions', { model: CHAT_MODEL, messages, temperature: 0, max_tokens: 6 })).json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
      expect(again.prompt).toBe(usage2.prompt_tokens);
      expect(again.completion).toBe(usage2.completion_tokens);
      expect(consoleErrors).toEqual([]);
      await shot(page, 'chat');
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      await shot(page, 'chat-dark');
      await page.setViewport({ width: 390, height: 800 });
      await shot(page, 'chat-narrow');
    } finally {
      await context.close();
    }
  });

  it('the thinking switch shows the thought folded above the answer; a stop sequence cuts the reply', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      expect(await page.$eval('#thinking', (n) => (n as HTMLInputElement).disabled)).toBe(false);
      await page.click('#thinking');
      const reply = await chat(page, 'think please', { temperature: 0, maxTokens: 64 });
      expect(reply.text).toBe('Done thinking.');
      const thought = await page.$eval('.msg.assistant details', (d) => ({ open: (d as HTMLDetailsElement).open, text: d.querySelector('.thinking')!.textContent }));
      expect(thought.open).toBe(false);
      expect(thought.text).toContain('Planning the answer.');
      await page.click('#thinking');
      await setValue(page, '#stop-sequences', 'playground');
      const cut = await chat(page, 'fixed please', { temperature: 0, maxTokens: 64 });
      expect(cut.text).toBe('Hello from the ');
      expect(cut.stats).toMatch(/finish: stop/);
      expect(consoleErrors).toEqual([]);
      await shot(page, 'chat-thinking');
    } finally {
      await context.close();
    }
  });

  it('switching the chat model sends the next turn to the other model', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      const completed = (id: string) => server.service.counters.of(id).completed;
      const before = { first: completed(CHAT_MODEL), second: completed(SECOND_MODEL) };
      await page.select('#chat-model', CHAT_MODEL);
      expect((await chat(page, 'fixed please', { temperature: 0 })).text).toBe(FIXED_REPLY);
      await page.select('#chat-model', SECOND_MODEL);
      expect(await page.$eval('#chat-model-info', (n) => n.textContent)).toMatch(/context 4096 tokens/);
      expect((await chat(page, 'fixed please', { temperature: 0 })).text).toBe(FIXED_REPLY);
      // The counters hear of a generation's end from the worker, which may come just after the stream's end.
      await expect.poll(() => completed(CHAT_MODEL), { timeout: PAGE_TIMEOUT_MS }).toBe(before.first + 1);
      await expect.poll(() => completed(SECOND_MODEL), { timeout: PAGE_TIMEOUT_MS }).toBe(before.second + 1);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a vision model takes an attached image: sent as an image_url data URL, shown as a thumbnail, counted in the usage; a refused one shows the server\'s message', async () => {
    const { page, context, consoleErrors, requests } = await openPage({ key: KEY });
    /** The messages of each chat request the page sends. */
    const sent: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/chat/completions') sent.push((JSON.parse(request.postData() ?? '{}') as { messages: unknown }).messages);
    });
    // A 300x200 PNG: 70 image tokens by hand from the model's preprocessor_config.json (test/model/vision-model.test.ts), and its two markers.
    const raw = Buffer.alloc(300 * 200 * 3, 90);
    const png = await sharp(raw, { raw: { width: 300, height: 200, channels: 3 } }).png().toBuffer();
    const imageTokens = 70 + 2;
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const pngFile = path.join(ARTIFACTS, 'attach-300x200.png');
    const bombFile = path.join(ARTIFACTS, 'attach-bomb.png');
    fs.writeFileSync(pngFile, png);
    fs.writeFileSync(bombFile, Buffer.from(pngBomb(), 'base64'));
    const attach = async (file: string) => {
      const before = await page.$$eval('#attachments img.thumb', (n) => n.length);
      await (await page.$('input#attach'))!.uploadFile(file);
      await page.waitForFunction((n: number) => document.querySelectorAll('#attachments img.thumb').length > n, { timeout: PAGE_TIMEOUT_MS }, before);
    };
    const attachOffered = () => page.$eval('#attach-button', (b) => ({ disabled: (b as HTMLButtonElement).disabled, why: document.getElementById('attach-info')!.textContent }));
    try {
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      // The text model (chosen first): no attaching, and why.
      const engine = ((await (await fetch(`${server.url}/v1/models/${CHAT_MODEL}`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { engine: string }).engine;
      expect(await attachOffered()).toEqual({ disabled: true, why: `Takes no images (a text-only ${engine} model): Image… is off.` });

      await page.select('#chat-model', VISION_MODEL);
      expect(await attachOffered()).toEqual({ disabled: false, why: expect.stringMatching(/^Takes images: PNG, JPEG, WebP or GIF/) });
      await attach(pngFile);
      const dataUrl = `data:image/png;base64,${png.toString('base64')}`;
      expect(await page.$eval('#attachments img.thumb', (n) => (n as HTMLImageElement).src)).toBe(dataUrl);
      const reply = await chat(page, 'fixed please', { temperature: 0, maxTokens: 64 });
      expect(reply.text).toBe(FIXED_REPLY);
      expect(reply.stats).toMatch(/first token \d+ ms/);
      expect(sent.at(-1)).toEqual([{ role: 'user', content: [{ type: 'text', text: 'fixed please' }, { type: 'image_url', image_url: { url: dataUrl } }] }]);
      // Sent: the strip is empty, the user's turn shows the image.
      expect(await page.$$('#attachments li')).toHaveLength(0);
      expect(await page.$$eval('.msg.user img.thumb', (n) => n.map((i) => (i as HTMLImageElement).src))).toEqual([dataUrl]);
      expect(await page.$eval('.msg.user img.thumb', (i) => (i as HTMLImageElement).naturalWidth)).toBe(300);
      // The image's tokens, over the same text without it.
      const textOnly = await api('/v1/chat/completions', { model: VISION_MODEL, messages: [{ role: 'user', content: 'fixed please' }], temperature: 0, max_tokens: 64 });
      const textUsage = ((await textOnly.json()) as { usage: { prompt_tokens: number } }).usage;
      expect(shownUsage(reply.stats).prompt).toBe(textUsage.prompt_tokens + imageTokens);
      await shot(page, 'chat-image');

      // A decompression bomb (a 100000x100000 header): the server's 400, in its words, under the reply.
      await attach(bombFile);
      const refused = await chat(page, 'fixed please', { temperature: 0, maxTokens: 64 });
      const [first, , last] = sent.at(-1) as [unknown, unknown, { content: unknown[] }];
      // The history carries the first image again; the new turn, the bomb.
      expect(first).toEqual((sent.at(-2) as unknown[])[0]);
      expect(last.content[1]).toEqual({ type: 'image_url', image_url: { url: `data:image/png;base64,${pngBomb()}` } });
      // The same messages from the API: the message names the block by its place in them.
      const answer = await api('/v1/chat/completions', { model: VISION_MODEL, messages: sent.at(-1), max_tokens: 8 });
      expect(answer.status).toBe(400);
      const message = ((await answer.json()) as { error: { message: string } }).error.message;
      expect(refused.stats).toBe(`Error: 400: ${message}`);
      expect(await page.$eval('.msg.assistant:last-child .stats', (n) => n.classList.contains('error'))).toBe(true);

      // Kept with the conversation: drawn again after a reload, thumbnails and all.
      await page.reload();
      await page.waitForSelector('.msg.assistant .stats');
      expect(await page.$$eval('.msg.user img.thumb', (n) => n.length)).toBe(2);
      expect(requests.filter((u) => !u.startsWith(server.url) && !u.startsWith('data:'))).toEqual([]);
      // The browser's own line for the refused request; nothing else (a thumbnail the CSP blocked would be one).
      expect(consoleErrors).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    } finally {
      await context.close();
      // The tests after this one run with the models they ran with before it.
      await api('/models/unload', { model: VISION_MODEL });
    }
  }, SLOW_TEST_TIMEOUT_MS);

  it('Escape stops a streaming reply, and with it the generation on the server', async () => {
    const stats = () => server.service.counters.of(CHAT_MODEL);
    const cancelledBefore = stats().cancelled;
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      await setValue(page, '#max-tokens', '3000');
      await page.focus('#prompt');
      await page.keyboard.type('long please');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => (document.querySelector('.msg.assistant .text')?.textContent ?? '') !== '', { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$eval('#stop', (n) => (n as HTMLButtonElement).disabled)).toBe(false);
      await page.keyboard.press('Escape');
      await page.waitForSelector('.msg.assistant .stats', { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$eval('.msg.assistant .stats', (n) => n.textContent)).toMatch(/stopped/);
      await expect.poll(() => stats().active, { timeout: PAGE_TIMEOUT_MS }).toBe(0);
      expect(stats().cancelled).toBe(cancelledBefore + 1);
      expect(stats().lastCancelledOutputTokens).toBeLessThan(1000);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a reply containing HTML shows as text and runs nothing, also when drawn again from storage', async () => {
    const { page, context, requests } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      const reply = await chat(page, 'xss please', { temperature: 0, maxTokens: 64 });
      expect(reply.text).toBe(XSS_REPLY);
      expect(reply.html).not.toContain('<img');
      expect(await page.$$('#log img, #log b')).toHaveLength(0);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(requests.filter((u) => new URL(u).pathname === '/x')).toEqual([]);
      await shot(page, 'chat-html-as-text');

      // The conversation is kept in the browser: after a reload it is drawn again, still as text.
      await page.reload();
      await page.waitForSelector('.msg.assistant .stats');
      expect(await page.$$eval('.msg', (nodes) => nodes.map((n) => n.querySelector('.text')!.textContent))).toEqual(['xss please', XSS_REPLY]);
      expect(await page.$$('#log img, #log b')).toHaveLength(0);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(requests.filter((u) => new URL(u).pathname === '/x')).toEqual([]);
      // The next turn carries the restored history; "New conversation" forgets it.
      const next = await chat(page, 'Count to three.', { temperature: 0, maxTokens: 2 });
      expect(shownUsage(next.stats).prompt).toBeGreaterThan(shownUsage(reply.stats).prompt);
      await page.click('#clear');
      expect(await page.$$('.msg')).toHaveLength(0);
      await page.reload();
      await page.waitForSelector('#chat-model option');
      expect(await page.$$('.msg')).toHaveLength(0);
    } finally {
      await context.close();
    }
  });

  it('a reply in Markdown is built as elements: heading, bold, italic, code, a list, http(s) links only, a code block with Copy', async () => {
    const { page, context, consoleErrors, requests } = await openPage({ key: KEY });
    try {
      await context.overridePermissions(server.url, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
      await page.goto(server.url);
      await chat(page, 'markdown please', { temperature: 0, maxTokens: 200 });
      const shown = () =>
        page.$eval('.msg.assistant .text', (text) => ({
          heading: text.querySelector('h2')?.textContent,
          strong: [...text.querySelectorAll('strong')].map((n) => n.textContent),
          em: [...text.querySelectorAll('em')].map((n) => n.textContent),
          inlineCode: [...text.querySelectorAll('p code')].map((n) => n.textContent),
          items: [...text.querySelectorAll('ul > li')].map((n) => n.textContent),
          links: [...text.querySelectorAll('a')].map((a) => ({ href: a.getAttribute('href'), rel: a.getAttribute('rel'), target: a.getAttribute('target'), text: a.textContent })),
          code: [...text.querySelectorAll('pre > code')].map((n) => ({ text: n.textContent, language: n.className })),
          copy: text.querySelectorAll('.md-code button.md-copy').length,
          tags: [...text.querySelectorAll('*')].map((n) => n.tagName.toLowerCase()),
        }));
      const expected = {
        heading: 'Steps',
        strong: ['bold'],
        em: ['care'],
        inlineCode: ['npm test'],
        items: ['first item', 'the docs', 'a [bad link](javascript:window.__pwned=1)'],
        links: [{ href: 'https://example.com/docs', rel: 'noopener noreferrer', target: '_blank', text: 'docs' }],
        code: [{ text: 'const x = 1 < 2; // <b>not bold</b>', language: 'language-js' }],
        copy: 1,
      };
      expect(await shown()).toMatchObject(expected);
      // Only the elements the renderer makes: nothing from the reply's own markup.
      expect(new Set((await shown()).tags)).toEqual(new Set(['h2', 'p', 'strong', 'em', 'code', 'ul', 'li', 'a', 'div', 'span', 'button', 'pre']));
      expect(await page.$$('#log b, #log img, #log script')).toHaveLength(0);

      await page.click('.msg.assistant .md-copy');
      await page.waitForFunction(() => document.querySelector('.msg.assistant .md-copy')?.textContent === 'Copied', { timeout: PAGE_TIMEOUT_MS });
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe('const x = 1 < 2; // <b>not bold</b>');
      await shot(page, 'chat-markdown');

      // Drawn again from storage, the same elements.
      await page.reload();
      await page.waitForSelector('.msg.assistant .stats');
      expect(await shown()).toMatchObject(expected);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a reply as a model writes it (the README screenshot, docs/images/playground.png, is of this view)', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      await chat(page, 'markdown please', { temperature: 0, maxTokens: 200 });
      await page.click('#clear');
      await chat(page, 'How do I embed two sentences?', { temperature: 0, maxTokens: 300 });
      expect(await page.$$eval('.msg.assistant .text', (nodes) => ({ code: nodes.at(-1)!.querySelector('pre code')?.textContent, items: nodes.at(-1)!.querySelectorAll('ol > li').length })))
        .toEqual({ code: EXAMPLE_REPLY.split('```')[1]!.replace(/^sh\n/, '').replace(/\n$/, ''), items: 2 });
      await shot(page, 'chat-example');
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  }, SLOW_TEST_TIMEOUT_MS);

  it('the Markdown renderer: nesting, tables, quotes, unclosed fences, escapes; markup and non-http links stay text', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    try {
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      const cases: Array<[string, string]> = [
        ['a *b* **c** ~~d~~ `e`', '<p>a <em>b</em> <strong>c</strong> <del>d</del> <code>e</code></p>'],
        ['snake_case_name and 2 * 3 * 4', '<p>snake_case_name and 2 * 3 * 4</p>'],
        ['\\*not em\\* and **unclosed', '<p>*not em* and **unclosed</p>'],
        ['line one\nline two', '<p>line one\nline two</p>'],
        ['# One\n### Three ###', '<h1>One</h1><h3>Three</h3>'],
        ['- a\n  - b\n  - c\n- d', '<ul><li><p>a</p><ul><li>b</li><li>c</li></ul></li><li>d</li></ul>'],
        ['3. x\n4. y', '<ol start="3"><li>x</li><li>y</li></ol>'],
        ['> quoted **text**\n> more', '<blockquote><p>quoted <strong>text</strong>\nmore</p></blockquote>'],
        ['| a | b |\n|---|--:|\n| 1 | 2 |', '<div><table><thead><tr><th>a</th><th>br</th></tr></thead><tbody><tr><td>1</td><td>2r</td></tr></tbody></table></div>'],
        ['```py\nprint(1)\n', '<div><div><span>py</span><button>Copy</button></div><pre><code>print(1)\n</code></pre></div>'],
        ['~~~\n<script>x</script>\n~~~\nafter', '<div><div><span></span><button>Copy</button></div><pre><code><script>x</script></code></pre></div><p>after</p>'],
        ['<script>alert(1)</script> <img src=x onerror=alert(1)>', '<p><script>alert(1)</script> <img src=x onerror=alert(1)></p>'],
        ['[a](javascript:alert(1)) [b](data:text/html,x) [c](/relative)', '<p>[a](javascript:alert(1)) [b](data:text/html,x) [c](/relative)</p>'],
        ['see https://example.com/a_b. or <http://example.org>', '<p>see <a href="https://example.com/a_b">https://example.com/a_b</a>. or <a href="http://example.org/">http://example.org</a></p>'],
        ['[https://a.example](https://a.example/x) **<https://b.example/>**', '<p><a href="https://a.example/x">https://a.example</a> <strong><a href="https://b.example/">https://b.example/</a></strong></p>'],
        ['---', '<hr>'],
      ];
      const rendered = await page.evaluate((inputs: string[]) => {
        /** A small serialization: tags, the attributes that matter here, and text as text. */
        const ser = (node: Node): string => {
          if (node.nodeType === Node.TEXT_NODE) return node.textContent ?? '';
          const e = node as HTMLElement;
          const tag = e.tagName.toLowerCase();
          const attrs = tag === 'a' ? ` href="${e.getAttribute('href')}"` : tag === 'ol' && e.getAttribute('start') ? ` start="${e.getAttribute('start')}"` : '';
          const align = e.className.startsWith('align-right') ? 'r' : '';
          const inner = [...e.childNodes].map(ser).join('') + align;
          return tag === 'hr' ? '<hr>' : `<${tag}${attrs}>${inner}</${tag}>`;
        };
        const links = (fragment: DocumentFragment) => [...fragment.querySelectorAll('a')].every((a) => a.rel === 'noopener noreferrer' && a.target === '_blank' && /^https?:/.test(a.href));
        return inputs.map((text) => {
          const fragment = Markdown.render(text);
          return { html: [...fragment.childNodes].map(ser).join(''), links: links(fragment) };
        });
      }, cases.map(([input]) => input));
      cases.forEach(([input, expected], i) => {
        expect(rendered[i]!.html, input).toBe(expected);
        expect(rendered[i]!.links, input).toBe(true);
      });
      // Nesting past the renderer's depth becomes text: no reply exhausts the stack.
      const deep = await page.evaluate(() => {
        const quotes = Markdown.render(`${'>'.repeat(5000)} deep`);
        const emphasis = Markdown.render(`${'**a '.repeat(3000)}b${' c**'.repeat(3000)}`);
        const started = performance.now();
        Markdown.render(`${'*a _b ~~c '.repeat(4000)}`);
        const unclosedMs = performance.now() - started;
        const lists = Markdown.render(Array.from({ length: 300 }, (_, i) => `${'  '.repeat(i)}- item ${i}`).join('\n'));
        return {
          quotes: quotes.querySelectorAll('blockquote').length, quoteText: quotes.textContent!.includes('deep'),
          strong: emphasis.querySelectorAll('strong').length, emphasisText: emphasis.textContent!.includes('b'),
          lists: lists.querySelectorAll('ul').length, listText: lists.textContent!.includes('item 299'), unclosedMs,
        };
      });
      expect(deep).toMatchObject({ quoteText: true, emphasisText: true, listText: true });
      for (const n of [deep.quotes, deep.strong, deep.lists]) expect(n).toBeLessThanOrEqual(24);
      // 12,000 openers without a closer: linear, not quadratic (a reply is drawn again every 50 ms as it streams).
      expect(deep.unclosedMs).toBeLessThan(1000);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the page writes model output without HTML sinks (its scripts use none)', () => {
    // Every script of the page: app.js and the modules it imports, markdown.js, the reference page's.
    const scripts = fs.readdirSync(path.join(ROOT, 'src', 'web')).filter((f) => f.endsWith('.js'));
    expect(scripts).toEqual(expect.arrayContaining(['app.js', 'chat.js', 'markdown.js']));
    for (const file of scripts) {
      const source = fs.readFileSync(path.join(ROOT, 'src', 'web', file), 'utf8');
      expect(source, file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|\beval\(|new Function/);
    }
  });

  it('regenerate answers the last message again; edit drops what followed and sends the edited message', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    /** The messages of each chat request the page sends. */
    const sent: { role: string; content: string }[][] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/chat/completions') sent.push((JSON.parse(request.postData() ?? '{}') as { messages: { role: string; content: string }[] }).messages);
    });
    const log = () => page.$$eval('.msg', (nodes) => nodes.map((n) => `${n.classList.contains('user') ? 'user' : 'assistant'}: ${n.querySelector('.text')!.textContent}`));
    const lastDone = () => page.waitForFunction(() => document.querySelector('.msg.assistant:last-child .stats') !== null && !(document.getElementById('send') as HTMLButtonElement).disabled, { timeout: PAGE_TIMEOUT_MS });
    try {
      await page.goto(server.url);
      const first = await chat(page, 'numbered please', { temperature: 0, maxTokens: 32 });
      const n = Number(/Reply number (\d+)\./.exec(first.text)?.[1]);
      expect(n).toBeGreaterThan(0);
      expect(await page.$$('.msg.assistant .regenerate')).toHaveLength(1);

      await page.click('.msg.assistant .regenerate');
      await lastDone();
      expect(await log()).toEqual(['user: numbered please', `assistant: Reply number ${n + 1}.`]);
      expect(sent.at(-1)).toEqual([{ role: 'user', content: 'numbered please' }]);

      // A second turn, then edit the first message: the turns after it are dropped.
      await chat(page, 'fixed please', { temperature: 0 });
      expect(await page.$$('.msg.user .edit')).toHaveLength(2);
      expect(await page.$$('.msg.assistant .regenerate')).toHaveLength(1);
      await page.click('.msg.user .edit');
      await page.waitForSelector('.edit-form textarea');
      await page.$eval('.edit-form textarea', (n) => ((n as HTMLTextAreaElement).value = ''));
      await page.type('.edit-form textarea', 'fixed please, edited');
      await page.keyboard.press('Enter');
      await lastDone();
      expect(await log()).toEqual(['user: fixed please, edited', `assistant: ${FIXED_REPLY}`]);
      expect(sent.at(-1)).toEqual([{ role: 'user', content: 'fixed please, edited' }]);

      // Kept as edited.
      await page.reload();
      await page.waitForSelector('.msg.assistant .stats');
      expect(await log()).toEqual(['user: fixed please, edited', `assistant: ${FIXED_REPLY}`]);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('several conversations are kept: New conversation, a list to switch, delete', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    const log = () => page.$$eval('.msg .text', (nodes) => nodes.map((n) => n.textContent));
    const list = () => page.$$eval('#conversations .conversation', (nodes) => nodes.map((n) => ({ title: n.querySelector('.conversation-open')!.textContent, current: n.classList.contains('current') })));
    const open = async (title: string) => {
      const buttons = await page.$$('#conversations .conversation-open');
      for (const b of buttons) if ((await b.evaluate((n) => n.textContent)) === title) return b.click();
      throw new Error(`no conversation ${title}`);
    };
    try {
      await page.goto(server.url);
      await chat(page, 'fixed please', { temperature: 0 });
      await page.click('#clear');
      expect(await log()).toEqual([]);
      await chat(page, 'markdown please', { temperature: 0, maxTokens: 200 });
      expect(await list()).toEqual([{ title: 'markdown please', current: true }, { title: 'fixed please', current: false }]);
      await shot(page, 'chat-conversations');

      await open('fixed please');
      expect(await log()).toEqual(['fixed please', FIXED_REPLY]);
      expect(await list()).toEqual([{ title: 'markdown please', current: false }, { title: 'fixed please', current: true }]);
      // The next turn goes to this conversation, with its own history only.
      const next = await chat(page, 'Count to three.', { temperature: 0, maxTokens: 2 });
      expect(shownUsage(next.stats).prompt).toBeGreaterThan(0);
      expect((await log()).slice(0, 2)).toEqual(['fixed please', FIXED_REPLY]);

      await page.reload();
      await page.waitForSelector('.msg.assistant .stats');
      expect((await log())[0]).toBe('fixed please');
      expect((await list()).map((c) => c.title).sort()).toEqual(['fixed please', 'markdown please']);

      // Deleting the current conversation shows the other; deleting that leaves a new, empty one.
      await page.click('#conversations .conversation.current .conversation-delete');
      expect(await list()).toEqual([{ title: 'markdown please', current: true }]);
      expect((await log())[0]).toBe('markdown please');
      await page.click('#conversations .conversation.current .conversation-delete');
      expect(await log()).toEqual([]);
      expect(await list()).toEqual([{ title: 'New conversation', current: true }]);
      await page.reload();
      await page.waitForSelector('#chat-model option');
      expect(await log()).toEqual([]);
      expect(consoleErrors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('the server view shows the loaded models with memory, idle timers and live charts; Unload unloads, Load loads', async () => {
    const { page, context, consoleErrors, requests } = await openPage({ key: KEY });
    const row = (id: string) =>
      page.$eval(`#server-table tr[data-model="${id}"]`, (tr) => ({
        state: tr.querySelector('.cell-state')!.textContent,
        memory: tr.querySelector('.cell-memory')!.textContent,
        idle: tr.querySelector('.cell-idle')!.textContent,
        action: tr.querySelector('button.model-action')!.textContent,
      }));
    const stateOf = async (id: string) => ((await (await fetch(`${server.url}/v1/models/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as { state: string }).state;
    try {
      // Loaded (and so idle-timed: it is not pinned) before the page opens.
      expect((await (await api('/models/load', { model: SECOND_MODEL })).json()) as object).toMatchObject({ success: true, model: SECOND_MODEL, state: 'loaded' });
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      await page.click('#tab-server');
      await page.waitForSelector(`#server-table tr[data-model="${SECOND_MODEL}"] .cell-state span:not(:empty)`, { timeout: PAGE_TIMEOUT_MS });
      expect(await row(CHAT_MODEL)).toMatchObject({ state: 'loaded', memory: expect.stringMatching(/^\d+\.\d MiB$/), idle: 'pinned (kept loaded)', action: 'Unload' });
      expect(await row(SECOND_MODEL)).toMatchObject({ state: 'loaded', memory: expect.stringMatching(/^\d+\.\d MiB$/), idle: expect.stringMatching(/^(29|30) min \d\d s$/), action: 'Unload' });
      expect((await row(EMBED_MODEL)).state).toBe('loaded');

      // Throughput: a generation while the page polls shows in the tokens chart.
      await page.waitForSelector('#chart-tokens svg polyline', { timeout: PAGE_TIMEOUT_MS });
      await (await api('/v1/chat/completions', { model: CHAT_MODEL, messages: [{ role: 'user', content: 'long please' }], max_tokens: 64 })).json();
      await page.waitForFunction(() => /^(?!0\.0 )\d+\.\d generated/.test(document.getElementById('chart-tokens-value')!.textContent ?? ''), { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$$eval('.charts svg.chart', (svgs) => svgs.length)).toBe(3);
      expect(await page.$eval('#chart-memory-value', (n) => n.textContent)).toMatch(/^\d+ MiB process · \d+ MiB models$/);
      await shot(page, 'server');

      await page.click(`#server-table tr[data-model="${SECOND_MODEL}"] button.model-action`);
      await page.waitForFunction((id: string) => document.querySelector(`#server-table tr[data-model="${id}"] button.model-action`)?.textContent === 'Load', { timeout: PAGE_TIMEOUT_MS }, SECOND_MODEL);
      expect(await row(SECOND_MODEL)).toMatchObject({ state: 'unloaded', memory: '–', idle: '–' });
      expect(await stateOf(SECOND_MODEL)).toBe('unloaded');
      expect(await page.$eval('#server-status', (n) => n.textContent)).toMatch(new RegExp(`^${SECOND_MODEL} unloaded`));
      await shot(page, 'server-unloaded');

      await page.click(`#server-table tr[data-model="${SECOND_MODEL}"] button.model-action`);
      await page.waitForFunction((id: string) => document.querySelector(`#server-table tr[data-model="${id}"] button.model-action`)?.textContent === 'Unload', { timeout: PAGE_TIMEOUT_MS }, SECOND_MODEL);
      expect((await row(SECOND_MODEL)).state).toBe('loaded');
      expect(await stateOf(SECOND_MODEL)).toBe('loaded');
      expect(consoleErrors).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      await shot(page, 'server-dark');
    } finally {
      await context.close();
    }
  }, SLOW_TEST_TIMEOUT_MS);

  it('where the server does not serve load and unload (--model-admin false), the page says so and hides the buttons', async () => {
    const { page, context } = await openPage({ key: KEY });
    try {
      // The answer such a server gives (the app's not-found handler), without starting a second server.
      await page.setRequestInterception(true);
      page.on('request', (request) => {
        if (new URL(request.url()).pathname !== '/models/unload') return void request.continue();
        void request.respond({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { message: 'No route for POST /models/unload.', type: 'invalid_request_error', param: null, code: 'route_not_found' } }) });
      });
      await page.goto(server.url);
      await page.waitForSelector('#chat-model option');
      await page.click('#tab-server');
      await page.waitForSelector(`#server-table tr[data-model="${EMBED_MODEL}"] button.model-action`, { timeout: PAGE_TIMEOUT_MS });
      await page.click(`#server-table tr[data-model="${EMBED_MODEL}"] button.model-action`);
      await page.waitForFunction(() => /does not serve the load and unload routes/.test(document.getElementById('server-status')!.textContent ?? ''), { timeout: PAGE_TIMEOUT_MS });
      await page.waitForFunction(() => [...document.querySelectorAll('#server-table button.model-action')].every((b) => (b as HTMLButtonElement).hidden), { timeout: PAGE_TIMEOUT_MS });
      expect((await (await fetch(`${server.url}/v1/models/${EMBED_MODEL}`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as object).toMatchObject({ state: 'loaded' });
    } finally {
      await context.close();
    }
  });

  it('on the real service, a model in use is not unloaded (400), and unloads once its request ends', async () => {
    const controller = new AbortController();
    const stream = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', signal: controller.signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: SECOND_MODEL, messages: [{ role: 'user', content: 'long please' }], max_tokens: 3000, stream: true }),
    });
    try {
      const reader = stream.body!.getReader();
      await reader.read(); // the stream has begun: the request holds the model
      const refused = await api('/models/unload', { model: SECOND_MODEL });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string; param: string } }).error).toMatchObject({ param: 'model', message: expect.stringMatching(/in use by 1 request/) });
      controller.abort();
      await expect.poll(() => server.service.counters.of(SECOND_MODEL).active, { timeout: PAGE_TIMEOUT_MS }).toBe(0);
      await expect.poll(async () => (await api('/models/unload', { model: SECOND_MODEL })).status, { timeout: PAGE_TIMEOUT_MS }).toBe(200);
      expect((await (await api('/models/load', { model: SECOND_MODEL })).json()) as object).toMatchObject({ success: true, state: 'loaded' });
    } finally {
      controller.abort();
    }
  }, SLOW_TEST_TIMEOUT_MS);

  it('/metrics counts the requests holding each model (model_requests_inflight)', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(new RegExp(`^model_requests_inflight\\{model="${CHAT_MODEL}"\\} 0$`, 'm'));
  });

  it('the embeddings heat map shows the cosine similarities of the vectors the API returns', async () => {
    const { page, context, consoleErrors } = await openPage({ key: KEY });
    const texts = ['The cat sat on the mat.', 'A cat was sitting on a rug.', 'Stock markets fell sharply today.'];
    try {
      await page.goto(server.url);
      await page.waitForSelector('#embed-model option');
      await page.click('#tab-embed');
      await setValue(page, '#texts', texts.join('\n'));
      await page.click('#compare');
      await page.waitForSelector('#heatmap td.cell', { timeout: PAGE_TIMEOUT_MS });
      const cells = await page.$$eval('#heatmap tr', (rows) => rows.slice(1).map((r) => [...r.querySelectorAll('td.cell')].map((td) => ({ cos: Number((td as HTMLElement).dataset.cos), title: (td as HTMLElement).title }))));
      const body = (await (await api('/v1/embeddings', { model: EMBED_MODEL, input: texts })).json()) as { data: { index: number; embedding: number[] }[] };
      const vectors = body.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
      const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / Math.sqrt(a.reduce((s, x) => s + x * x, 0) * b.reduce((s, x) => s + x * x, 0));
      expect(cells).toHaveLength(3);
      for (let i = 0; i < 3; i++) {
        for (let j = 0; j < 3; j++) {
          expect(cells[i]![j]!.cos).toBeCloseTo(cos(vectors[i]!, vectors[j]!), 9);
          expect(cells[i]![j]!.title).toContain(cos(vectors[i]!, vectors[j]!).toFixed(6));
        }
      }
      const counts = await page.$$eval('#heatmap td.tokens', (nodes) => nodes.map((n) => Number(n.textContent)));
      const expected = await Promise.all(texts.map(async (t) => ((await (await api('/tokenize', { model: EMBED_MODEL, prompt: t })).json()) as { count: number }).count));
      expect(counts).toEqual(expected);
      expect(consoleErrors).toEqual([]);
      await shot(page, 'embeddings');
    } finally {
      await context.close();
    }
  });

  it('the rerank view shows the scores and order POST /v1/rerank answers, with bars and the token usage', async () => {
    const { page, context, consoleErrors, requests } = await openPage({ key: KEY });
    const query = 'Where did the cat sit?';
    const documents = ['Stock markets fell sharply today.', 'The cat sat on the mat.', 'A cat was sitting on a rug.', 'The weather will be sunny tomorrow.'];
    try {
      await page.goto(server.url);
      await page.waitForSelector('#rerank-model option');
      // Rerank models first, then the embedding models (which rank by cosine); the bundled embedding model is always there.
      const offered = await page.$$eval('#rerank-model option', (o) => o.map((x) => x.textContent));
      expect(offered).toContain(EMBED_MODEL);
      expect(offered).not.toContain(CHAT_MODEL);
      await page.click('#tab-rerank');
      await page.select('#rerank-model', EMBED_MODEL);
      await setValue(page, '#rerank-query', query);
      await setValue(page, '#rerank-documents', documents.join('\n'));
      await page.focus('#rerank-documents');
      await page.keyboard.down('Control');
      await page.keyboard.press('Enter');
      await page.keyboard.up('Control');
      await page.waitForSelector('#rerank-results li', { timeout: PAGE_TIMEOUT_MS });
      const shown = await page.$$eval('#rerank-results li', (items) => items.map((li) => ({
        index: Number((li as HTMLElement).dataset.index),
        score: Number((li as HTMLElement).dataset.score),
        exact: li.querySelector('.rerank-score')!.textContent,
        text: li.querySelector('.rerank-text')!.textContent,
        width: (li.querySelector('.bar-fill') as HTMLElement).style.width,
      })));
      const status = await page.$eval('#rerank-status', (n) => n.textContent ?? '');
      const answer = (await (await api('/v1/rerank', { model: EMBED_MODEL, query, documents, top_n: documents.length, return_documents: true })).json()) as {
        results: { index: number; relevance_score: number; document?: { text: string } }[]; usage: { total_tokens: number };
      };
      expect(shown.map((r) => r.index)).toEqual(answer.results.map((r) => r.index));
      expect(shown).toHaveLength(documents.length);
      shown.forEach((r, i) => {
        const expected = answer.results[i]!;
        expect(r.score).toBe(expected.relevance_score);
        expect(r.exact).toBe(expected.relevance_score.toFixed(6));
        expect(r.text).toBe(documents[expected.index]);
        expect(Number.parseFloat(r.width)).toBeCloseTo(Math.max(0, Math.min(1, expected.relevance_score)) * 100, 3);
      });
      expect(status).toContain(`${answer.usage.total_tokens} tokens in all`);
      expect(consoleErrors).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
      await shot(page, 'rerank');
    } finally {
      await context.close();
    }
  });

  it('without a key the page shows the 401; a wrong key is refused plainly; the right one works', async () => {
    const { page, context } = await openPage();
    try {
      await page.goto(server.url);
      await page.waitForSelector('#key-panel:not([hidden])', { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$eval('#key-message', (n) => n.textContent)).toMatch(/^401 Unauthorized: /);
      await shot(page, 'api-key-asked');
      await page.type('#key-input', 'sk-wrong');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => /refused/.test(document.getElementById('key-message')!.textContent ?? ''), { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$eval('#key-panel', (n) => (n as HTMLElement).hidden)).toBe(false);
      expect(await page.$eval('#key-message', (n) => n.textContent)).toMatch(/^401 Unauthorized: .*Incorrect API key/);
      await page.type('#key-input', KEY);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#chat-model option', { timeout: PAGE_TIMEOUT_MS });
      expect(await page.$eval('#key-panel', (n) => (n as HTMLElement).hidden)).toBe(true);
      expect(await page.evaluate(() => sessionStorage.getItem('local-inference-server.api-key'))).toBe(KEY);
      const reply = await chat(page, 'fixed please', { temperature: 0 });
      expect(reply.text).toBe(FIXED_REPLY);
    } finally {
      await context.close();
    }
  });
});

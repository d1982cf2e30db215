/**
 * The playground page (src/web, issue 31) in headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) against a listening server on the bundled models. Skipped, with the reason
 * printed, where no Chromium is installed (.ci/run installs it).
 */
import fs from 'node:fs';
import path from 'node:path';
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { CHAT_MODEL, EMBED_MODEL, ROOT, SERVED_MODELS_DIR } from '../helpers/paths.js';
import { modelVariant } from '../helpers/model-variant.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => fs.existsSync(p));
if (!CHROMIUM) console.warn('playground.test.ts: SKIPPED, no Chromium at /usr/bin/chromium (apt-get install chromium)');

/** Screenshots of each view (git-ignored). */
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'playground');
const KEY = 'sk-playground-test';
/** How long the page may take to show a reply or a result. */
const PAGE_TIMEOUT_MS = 30_000;

const FIXED_REPLY = 'Hello from the playground.';
const XSS_REPLY = '<img src=x onerror="window.__pwned = 1"> and <b>bold</b>';
const THINKING_REPLY = '<think>\nPlanning the answer.\n</think>\n\nDone thinking.';
/** Long enough that a stop lands mid-stream: the scripted model writes it all unless cancelled. */
const LONG_REPLY = 'word '.repeat(2500);
/** The bundled chat model again under another id (a manifest of its own), to switch between two. */
const SECOND_MODEL = 'tiny-qwen3-second';

/** A models folder with both bundled models (their files linked) and SECOND_MODEL; the caller removes it. */
function modelsFolder(): string {
  const dir = modelVariant(CHAT_MODEL, SECOND_MODEL, { 'manifest.json': { contextLength: 4096 } });
  for (const id of [CHAT_MODEL, EMBED_MODEL]) {
    fs.mkdirSync(path.join(dir, id));
    for (const entry of fs.readdirSync(path.join(SERVED_MODELS_DIR, id))) fs.symlinkSync(path.join(SERVED_MODELS_DIR, id, entry), path.join(dir, id, entry));
  }
  return dir;
}

const lastUserText = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  const text = lastUserText(request);
  if (text.includes('fixed please')) return FIXED_REPLY;
  if (text.includes('xss please')) return XSS_REPLY;
  if (text.includes('long please')) return LONG_REPLY;
  if (text.includes('think please')) return THINKING_REPLY;
  return undefined;
};

let server: RealServer;
let browser: Browser;
let modelsDir: string;

interface Watched {
  page: Page;
  context: BrowserContext;
  consoleErrors: string[];
  requests: string[];
}

/** A fresh incognito page that records console errors and every request it makes. */
async function openPage(options: { key?: string } = {}): Promise<Watched> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  page.on('request', (request) => requests.push(request.url()));
  if (options.key) await page.evaluateOnNewDocument((k: string) => sessionStorage.setItem('local-inference-server.api-key', k), options.key);
  await page.setViewport({ width: 1200, height: 800 });
  return { page, context, consoleErrors, requests };
}

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
    server = await startRealServer({ apiKeys: [KEY], modelsDir, only: [CHAT_MODEL, SECOND_MODEL, EMBED_MODEL], script });
    browser = await puppeteer.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
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
      expect((await page.$$eval('#chat-model option', (o) => o.map((x) => x.textContent))).sort()).toEqual([CHAT_MODEL, SECOND_MODEL].sort());
      expect(await page.$$eval('#embed-model option', (o) => o.map((x) => x.textContent))).toEqual([EMBED_MODEL]);
      expect(consoleErrors).toEqual([]);
      expect(requests.length).toBeGreaterThan(3);
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
      await shot(page, 'chat-empty');
      await page.click('#tab-models');
      await shot(page, 'models');
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

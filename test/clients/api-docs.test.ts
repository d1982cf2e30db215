/**
 * The API reference page (/docs: src/web/docs.html, docs.js, issue 31) in headless Chromium against
 * a listening server: every route the app registered and every operation in /openapi.json appears
 * with its method, request body schema and response schemas; the filter works; no console error and
 * no request leaves the server. Skipped, with the reason printed, where no Chromium is installed.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiPath } from '../../src/http/reference/openapi.js';
import { EMBED_MODEL, ROOT } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';
import { CHROMIUM, launchChromium, warnIfNoChromium, watchedPage } from '../helpers/browser.js';

warnIfNoChromium('api-docs.test.ts');

const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'playground');
const KEY = 'sk-api-docs-test';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let server: RealServer;
let browser: Browser;

interface Shown { id: string; method: string; path: string; hidden: boolean; blocks: { summary: string; text: string }[]; text: string }

describe.skipIf(!CHROMIUM)('the API reference page (/docs) in headless Chromium', () => {
  beforeAll(async () => {
    server = await startRealServer({ apiKeys: [KEY], only: [EMBED_MODEL] });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('lists every route with its method, request and response schemas; the filter works; nothing leaves the host', async () => {
    const { page, context, consoleErrors, requests } = await watchedPage(browser);
    try {
      const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as Json;
      await page.goto(`${server.url}/docs`, { waitUntil: 'networkidle0' });
      await page.waitForSelector('section.route');
      const shown = await page.$$eval('section.route', (sections) => sections.map((s) => ({
        id: s.id,
        method: s.querySelector('h2 .method')!.textContent ?? '',
        path: (s.querySelector('h2')!.textContent ?? '').slice((s.querySelector('h2 .method')!.textContent ?? '').length),
        hidden: (s as HTMLElement).hidden === true,
        blocks: [...s.querySelectorAll('details')].map((d) => ({ summary: d.querySelector('summary')!.textContent ?? '', text: d.querySelector('pre')!.textContent ?? '' })),
        text: s.textContent ?? '',
      })));
      const key = (method: string, p: string) => `${method.toUpperCase()} ${p}`;
      const onPage = new Map<string, Shown>(shown.map((s) => [key(s.method, s.path), s]));
      // Every operation of the document, and every route Fastify registered (the app's own record), is on the page once.
      const operations = Object.entries<Json>(doc.paths).flatMap(([p, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => key(m, p)));
      expect(operations.length).toBeGreaterThan(20);
      expect(shown.map((s) => key(s.method, s.path)).sort()).toEqual([...operations].sort());
      const registered = server.app.registeredRoutes.map(({ method, url }) => key(method, openApiPath(url)));
      for (const route of registered) expect(onPage.has(route), route).toBe(true);
      const printed = [...server.app.printRoutes({ commonPrefix: false }).matchAll(/\(([A-Z, ]+)\)$/gm)].flatMap((m) => m[1]!.split(', ').filter((x) => x !== 'HEAD'));
      expect(shown.length).toBe(printed.length);
      // Each operation shows a block per response and per request body media type, holding that schema.
      // The page inlines every local $ref (a recursive one is left as written): the same, written again here.
      const lookup = (ref: string) => ref.slice(2).split('/').reduce((t: Json, k: string) => t?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
      const resolve = (schema: unknown, seen: string[] = []): unknown => {
        if (Array.isArray(schema)) return schema.map((x) => resolve(x, seen));
        if (!schema || typeof schema !== 'object') return schema;
        const { $ref, ...rest } = schema as Json;
        if (typeof $ref === 'string' && !seen.includes($ref)) {
          const target = lookup($ref);
          expect(target, $ref).toBeTypeOf('object');
          return { ...(resolve(target, [...seen, $ref]) as Json), ...(resolve(rest, seen) as Json) };
        }
        return Object.fromEntries(Object.entries(schema as Json).map(([k, v]) => [k, resolve(v, seen)]));
      };
      for (const [p, item] of Object.entries<Json>(doc.paths)) {
        for (const method of Object.keys(item).filter((m) => METHODS.includes(m))) {
          const op = item[method] as Json;
          const section = onPage.get(key(method, p))!;
          for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) {
            const block = section.blocks.find((b) => b.summary.startsWith(`Request body (${type})`));
            expect(block, `${key(method, p)} request ${type}`).toBeDefined();
            expect(JSON.parse(block!.text)).toEqual(resolve(media.schema) ?? {});
          }
          if (!op.requestBody) expect(section.text).toContain('No request body.');
          expect(Object.keys(op.responses ?? {}).length, key(method, p)).toBeGreaterThan(0);
          for (const [status, response] of Object.entries<Json>(op.responses)) {
            const types = Object.keys(response.content ?? {});
            if (types.length === 0) expect(section.text).toContain(`Response ${status}`);
            for (const type of types) {
              const block = section.blocks.find((b) => b.summary.startsWith(`Response ${status} (${type})`));
              expect(block, `${key(method, p)} ${status} ${type}`).toBeDefined();
              expect(JSON.parse(block!.text)).toEqual(resolve(response.content[type].schema) ?? {});
            }
          }
        }
      }
      // POST /v1/messages: fields of its request (max_tokens) and of its response (stop_reason) are shown.
      const messages = onPage.get('POST /v1/messages')!;
      expect(messages.blocks.find((b) => b.summary.startsWith('Request body'))!.text).toContain('"max_tokens"');
      expect(messages.blocks.find((b) => b.summary.startsWith('Response 200 (application/json)'))!.text).toContain('"stop_reason"');
      const rerank = onPage.get('POST /v1/rerank')!;
      expect(rerank.blocks.find((b) => b.summary.startsWith('Request body'))!.text).toMatch(/"query"[\s\S]*"documents"/);
      expect(rerank.blocks.find((b) => b.summary.startsWith('Response 200'))!.text).toContain('"relevance_score"');
      // An error envelope given as an anyOf of references shows the envelopes' fields, not only the references.
      const error = rerank.blocks.find((b) => b.summary.startsWith('Response 4XX'))!.text;
      expect(error).toContain('"message"');
      // Only recursive references are left as written: every $ref still shown is one the schema is inside.
      for (const s of shown) {
        for (const b of s.blocks) {
          for (const [, ref] of b.text.matchAll(/"\$ref": "([^"]+)"/g)) expect(b.text, `${s.method} ${s.path}: ${b.summary} keeps ${ref}`).toContain('"$defs"');
        }
      }

      // A schema opens on a click and its text is visible.
      await page.$eval('section.route[id="post-/v1/messages"] details summary', (s) => (s as HTMLElement).click());
      expect(await page.$eval('section.route[id="post-/v1/messages"] details pre', (pre) => (pre as HTMLElement).innerText)).toContain('max_tokens');
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'api-docs.png') as `${string}.png` });
      await page.$eval('section.route[id="post-/v1/messages"]', (s) => s.scrollIntoView());
      await page.screenshot({ path: path.join(ARTIFACTS, 'api-docs-messages.png') as `${string}.png` });

      // The filter keeps the routes whose method, path or summary holds the words, and hides the rest.
      await page.type('#filter', 'rerank');
      const visible = await page.$$eval('section.route', (sections) => sections.filter((s) => !(s as HTMLElement).hidden).map((s) => s.querySelector('h2')!.textContent ?? ''));
      expect(visible.length).toBeGreaterThan(0);
      expect(visible.length).toBeLessThan(shown.length);
      for (const title of visible) expect(title.toLowerCase()).toContain('rerank');
      expect(visible.some((t) => t.includes('/v1/rerank'))).toBe(true);
      await page.screenshot({ path: path.join(ARTIFACTS, 'api-docs-filtered.png') as `${string}.png` });
      await page.$eval('#filter', (input) => { (input as HTMLInputElement).value = 'no such route anywhere'; input.dispatchEvent(new Event('input')); });
      expect(await page.$$eval('section.route', (sections) => sections.filter((s) => !(s as HTMLElement).hidden).length)).toBe(0);
      await page.$eval('#filter', (input) => { (input as HTMLInputElement).value = ''; input.dispatchEvent(new Event('input')); });
      expect(await page.$$eval('section.route', (sections) => sections.filter((s) => !(s as HTMLElement).hidden).length)).toBe(shown.length);

      expect(consoleErrors).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});

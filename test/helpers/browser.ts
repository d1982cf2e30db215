/**
 * Debian's Chromium for the page tests (puppeteer-core downloads no browser; .ci/run installs it),
 * and a fresh incognito page that records its console errors and every request it makes.
 */
import fs from 'node:fs';
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer-core';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => fs.existsSync(p));

/** Says, once per test file, that its browser tests are skipped and why. */
export function warnIfNoChromium(file: string): void {
  if (!CHROMIUM) console.warn(`${file}: SKIPPED, no Chromium at /usr/bin/chromium (apt-get install chromium)`);
}

export const launchChromium = (): Promise<Browser> => puppeteer.launch({ executablePath: CHROMIUM!, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });

export interface Watched {
  page: Page;
  context: BrowserContext;
  consoleErrors: string[];
  requests: string[];
}

/** A fresh incognito page, 1200 x 800, recording console errors and requests; `key` is put in its session storage as the page keeps an API key. */
export async function watchedPage(browser: Browser, options: { key?: string } = {}): Promise<Watched> {
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

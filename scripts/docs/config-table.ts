/**
 * The settings table of docs/configuration.md, written from the configuration schema (src/config.ts
 * settingRows, what --help prints) between its markers, so the page cannot drift from the server:
 * test/unit/config-docs.test.ts fails when it is stale.
 *
 *   npm run docs:config
 */
import fs from 'node:fs';
import path from 'node:path';
import { settingRows } from '../../src/config.js';

export const DOC = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../docs/configuration.md');
export const START = '<!-- settings table: written by npm run docs:config from src/config.ts -->';
export const END = '<!-- end of settings table -->';

const cell = (text: string) => text.replace(/\|/g, '\\|');

export function settingsTable(): string {
  const rows = settingRows().map((r) => `| \`${cell(r.flag)}\` | \`${r.env}\` | ${r.default ? `\`${cell(r.default)}\`` : ''} | ${cell(r.meaning)} |`);
  return ['| flag | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The page with its table written anew. */
export function withTable(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start === -1 || end < start) throw new Error(`${DOC} lacks the markers ${START} ... ${END}`);
  return `${page.slice(0, start + START.length)}\n${settingsTable()}\n${page.slice(end)}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  fs.writeFileSync(DOC, withTable(fs.readFileSync(DOC, 'utf8')));
  console.log(`wrote the settings table of ${DOC}`);
}

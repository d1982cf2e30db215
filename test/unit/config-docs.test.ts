import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config.js';
import { DOC, END, START, withTable } from '../../scripts/docs/config-table.js';

describe('docs/configuration.md', () => {
  const page = fs.readFileSync(DOC, 'utf8');

  it("holds the settings table as the schema writes it (if not: npm run docs:config)", () => {
    expect(page).toBe(withTable(page));
  });

  it('has a row for every setting of the schema', () => {
    const table = page.slice(page.indexOf(START), page.indexOf(END));
    const envs = Object.keys(configSchema.shape).map((f) => f.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase());
    for (const env of envs) expect(table, env).toContain(`| \`${env}\` |`);
  });
});

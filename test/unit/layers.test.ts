/**
 * The structure drawn from imports: every import in src/ runs down the layers of shared/DESIGN.md
 * (entry -> http -> inference -> pool -> worker -> core -> models), never back up, and the runtime
 * imports nothing from scripts/ (model builders, benchmarks).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

/** Top to bottom; a file may import its own layer and any layer below it. */
const LAYERS = ['entry', 'cli', 'http', 'inference', 'pool', 'worker', 'core', 'models'] as const;
const SRC = path.join(ROOT, 'src');

function layerOf(file: string): (typeof LAYERS)[number] {
  const [top] = path.relative(SRC, file).split(path.sep);
  if (top && (LAYERS as readonly string[]).includes(top)) return top as (typeof LAYERS)[number];
  return 'entry'; // main.ts, app.ts, config.ts, metrics.ts
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

const imports = sourceFiles(SRC).flatMap((file) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+'(\.[^']+)'/gm)].map((m) => ({
    file: path.relative(ROOT, file),
    target: path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')),
  })),
);

describe('import structure of src/', () => {
  it('finds the imports it checks', () => {
    expect(imports.length).toBeGreaterThan(50);
  });

  it('no import runs back up the layers', () => {
    const upward = imports
      .filter(({ target }) => target.startsWith(SRC))
      .filter(({ file, target }) => LAYERS.indexOf(layerOf(target)) < LAYERS.indexOf(layerOf(path.join(ROOT, file))))
      .map(({ file, target }) => `${file} -> ${path.relative(ROOT, target)}`);
    expect(upward).toEqual([]);
  });

  it('the runtime imports no build-time generator', () => {
    expect(imports.filter(({ target }) => !target.startsWith(SRC)).map(({ file, target }) => `${file} -> ${path.relative(ROOT, target)}`)).toEqual([]);
  });
});

/**
 * The structure drawn from imports (shared/DESIGN.md): every import in src/ runs down the layers
 * (entry -> cli -> http -> inference -> pool -> worker -> chat -> engines -> tokenize -> models ->
 * core), never back up; no files import each other in a loop; the runtime imports nothing from
 * scripts/ or test/; http rests on core alone (the layer order would allow it inference, pool and
 * everything below: the code keeps the narrower floor, and this pins it); the chat layer knows no
 * engine, only the sequence interface; the decoder does not import the graph rewrites; what every
 * dialect shares (http/shared) names none of them; and the core's vocabulary rests on nothing else.
 * Type-only imports count: they tie the code as much.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/paths.js';

/** Top to bottom; a file may import its own layer and any layer below it. */
const LAYERS = ['entry', 'cli', 'http', 'inference', 'pool', 'worker', 'chat', 'engines', 'cache', 'tokenize', 'models', 'core'] as const;
const SRC = path.join(ROOT, 'src');

function layerOf(file: string): (typeof LAYERS)[number] {
  const [top] = path.relative(SRC, file).split(path.sep);
  if (top && (LAYERS as readonly string[]).includes(top)) return top as (typeof LAYERS)[number];
  return 'entry'; // main.ts, app.ts, config.ts, metrics.ts
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

const rel = (file: string) => path.relative(ROOT, file);
const imports = sourceFiles(SRC).flatMap((file) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+'(\.[^']+)'/gm)].map((m) => ({
    file,
    target: path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')),
  })),
);
const inside = (file: string, folder: string) => file.startsWith(path.join(SRC, folder) + path.sep);
const crossings = (test: (edge: { file: string; target: string }) => boolean) => imports.filter(test).map(({ file, target }) => `${rel(file)} -> ${rel(target)}`);

/** Files that import each other in a loop: the strongly connected components with more than one file (Tarjan). */
function cycles(): string[][] {
  const edges = new Map<string, string[]>();
  for (const { file, target } of imports) if (target.startsWith(SRC)) edges.set(file, [...(edges.get(file) ?? []), target]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do component.push((w = stack.pop()!));
      while (w !== v);
      if (component.length > 1) found.push(component.map(rel).sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import structure of src/', () => {
  it('finds the imports it checks', () => {
    expect(imports.length).toBeGreaterThan(100);
    expect(new Set(imports.map(({ file }) => layerOf(file)))).toEqual(new Set(LAYERS));
  });

  it('no import runs back up the layers', () => {
    expect(crossings(({ file, target }) => target.startsWith(SRC) && LAYERS.indexOf(layerOf(target)) < LAYERS.indexOf(layerOf(file)))).toEqual([]);
  });

  it('no files import each other in a loop', () => {
    expect(cycles()).toEqual([]);
  });

  it('the runtime imports no build-time generator and no test code', () => {
    expect(crossings(({ target }) => !target.startsWith(SRC))).toEqual([]);
  });

  it('the chat layer knows no engine: only the sequence interface (src/engines/*.ts)', () => {
    expect(crossings(({ file, target }) => inside(file, 'chat') && inside(target, 'engines') && path.dirname(target) !== path.join(SRC, 'engines'))).toEqual([]);
  });

  it('the ONNX decoder does not import the graph rewrites (nor they the decoder)', () => {
    const decode = 'engines/onnx/decode';
    const graph = 'engines/onnx/graph';
    expect(crossings(({ file, target }) => (inside(file, decode) && inside(target, graph)) || (inside(file, graph) && inside(target, decode)))).toEqual([]);
  });

  it('http imports only core and http: every model, pool and engine detail reaches it through the inference service', () => {
    expect(crossings(({ file, target }) => inside(file, 'http') && target.startsWith(SRC) && !inside(target, 'http') && !inside(target, 'core'))).toEqual([]);
  });

  it('what every dialect shares names none of them', () => {
    expect(crossings(({ file, target }) => inside(file, 'http/shared') && inside(target, 'http') && !inside(target, 'http/shared'))).toEqual([]);
  });

  it("the core's vocabulary rests on nothing else", () => {
    expect(crossings(({ file, target }) => inside(file, 'core') && target.startsWith(SRC) && !inside(target, 'core'))).toEqual([]);
  });
});

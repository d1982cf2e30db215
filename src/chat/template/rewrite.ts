/**
 * Chat templates rewritten into what transformers.js's Jinja (the @huggingface/jinja copy bundled
 * inside it, whose filters and methods cannot be extended from outside) renders, for the Python
 * Jinja constructs real templates use that it lacks. Each rewrite is a plain source transformation
 * that keeps the template's meaning, and leaves a template without the construct unchanged:
 *
 * - `'text {} more'.format(x)` (Tencent Hy3): string concatenation.
 * - `list|min`, `list|max` (MiniCPM5): `list|sort|first`, `list|sort|last`.
 * - `name|string` on a mapping (Apriel): its JSON (Python would print its repr; an object is refused
 *   here), strings as they are.
 * - `{% set x = ns.list.pop(0) %}` and `{% set _ = ns.list.append(x) %}` (Kimi K2's tool-result
 *   queue; lists have no methods here): the first item then the rest, the list plus one.
 * - A tuple of two strings in a list literal, unpacked by a loop (Functionary v3.2): a list.
 * - `d.items()`, `d.keys()`, `d.values()`: `d|items`, `d|keys`, `d|values`. Python's Jinja finds a
 *   mapping's methods before its keys; this one finds the keys first, so a JSON schema whose
 *   `properties` has a parameter named `items` (Codex's spawn_agent and send_input tools) made
 *   `properties.items()` a call of that parameter's schema, and gpt-oss's template refused every
 *   Codex request. The filters read the mapping itself.
 * - `map[x.y] is defined` (Hermes 2 Pro's and 3's type table, read with `json_spec.type`): false
 *   where `x.y` is neither a string nor a number, as Python's lookup of an undefined or unhashable key
 *   gives undefined; here the lookup throws (the templates pass an array parameter's `json_spec|items`,
 *   a list, where they meant its `items` schema, so every tool with an array parameter was refused).
 * - A dict literal with integer keys (Seed-OSS's thinking budget table, refused here): string keys,
 *   its `|dictsort` the sorted (integer, value) pairs written out, and `name[123]` read as `name['123']`.
 *
 * Pure; templates are rewritten once per tokenizer (./render.ts).
 */

/** The template's source with the constructs above rewritten. */
export function rewriteTemplate(template: string): string {
  return [rewriteFormat, rewriteMinMax, rewriteStringFilter, rewritePop, rewriteAppend, rewriteIntegerKeys, rewriteTuples, rewriteMappingMethods, rewriteKeyDefined].reduce((source, rewrite) => rewrite(source), template);
}

/** `'a{}b'.format(x, y)` -> `('a' ~ (x) ~ 'b')`: positional `{}` fields only; others stay. */
function rewriteFormat(source: string): string {
  return source.replace(/(['"])((?:(?!\1)[^\\\n])*)\1\.format\(([^()]*)\)/g, (whole, quote: string, text: string, args: string) => {
    const parts = text.split('{}');
    const values = args.split(',').map((a) => a.trim()).filter((a) => a !== '');
    if (parts.length - 1 !== values.length || /[{}]/.test(parts.join(''))) return whole;
    return `(${parts.map((part, i) => `${quote}${part}${quote}${i < values.length ? ` ~ (${values[i]})` : ''}`).join(' ~ ')})`;
  });
}

function rewriteMinMax(source: string): string {
  return inCode(source, (code) => code.replace(/\|\s*(min|max)\b(?!\s*\()/g, (_whole, which: string) => `|sort|${which === 'min' ? 'first' : 'last'}`));
}

/** `a.b|string` -> `(a.b|tojson if a.b is mapping else a.b|string)`: the same text for anything but a mapping. */
function rewriteStringFilter(source: string): string {
  // Not a name after `|` (a filter: `x|length|string` stays) or after `.`, `)`, `]`, a quote (part of a longer expression).
  return inCode(source, (code) => code.replace(/(?<![\w.\]'")|]\s*)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\|\s*string\b/g, (_whole, name: string) => `(${name}|tojson if ${name} is mapping else ${name}|string)`));
}

/** `{%- set x = a.b.pop(0) -%}` -> `{%- set x = a.b[0] -%}{%- set a.b = a.b[1:] -%}`. */
function rewritePop(source: string): string {
  return source.replace(/\{%(-?)\s*set\s+(\w+)\s*=\s*([A-Za-z_]\w*\.[A-Za-z_]\w*)\.pop\(0\)\s*(-?)%\}/g, (_whole, open: string, target: string, list: string, close: string) =>
    `{%${open} set ${target} = ${list}[0] -%}{%- set ${list} = ${list}[1:] ${close}%}`);
}

/** `{%- set _ = ns.list.append(x) -%}` -> `{%- set ns.list = ns.list + [x] -%}` (lists have no methods here). */
function rewriteAppend(source: string): string {
  return source.replace(/\{%(-?)\s*set\s+\w+\s*=\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.append\(((?:[^()]|\([^()]*\))*)\)\s*(-?)%\}/g, (_whole, open: string, list: string, item: string, close: string) =>
    `{%${open} set ${list} = ${list} + [${item}] ${close}%}`);
}

function rewriteIntegerKeys(source: string): string {
  let out = source;
  for (const match of source.matchAll(/\{%-?\s*set\s+(\w+)\s*=\s*(\{[\s\d:,.\-+]*\})\s*-?%\}/g)) {
    const [statement, name, literal] = match as unknown as [string, string, string];
    const entries = [...literal.matchAll(/(-?\d+)\s*:\s*(-?[\d.]+)/g)].map((m) => [Number(m[1]), m[2]!] as const);
    if (entries.length === 0) continue;
    const stringKeyed = `{${entries.map(([k, v]) => `'${k}': ${v}`).join(', ')}}`;
    const pairs = `[${[...entries].sort((a, b) => a[0] - b[0]).map(([k, v]) => `[${k}, ${v}]`).join(', ')}]`;
    out = out
      .replace(statement, statement.replace(literal, stringKeyed))
      .replace(new RegExp(`\\b${name}\\s*\\|\\s*dictsort\\b`, 'g'), pairs)
      .replace(new RegExp(`\\b${name}\\[(-?\\d+)\\]`, 'g'), `${name}['$1']`);
  }
  return out;
}

/** `[("a", "b"), ...]` -> `[["a", "b"], ...]`: a loop here cannot unpack a tuple. */
function rewriteTuples(source: string): string {
  return source.replace(/(?<=[[,]\s*)\(\s*("[^"]*"|'[^']*')\s*,\s*("[^"]*"|'[^']*')\s*\)/g, '[$1, $2]');
}

/** `x.items()` -> `x|items` (and keys, values), where nothing is read from the result directly (`x.items()[0]` stays). */
function rewriteMappingMethods(source: string): string {
  return inCode(source, (code) => code.replace(/\.(items|keys|values)\(\s*\)(?!\s*[[.(])/g, '|$1'));
}

/** `m[x.y] is defined` -> `((x.y is string or x.y is number) and m[x.y] is defined)`. */
function rewriteKeyDefined(source: string): string {
  return inCode(source, (code) => code.replace(/(?<![\w.\]])([A-Za-z_]\w*)\[([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\]\s+is\s+defined\b/g,
    (_whole, map: string, key: string) => `((${key} is string or ${key} is number) and ${map}[${key}] is defined)`));
}

/** `rewrite` applied to the code of the template's tags only: not to its text, nor to string literals. */
function inCode(source: string, rewrite: (code: string) => string): string {
  return source.replace(/\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g, (tag) =>
    tag.split(/('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")/).map((part, i) => (i % 2 === 1 ? part : rewrite(part))).join(''));
}

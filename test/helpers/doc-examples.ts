/**
 * The curl examples of README.md and docs/*.md, read as a user reads them: a ```sh block of `curl`
 * commands followed by a ```json block, the answer to its last command. Commands are parsed here
 * (URL, -H headers, -d body, -X method; no shell runs), and answers are compared by shape: the
 * same keys at every level, the same types; a string with `…` is a pattern (`"msg_…"`, `"…"`); a
 * bare `…` that ends an array stands for more elements like the ones before; integers (token
 * counts, indexes) are equal; a decimal equals the answer rounded to as many places as the
 * example shows; `created` and `created_at` (timestamps) are any number.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface CurlCommand {
  method: string;
  /** As written, e.g. http://127.0.0.1:8080/v1/messages. */
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface DocExample {
  /** file:line of the sh block. */
  where: string;
  commands: CurlCommand[];
  /** The json block, parsed (bare `…` turned into REST). */
  expected: unknown;
}

/** A bare `…` in an example's JSON, read as "more elements like these". */
export const REST = '\u0000more';

/** Every fenced block of a Markdown file, with its language and first line (1-based). */
function fencedBlocks(text: string): { lang: string; body: string; line: number; end: number }[] {
  const blocks: { lang: string; body: string; line: number; end: number }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++);
    blocks.push({ lang: open[1]!, body: lines.slice(start + 1, i).join('\n'), line: start + 1, end: i + 1 });
  }
  return blocks;
}

/**
 * The commands of a shell block, each as its words: '…' and "…" quoting (which may span lines),
 * backslash escapes and line continuations, # comments; a newline outside quotes ends a command.
 */
export function shellCommands(text: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | null = null;
  const endWord = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const close = text.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in: ${text}`);
      word = (word ?? '') + text.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let j = i + 1;
      let quoted = '';
      for (; j < text.length && text[j] !== '"'; j++) quoted += text[j] === '\\' && /["\\$`]/.test(text[j + 1] ?? '') ? text[++j] : text[j];
      if (j >= text.length) throw new Error(`unclosed " in: ${text}`);
      word = (word ?? '') + quoted;
      i = j;
    } else if (c === '\\') {
      // A backslash-newline joins the lines; any other escaped character is itself.
      if (text[i + 1] !== '\n') word = (word ?? '') + (text[i + 1] ?? '');
      i++;
    } else if (c === '\n') {
      endCommand();
    } else if (/\s/.test(c)) {
      endWord();
    } else if (c === '#' && word === null) {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
    } else {
      word = (word ?? '') + c;
    }
  }
  endCommand();
  return commands;
}

/** The words of a one-line command. */
export const shellWords = (line: string): string[] => shellCommands(line)[0] ?? [];

/** One curl command line into its request; an option this reader does not know is an error, never skipped. */
export function parseCurl(words: string[]): CurlCommand {
  if (words[0] !== 'curl') throw new Error(`not a curl command: ${words.join(' ')}`);
  let method: string | undefined;
  let url: string | undefined;
  const headers: Record<string, string> = {};
  let body: string | undefined;
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    if (w === '-s' || w === '--silent' || w === '-S' || w === '-sS') continue;
    if (w === '-H' || w === '--header') {
      const header = words[++i]!;
      const colon = header.indexOf(':');
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (w === '-d' || w === '--data' || w === '--data-raw') {
      body = words[++i];
    } else if (w === '-X' || w === '--request') {
      method = words[++i];
    } else if (w.startsWith('-')) {
      throw new Error(`curl option ${w} is not understood by this reader: ${words.join(' ')}`);
    } else if (url === undefined) {
      url = /^https?:\/\//.test(w) ? w : `http://${w}`;
    } else {
      throw new Error(`a second URL in: ${words.join(' ')}`);
    }
  }
  if (!url) throw new Error(`no URL in: ${words.join(' ')}`);
  return { method: method ?? (body !== undefined ? 'POST' : 'GET'), url, headers, ...(body !== undefined ? { body } : {}) };
}

/** JSON with bare `…` (outside strings) read as REST. */
export function parseExampleJson(text: string): unknown {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '…') {
      out += JSON.stringify(REST);
    } else {
      out += c;
    }
  }
  return JSON.parse(out);
}

/** The sh blocks with curl commands in `file`: those followed by a json block are examples; the rest are counted. */
export function docExamples(root: string, file: string): { examples: DocExample[]; withoutAnswer: string[] } {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const blocks = fencedBlocks(text);
  const lines = text.split('\n');
  const examples: DocExample[] = [];
  const withoutAnswer: string[] = [];
  blocks.forEach((block, i) => {
    if (block.lang !== 'sh' || !/^\s*curl\s/m.test(block.body)) return;
    const where = `${file}:${block.line}`;
    const next = blocks[i + 1];
    // The answer is the json block right after (nothing but blank lines between).
    const between = next ? lines.slice(block.end, next.line - 1).join('').trim() : 'end';
    if (!next || next.lang !== 'json' || between !== '') {
      withoutAnswer.push(where);
      return;
    }
    const commandLines = shellCommands(block.body);
    const other = commandLines.find((w) => w[0] !== 'curl');
    if (other) throw new Error(`${where}: an example block holds only curl commands, not: ${other.join(' ')}`);
    let expected: unknown;
    try {
      expected = parseExampleJson(next.body);
    } catch (error) {
      throw new Error(`${file}:${next.line}: the example's answer is not JSON (bare … allowed): ${(error as Error).message}`);
    }
    examples.push({ where, commands: commandLines.map(parseCurl), expected });
  });
  return { examples, withoutAnswer };
}

const describeValue = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : typeof v === 'object' ? 'an object' : String(v));

/**
 * Where `actual` differs from the example's `expected` (empty when it matches). `shapeOnly`: keys
 * and types only, for the elements a trailing `…` stands for.
 */
export function shapeDifferences(expected: unknown, actual: unknown, at = '', options: { key?: string; shapeOnly?: boolean } = {}): string[] {
  const here = at || '(top)';
  const { key = '', shapeOnly = false } = options;
  if (typeof expected === 'string') {
    if (typeof actual !== 'string') return [`${here}: expected a string, got ${describeValue(actual)}`];
    if (shapeOnly) return [];
    if (!expected.includes('…')) return expected === actual ? [] : [`${here}: expected ${JSON.stringify(expected)}, got ${describeValue(actual)}`];
    const pattern = new RegExp(`^${expected.split('…').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*')}$`);
    return pattern.test(actual) ? [] : [`${here}: expected ${JSON.stringify(expected)}, got ${describeValue(actual)}`];
  }
  if (typeof expected === 'number') {
    if (typeof actual !== 'number') return [`${here}: expected a number, got ${describeValue(actual)}`];
    if (shapeOnly || key === 'created' || key === 'created_at') return [];
    if (Number.isInteger(expected)) return actual === expected ? [] : [`${here}: expected ${expected}, got ${actual}`];
    const places = String(expected).split('.')[1]?.length ?? 0;
    return Number(actual.toFixed(places)) === expected ? [] : [`${here}: expected ${expected} (to ${places} places), got ${actual}`];
  }
  if (expected === null || typeof expected === 'boolean') {
    if (shapeOnly && typeof actual === typeof expected) return [];
    return actual === expected ? [] : [`${here}: expected ${String(expected)}, got ${describeValue(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${here}: expected an array, got ${describeValue(actual)}`];
    const open = expected.at(-1) === REST;
    const shown = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < shown.length : actual.length !== shown.length) {
      return [`${here}: expected ${open ? 'at least ' : ''}${shown.length} element(s), got ${actual.length}`];
    }
    if (shown.length === 0) return [];
    // With a trailing …, every further element has the shape of the last one shown.
    return actual.flatMap((item, i) => shapeDifferences(shown[Math.min(i, shown.length - 1)], item, `${at}[${i}]`, { shapeOnly: shapeOnly || i >= shown.length }));
  }
  if (typeof expected === 'object') {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return [`${here}: expected an object, got ${describeValue(actual)}`];
    const want = Object.keys(expected);
    const got = Object.keys(actual);
    return [
      ...want.filter((k) => !got.includes(k)).map((k) => `${at}.${k}: in the example, not in the answer`),
      ...got.filter((k) => !want.includes(k)).map((k) => `${at}.${k}: in the answer, not in the example`),
      ...want.filter((k) => got.includes(k)).flatMap((k) => shapeDifferences((expected as Record<string, unknown>)[k], (actual as Record<string, unknown>)[k], `${at}.${k}`, { key: k, shapeOnly })),
    ];
  }
  return [`${here}: the example holds ${typeof expected}`];
}

/**
 * Makes the string rules of XGrammar's JSON-schema grammars write valid JSON text.
 *
 * XGrammar's converter (web-xgrammar 0.1.27) writes the rule of a string with `maxLength` /
 * `minLength`, a `pattern` or a `format` in the string's *value* space, without JSON's escaping:
 * a bounded length becomes `[^"\\\r\n]{0,40}`, which lets a tab or any other control character
 * through raw; a pattern's `.` becomes `[\u0000-\U0010FFFF]`, letting a raw `"` end the string
 * early; a pattern's literal `"`, `\` or `\t` is written as that raw character. JSON.parse refuses
 * all of these, so a weak model sampling under such a grammar could emit broken JSON (seen: a tab
 * in a `maxLength` string). Its unbounded strings (`basic_string`) and enums are escaped correctly.
 *
 * Here each such rule (`name ::= "\"" … "\""`) is rewritten between its quotes: a character class
 * loses the characters JSON must escape (U+0000–U+001F, `"`, `\`), so what it allows stays inside
 * the class and needs no escape; a literal is JSON-escaped (a pattern's literal `"` is written `\"`).
 * The language shrinks to strings without those characters (except a pattern's own literals), never
 * to anything the schema refuses. The email format's quoted local part, the one hand-written rule
 * that is already in JSON-text space, is first put back in value space so it is encoded once.
 */

/** U+0000–U+001F, `"` and `\`: what a JSON string cannot hold unescaped. */
const MUST_ESCAPE: ReadonlyArray<readonly [number, number]> = [
  [0x00, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
];

const SIMPLE_ESCAPES: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, b: 8, a: 7, e: 27, '0': 0 };

/** One escaped or plain code point at `text[at]`: its value and where the next one starts. */
function codePointAt(text: string, at: number): { cp: number; next: number } {
  const plain = (i: number) => {
    const cp = text.codePointAt(i)!;
    return { cp, next: i + (cp > 0xffff ? 2 : 1) };
  };
  if (text[at] !== '\\') return plain(at);
  const c = text[at + 1]!;
  const hex = { x: 2, u: 4, U: 8 }[c as 'x' | 'u' | 'U'];
  if (hex) return { cp: parseInt(text.slice(at + 2, at + 2 + hex), 16), next: at + 2 + hex };
  if (c in SIMPLE_ESCAPES) return { cp: SIMPLE_ESCAPES[c]!, next: at + 2 };
  return plain(at + 1);
}

type Ranges = Array<[number, number]>;

/** The ranges sorted and merged (new pairs: the input is not changed). */
function normalize(ranges: ReadonlyArray<readonly [number, number]>): Ranges {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

function subtract(ranges: Ranges, remove: ReadonlyArray<readonly [number, number]>): Ranges {
  let out = normalize(ranges);
  for (const [rlo, rhi] of remove) {
    out = out.flatMap(([lo, hi]): Ranges => {
      if (rhi < lo || rlo > hi) return [[lo, hi]];
      const kept: Ranges = [];
      if (lo < rlo) kept.push([lo, rlo - 1]);
      if (hi > rhi) kept.push([rhi + 1, hi]);
      return kept;
    });
  }
  return out;
}

/** A code point as a character class writes it. */
function classChar(cp: number): string {
  if (cp >= 0x21 && cp <= 0x7e && !'\\]-[^"'.includes(String.fromCharCode(cp))) return String.fromCharCode(cp);
  return cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\U${cp.toString(16).padStart(8, '0')}`;
}

/** The class `[...]` whose body is `body` (between the brackets), without what JSON must escape. */
function jsonSafeClass(body: string): string {
  const negated = body.startsWith('^');
  const ranges: Ranges = [];
  for (let at = negated ? 1 : 0; at < body.length; ) {
    const lo = codePointAt(body, at);
    at = lo.next;
    if (body[at] === '-' && at + 1 < body.length) {
      const hi = codePointAt(body, at + 1);
      ranges.push([lo.cp, hi.cp]);
      at = hi.next;
    } else ranges.push([lo.cp, lo.cp]);
  }
  const kept = negated ? normalize([...ranges, ...MUST_ESCAPE]) : subtract(ranges, MUST_ESCAPE);
  // An empty positive class matches nothing: the pattern's only characters there were unwritable.
  if (!negated && kept.length === 0) return '[^\\u0000-\\U0010ffff]';
  return `[${negated ? '^' : ''}${kept.map(([lo, hi]) => (lo === hi ? classChar(lo) : `${classChar(lo)}-${classChar(hi)}`)).join('')}]`;
}

/** The literal `"..."` whose body is `body`, with its characters JSON-escaped. */
function jsonEscapedLiteral(body: string): string {
  let value = '';
  for (let at = 0; at < body.length; ) {
    const { cp, next } = codePointAt(body, at);
    value += String.fromCodePoint(cp);
    at = next;
  }
  const json = JSON.stringify(value).slice(1, -1);
  return `"${json.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The end (exclusive) of the literal or class opened at `text[at]` (`"` or `[`). */
function closing(text: string, at: number): number {
  const close = text[at] === '"' ? '"' : ']';
  let i = at + 1;
  while (i < text.length && text[i] !== close) i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** The part of a string rule between its quotes, with every class and literal made JSON-safe. */
function jsonSafeValue(expr: string): string {
  let out = '';
  for (let at = 0; at < expr.length; ) {
    const c = expr[at];
    if (c === '"' || c === '[') {
      const end = closing(expr, at);
      const body = expr.slice(at + 1, end - 1);
      out += c === '"' ? jsonEscapedLiteral(body) : jsonSafeClass(body);
      at = end;
    } else out += expr[at++];
  }
  return out;
}

/** XGrammar's email rule writes its quoted local part as JSON text; this is the same in value space. */
const EMAIL_QUOTED_JSON = String.raw`"\\" "\"" ( "\\" [ -~] | [ !#-[\]-~] )* "\\" "\""`;
const EMAIL_QUOTED_VALUE = String.raw`"\"" ( "\\" [ -~] | [ !#-[\]-~] )* "\""`;

const QUOTE = String.raw`"\""`;

/** `ebnf` (XGrammar's JSON-schema converter output) with its string rules writing valid JSON. */
export function jsonSafeStrings(ebnf: string): string {
  return ebnf
    .split('\n')
    .map((line) => {
      const match = /^(\S+ ::= )(.*)$/.exec(line);
      if (!match) return line;
      const [, head, body] = match as unknown as [string, string, string];
      if (!body.startsWith(`${QUOTE} `) || !body.endsWith(` ${QUOTE}`)) return line;
      const value = body.slice(QUOTE.length, body.length - QUOTE.length).split(EMAIL_QUOTED_JSON).join(EMAIL_QUOTED_VALUE);
      return `${head}${QUOTE}${jsonSafeValue(value)}${QUOTE}`;
    })
    .join('\n');
}

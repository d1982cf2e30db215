/**
 * The shortest rest of a string whose `format` or `pattern` constrains it, as the guide's budget
 * rule needs it (json-completion.ts): what XGrammar's rule for that format (or pattern) accepts
 * after the text written so far. A proposal only: the guide checks each of its tokens against the
 * grammar's mask, and a token the grammar refuses ends the forcing. Undefined wherever the rest
 * cannot be worked out (a format without a rule here, a pattern's string already begun).
 */

/** Formats of a fixed shape: a valid instance of the fixed part, and whether a time's optional fraction and its zone follow it. */
const TEMPLATES: Record<string, { fixed: string; zoned: boolean }> = {
  date: { fixed: '2000-01-01', zoned: false },
  'date-time': { fixed: '2000-01-01T00:00:00', zoned: true },
  time: { fixed: '00:00:00', zoned: true },
  uuid: { fixed: '00000000-0000-0000-0000-000000000000', zoned: false },
};
/** Shortest valid instances of the other formats with a rule here. */
const INSTANCES: Record<string, string> = { email: 'a@a', hostname: 'a', ipv4: '0.0.0.0', ipv6: '::' };

/** A table's entry for a schema's format: own keys only (`format: "constructor"` has none). */
const entry = <T>(table: Record<string, T>, format: string): T | undefined => (Object.hasOwn(table, format) ? table[format] : undefined);

/** The shortest value of a format, unquoted; undefined for a format without a rule here. */
export function formatInstance(format: string): string | undefined {
  const template = entry(TEMPLATES, format);
  return template ? template.fixed + (template.zoned ? 'Z' : '') : entry(INSTANCES, format);
}

/**
 * What completes a `format` string written as far as `typed` (its text inside the quotes), without
 * the closing quote; undefined when not known. Each rule follows XGrammar's for the format: a date's
 * digits in their ranges (the template's digits fit every branch), a time's optional fraction and
 * its zone (`Z` or `+hh:mm`), an email's dot-atoms, `@` and domain labels (a label after a dot at
 * least two characters long), a hostname's lower-case labels.
 */
export function closeFormat(format: string, typed: string): string | undefined {
  const template = entry(TEMPLATES, format);
  if (template) {
    const { fixed, zoned } = template;
    if (typed.length <= fixed.length) return fixed.slice(typed.length) + (zoned ? 'Z' : '');
    if (!zoned) return undefined;
    const zone = typed.slice(fixed.length);
    if (zone === 'Z') return '';
    if (/^\.\d*$/.test(zone)) return `${zone === '.' ? '0' : ''}Z`;
    const offset = /^([.]\d+)?([+-](?:\d{0,2}|\d\d:\d{0,2}))$/.exec(zone);
    if (offset) return '+00:00'.slice(offset[2]!.length);
    if (/^\.\d+Z$/.test(zone)) return '';
    return undefined;
  }
  if (format === 'email') {
    if (typed.startsWith('\\"')) return undefined; // a quoted local part
    const at = typed.indexOf('@');
    if (at < 0) return `${typed === '' || typed.endsWith('.') ? 'a' : ''}@a`;
    return closeLabels(typed.slice(at + 1), /[0-9A-Za-z]/);
  }
  if (format === 'hostname') return closeLabels(typed, /[0-9a-z]/);
  return typed === '' ? entry(INSTANCES, format) : undefined;
}

/**
 * Closes dot-separated labels written as far as `typed`: a label ends with a letter or digit, and a
 * label after a dot has at least two characters (XGrammar's email domain; a hostname's labels need
 * one, so two is valid there too).
 */
function closeLabels(typed: string, alnum: RegExp): string {
  const dot = typed.lastIndexOf('.');
  const label = typed.slice(dot + 1);
  if (label === '') return dot < 0 ? 'a' : 'aa';
  if (!alnum.test(label.at(-1)!)) return 'a';
  return dot >= 0 && label.length < 2 ? 'a' : '';
}

/** Characters a JSON string holds without an escape, in the order a class's member is chosen from. */
const PLAIN = (c: number) => c >= 0x20 && c !== 0x22 && c !== 0x5c;

/** The first character up to U+2FFF a JSON string holds unescaped that is in `ranges` (or, `negated`, is not). */
function firstPlain(ranges: ReadonlyArray<readonly [number, number]>, negated: boolean): number | undefined {
  for (let c = 0x20; c < 0x3000; c++) if (PLAIN(c) && ranges.some(([a, b]) => c >= a && c <= b) !== negated) return c;
  return undefined;
}

/**
 * A reader of one pattern, left to right (`at`), each method the shortest string of one production
 * (alternation, sequence, atom, class); what it does not read throws, and shortestMatch answers
 * undefined.
 */
class PatternReader {
  at = 0;
  constructor(readonly pattern: string) {}

  fail(): never {
    throw new Error('unread');
  }

  peek(): string | undefined {
    return this.pattern[this.at];
  }

  /** A class's members as ranges of code points (negated: the complement within the Basic Latin plane's plain characters). */
  private classChar(): number {
    this.at++; // [
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.at++;
    }
    const ranges: Array<[number, number]> = [];
    // (ECMA's `[]` is an empty class: it matches nothing, and this finds no member.)
    while (this.at < this.pattern.length && this.peek() !== ']') {
      const lo = this.classAtom(ranges);
      if (lo === undefined) continue;
      if (this.peek() === '-' && this.pattern[this.at + 1] !== ']' && this.at + 1 < this.pattern.length) {
        this.at++;
        const hi = this.classAtom(ranges);
        if (hi === undefined) this.fail();
        ranges.push([lo, hi!]);
      } else ranges.push([lo, lo]);
    }
    if (this.peek() !== ']') this.fail();
    this.at++;
    return firstPlain(ranges, negated) ?? this.fail();
  }

  /** One member of a class: a character (its code point), or a shorthand added to `ranges` (undefined). */
  private classAtom(ranges: Array<[number, number]>): number | undefined {
    const c = this.pattern[this.at++];
    if (c === undefined) return this.fail();
    if (c !== '\\') return c.codePointAt(0)!;
    const e = this.pattern[this.at++];
    if (e === undefined) return this.fail();
    const shorthand = SHORTHANDS[e];
    if (shorthand) {
      ranges.push(...shorthand);
      return undefined;
    }
    return this.escaped(e);
  }

  private escaped(e: string): number {
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, '0': 0 };
    if (e in simple) return simple[e]!;
    if (e === 'u') {
      const hex = this.pattern.slice(this.at, this.at + 4);
      this.at += 4;
      return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : this.fail();
    }
    if (e === 'x') {
      const hex = this.pattern.slice(this.at, this.at + 2);
      this.at += 2;
      return /^[0-9a-fA-F]{2}$/.test(hex) ? parseInt(hex, 16) : this.fail();
    }
    if (/[0-9bBkpP]/.test(e)) this.fail(); // backreferences, word boundaries, named groups, properties
    return e.codePointAt(0)!;
  }

  /** The shortest string of one atom. */
  private atom(): string {
    const c = this.peek();
    if (c === '(') {
      this.at++;
      if (this.peek() === '?') {
        if (this.pattern[this.at + 1] !== ':') this.fail(); // lookarounds, named groups
        this.at += 2;
      }
      const inner = this.alternation();
      if (this.peek() !== ')') this.fail();
      this.at++;
      return inner;
    }
    if (c === '[') return String.fromCodePoint(this.classChar());
    if (c === '.') {
      this.at++;
      return 'a';
    }
    if (c === '\\') {
      this.at++;
      const e = this.pattern[this.at++];
      if (e === undefined) return this.fail();
      const shorthand = SHORTHANDS[e];
      if (shorthand) return String.fromCodePoint(firstPlain(shorthand, false) ?? this.fail());
      const cp = this.escaped(e);
      return PLAIN(cp) ? String.fromCodePoint(cp) : this.fail();
    }
    if (c === undefined || c === ')' || c === '|' || /[*+?{]/.test(c)) return this.fail();
    this.at++;
    return c;
  }

  /** The fewest repetitions a quantifier after an atom asks for (1 without one). */
  private repetitions(): number {
    const c = this.peek();
    let min = 1;
    if (c === '*' || c === '?') {
      this.at++;
      min = 0;
    } else if (c === '+') this.at++;
    else if (c === '{') {
      const m = /^\{(\d+)(,\d*)?\}/.exec(this.pattern.slice(this.at));
      if (!m) return 1; // a literal brace
      this.at += m[0].length;
      min = Number(m[1]);
    } else return 1;
    if (this.peek() === '?') this.at++; // lazy
    return min;
  }

  private sequence(): string {
    let out = '';
    while (this.at < this.pattern.length && this.peek() !== '|' && this.peek() !== ')') {
      if (this.peek() === '^' || this.peek() === '$') {
        this.at++;
        continue;
      }
      const text = this.atom();
      out += text.repeat(this.repetitions());
    }
    return out;
  }

  alternation(): string {
    let best = this.sequence();
    while (this.peek() === '|') {
      this.at++;
      const other = this.sequence();
      if (other.length < best.length) best = other;
    }
    return best;
  }
}

/**
 * The shortest string a regular expression (JSON Schema's `pattern`, ECMA syntax) matches whole,
 * or undefined for what this does not read (lookarounds, backreferences, a class with no character
 * a JSON string holds unescaped). Anchors are read as the grammar reads them: the whole string.
 */
export function shortestMatch(pattern: string): string | undefined {
  const reader = new PatternReader(pattern);
  try {
    const result = reader.alternation();
    return reader.at === pattern.length ? result : undefined;
  } catch {
    return undefined;
  }
}

const SHORTHANDS: Record<string, Array<[number, number]>> = {
  d: [[0x30, 0x39]],
  w: [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]],
  s: [[0x20, 0x20]],
  D: [[0x20, 0x2f], [0x3a, 0x2fff]],
  W: [[0x20, 0x2f], [0x3a, 0x40], [0x5b, 0x5e], [0x60, 0x60], [0x7b, 0x2fff]],
  S: [[0x21, 0x2fff]],
};

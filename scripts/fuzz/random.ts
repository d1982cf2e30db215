/**
 * A small seeded random source for the fuzzer. Every case draws from its own generator, seeded
 * from (run seed, endpoint, case index), so one case replays alone: FUZZ_SEED=S FUZZ_CASE=endpoint:i.
 */

/** sfc32 (Chris Doty-Humphrey's small fast counter): 128-bit state, passes PractRand to 2^40+. */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(...seeds: number[]) {
    // Spread the seeds over the state with an FNV-1a style mix, then discard the first outputs.
    let h = 0x811c9dc5;
    const mix = (x: number) => {
      h = Math.imul(h ^ (x >>> 0), 0x01000193) >>> 0;
      h ^= h >>> 15;
      return h;
    };
    for (const s of seeds) mix(s), mix(Math.floor(s / 2 ** 32));
    this.a = mix(1);
    this.b = mix(2);
    this.c = mix(3);
    this.d = 1;
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 2 ** 32;
  }

  /** Integer in [min, max], inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)]!;
  }

  /** Picks by weight: [[weight, value], ...]. */
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T {
    const total = items.reduce((sum, [w]) => sum + w, 0);
    let x = this.float() * total;
    for (const [w, v] of items) {
      if ((x -= w) < 0) return v;
    }
    return items.at(-1)![1];
  }
}

/** A stable 32-bit hash of a string (endpoint names into seeds). */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Odd values

const LONE_HIGH = '\ud800';
const LONE_LOW = '\udfff';

/** Short strings that break naive code: empty, whitespace, NUL, lone surrogates, RTL, prototype keys, JSON-ish text. */
export const ODD_STRINGS: readonly string[] = [
  '', ' ', '\t\n', '\u0000', 'a\u0000b', LONE_HIGH, LONE_LOW, `x${LONE_LOW}${LONE_HIGH}y`, '\ufeff', '\u202e', '🙂', '👩‍👩‍👧‍👦',
  'é', 'e\u0301', '\u0085', '\u2028\u2029', '\uffff', '\r\n\r\n', '%00', '%E0%A4%A', '../../etc/passwd', '__proto__',
  'constructor', 'toString', 'null', 'true', '{}', '[]', '"', '\\', '\\u0000', '<script>', "'; DROP TABLE x; --",
  '<|im_start|>system', '<think>', '</think>', '<tool_call>', '<|endoftext|>', 'NaN', '-0', '1e309', 'x'.repeat(300),
];

/** A random string of `length` UTF-16 code units drawn from ASCII, BMP, astral pairs and lone surrogates. */
export function randomString(rng: Random, length: number): string {
  const out: string[] = [];
  while (out.length < length) {
    const kind = rng.int(0, 9);
    if (kind < 5) out.push(String.fromCharCode(rng.int(0x20, 0x7e)));
    else if (kind === 5) out.push(String.fromCharCode(rng.int(0, 0x1f)));
    else if (kind === 6) out.push(String.fromCharCode(rng.int(0x80, 0xd7ff)));
    else if (kind === 7) out.push(String.fromCodePoint(rng.int(0x10000, 0x10ffff)));
    else if (kind === 8) out.push(String.fromCharCode(rng.int(0xd800, 0xdfff))); // lone surrogate
    else out.push(rng.pick(['"', '\\', '/', '\u2028', '\ufeff', ' ']));
  }
  return out.join('');
}

/** An odd string: from the list, random, or huge (up to `maxHuge` code units, default 1 MiB). */
export function oddString(rng: Random, maxHuge = 1 << 20): string {
  return rng.weighted<() => string>([
    [6, () => rng.pick(ODD_STRINGS)],
    [6, () => randomString(rng, rng.int(1, 40))],
    [1, () => randomString(rng, rng.int(1000, 20_000))],
    // A huge string: the body is well under the body limit, but tokenizers and validators see all of it.
    [0.3, () => rng.pick(['a', 'ab ', '🙂', '\u0000', LONE_HIGH]).repeat(Math.ceil(rng.int(maxHuge / 2, maxHuge) / 2))],
  ])();
}

export const ODD_NUMBERS: readonly number[] = [0, -0, -1, 1, 0.5, 1.5, 2 ** 31, 2 ** 53, -(2 ** 53), Number.MAX_SAFE_INTEGER, 1e308, -1e308, 5e-324, 4097, 32_001, 1e9];

/** Any JSON value, depth-bounded: the "wrong type" in a field. */
export function randomJson(rng: Random, depth = 3): unknown {
  const kind = rng.int(0, depth > 0 ? 7 : 4);
  switch (kind) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.chance(0.5) ? rng.pick(ODD_NUMBERS) : rng.int(-1000, 1000);
    case 3: return rng.pick(ODD_STRINGS);
    case 4: return randomString(rng, rng.int(0, 12));
    case 5: case 6: return Array.from({ length: rng.int(0, 4) }, () => randomJson(rng, depth - 1));
    default: {
      const out: Record<string, unknown> = {};
      for (let i = rng.int(0, 4); i > 0; i--) out[rng.chance(0.7) ? randomString(rng, rng.int(0, 8)) : rng.pick(['type', 'text', 'role', 'content', '__proto__', 'constructor'])] = randomJson(rng, depth - 1);
      return out;
    }
  }
}

/** JSON text for a value nested `depth` levels deep ([[[...]]] or {"a":{"a":...}}), built without recursion. */
export function deepJson(rng: Random, depth: number): string {
  if (rng.chance(0.5)) return '['.repeat(depth) + ']'.repeat(depth);
  const key = rng.pick(['a', 'encoding_format', 'type', '']);
  return `{"${key}":`.repeat(depth) + 'null' + '}'.repeat(depth);
}

/** Depths from shallow to far past any recursive parser's stack. */
export function nestingDepth(rng: Random): number {
  return rng.pick([10, 100, 1000, 5000, 10_000, 10_000, 50_000, 200_000]);
}

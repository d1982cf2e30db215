/**
 * The part of JSON Schema's `pattern` (ECMA-262 regular expressions) that XGrammar's regex converter
 * (0.1.27) turns into a grammar. Probed against it: lookahead, lookbehind, backreferences (numbered
 * and named), word boundaries and Unicode property escapes each make it abort ("… is not supported
 * yet"); named and non-capturing groups, classes, \d \w \s, \u and \x escapes, lazy and bounded
 * repetitions are taken. A pattern must also be a valid regular expression with the `u` flag (as
 * JSON Schema validators such as ajv read it): what that refuses, the converter refuses too, or reads
 * otherwise (`a{,5}`).
 */

/** Why `pattern` is not a valid regular expression, or undefined when it is one. */
export function invalidRegex(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^Invalid regular expression: /, '');
  }
}

/** The first construct of a valid `pattern` the grammar cannot express, named for a message; undefined when it has none. */
export function unsupportedRegex(pattern: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const e = pattern[i + 1];
      if (e === 'p' || e === 'P') return 'a Unicode property escape (\\p{…})';
      if (!inClass && (e === 'b' || e === 'B')) return 'a word boundary (\\b, \\B)';
      if (!inClass && ((e !== undefined && e >= '1' && e <= '9') || (e === 'k' && pattern[i + 2] === '<'))) return 'a backreference';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && pattern[i + 1] === '?') {
      const kind = pattern.slice(i + 2, i + 4);
      if (kind.startsWith('=') || kind.startsWith('!')) return 'a lookahead ((?=…), (?!…))';
      if (kind === '<=' || kind === '<!') return 'a lookbehind ((?<=…), (?<!…))';
    }
  }
  return undefined;
}

import { describe, expect, it } from 'vitest';
import { closeFormat, formatInstance, shortestMatch } from '../../src/chat/grammar/string-completion.js';

/** XGrammar's rules for these formats (web-xgrammar 0.1.27's JSON-schema converter), as JavaScript regular expressions. */
const ATOM = "[!#-'*+\\-/-9=?A-Z^-~]+";
const RULES: Record<string, RegExp> = {
  email: new RegExp(`^${ATOM}(\\.${ATOM})*@[0-9A-Za-z]([-0-9A-Za-z]*[0-9A-Za-z])?(\\.[0-9A-Za-z][-0-9A-Za-z]*[0-9A-Za-z])*$`),
  hostname: /^[0-9a-z]([-0-9a-z]*[0-9a-z])?(\.[0-9a-z]([-0-9a-z]*[0-9a-z])?)*$/,
  date: /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/,
  time: /^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/,
  'date-time': /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/,
  uuid: /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/,
};

/** Every prefix of each value, as a model may have written it when the budget calls for the rest. */
const WRITTEN: Record<string, string[]> = {
  email: ['jo.smith+tag@mail.example.org', 'a@b', 'x.y@a-b.cd'],
  hostname: ['api.example-1.org'],
  date: ['2025-12-31', '1999-02-09'],
  time: ['23:59:60.125+05:30', '12:30:45Z', '09:05:01.5Z'],
  'date-time': ['2025-11-26T23:19:10.5-01:00', '2000-10-20T10:20:30Z'],
  uuid: ['0f8fad5b-d9cb-469f-a165-70867728950e'],
};

describe('the rest of a format-constrained string', () => {
  it.each(Object.keys(WRITTEN))('%s: from every prefix of a valid value, what is proposed completes a valid one', (format) => {
    expect(formatInstance(format)).toMatch(RULES[format]!);
    for (const value of WRITTEN[format]!) {
      expect(value, 'the test value itself').toMatch(RULES[format]!);
      for (let n = 0; n <= value.length; n++) {
        const typed = value.slice(0, n);
        const rest = closeFormat(format, typed);
        if (rest === undefined) throw new Error(`${format}: no rest proposed after ${JSON.stringify(typed)}`);
        expect(typed + rest, `after ${JSON.stringify(typed)}`).toMatch(RULES[format]!);
      }
    }
  });

  it('is short: an email closes with at most a character, @ and a label', () => {
    expect(closeFormat('email', 'someone')).toBe('@a');
    expect(closeFormat('email', 'some.')).toBe('a@a');
    expect(closeFormat('email', 'a@b.')).toBe('aa');
    expect(closeFormat('email', 'a@b.c')).toBe('a');
    expect(closeFormat('email', '\\"quoted')).toBeUndefined();
    expect(closeFormat('uri', 'http')).toBeUndefined();
  });
});

describe('the shortest string a pattern matches', () => {
  it.each([
    ['^[A-Z]{2}[0-9]{3}$', 'AA000'],
    ['a|bc', 'a'],
    ['(ab)+c?', 'ab'],
    ['\\d{3}-\\d{2,4}', '000-00'],
    ['[^a-z]x*', ' '],
    ['(?:foo|ba)[.]\\w', 'ba.0'],
    ['^$', ''],
    ['\\u0041\\x42+', 'AB'],
  ])('%s: %j, which the pattern matches whole', (pattern, shortest) => {
    expect(shortestMatch(pattern)).toBe(shortest);
    expect(new RegExp(`^(?:${pattern})$`, 'u').test(shortest)).toBe(true);
  });

  it.each(['(?=a)a', '(a)\\1', '\\bword', '[\\"]', '[]a]', '(unclosed'])('%s: not read (undefined)', (pattern) => {
    expect(shortestMatch(pattern)).toBeUndefined();
  });
});

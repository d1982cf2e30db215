/**
 * A structural tag's `tags_with_separator` written out as one EBNF grammar, for where XGrammar
 * (0.1.27) does not take it: anywhere but as the whole format (inside an `or`, its compile throws a
 * bare exception). That is where a request asks for an output schema and strict or forced tool calls
 * at once: the answer is the JSON value or the calls (./constraint.ts). Each tag's content is a
 * grammar already (./xgrammar.ts compactTag), whose rules are renamed apart here.
 */

export interface TagsWithSeparator {
  tags: Array<{ begin: string; content: { type: string; grammar?: string }; end: string }>;
  separator: string;
  at_least_one: boolean;
  stop_after_first: boolean;
}

/** The EBNF (root rule `root`) of what the tags with their separator accept. */
export function tagsGrammar(node: TagsWithSeparator): string {
  const rules: string[] = [];
  const calls = node.tags.map((tag, i) => {
    if (tag.content.type !== 'grammar' || tag.content.grammar === undefined) throw new Error(`tagsGrammar: a tag's content must be a grammar, not ${tag.content.type}`);
    rules.push(renamed(tag.content.grammar, `t${i}_`));
    return [literal(tag.begin), `t${i}_root`, literal(tag.end)].filter(Boolean).join(' ');
  });
  const call = `tag_call ::= ${calls.map((c) => `(${c})`).join(' | ')}`;
  const some = node.stop_after_first ? 'tag_call' : `tag_call (${literal(node.separator) || '""'} tag_call)*`;
  const root = node.at_least_one ? `root ::= ${some}` : `root ::= "" | ${some}`;
  return [root, call, ...rules].join('\n');
}

/** A string as an EBNF literal ('' for none): JSON's escapes are the grammar's. */
const literal = (text: string) => (text === '' ? '' : JSON.stringify(text));

/**
 * `ebnf` with each rule it defines renamed with `prefix`, wherever the name appears as a rule
 * reference (outside string literals and character classes).
 */
export function renamed(ebnf: string, prefix: string): string {
  const names = new Set([...ebnf.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)\s*::=/gm)].map((m) => m[1]!));
  const identifier = /[A-Za-z_][A-Za-z0-9_]*/y;
  let out = '';
  for (let i = 0; i < ebnf.length; ) {
    const c = ebnf[i]!;
    if (c === '"' || c === '[') {
      const close = c === '"' ? '"' : ']';
      let j = i + 1;
      while (j < ebnf.length && ebnf[j] !== close) j += ebnf[j] === '\\' ? 2 : 1;
      out += ebnf.slice(i, j + 1);
      i = j + 1;
    } else if (/[A-Za-z_]/.test(c)) {
      identifier.lastIndex = i;
      const name = identifier.exec(ebnf)![0];
      out += names.has(name) ? prefix + name : name;
      i += name.length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

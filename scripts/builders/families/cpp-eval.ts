/**
 * Just enough C++ to read llama.cpp's tests/test-chat.cpp as data: a lexer (comments, string
 * literals with their escapes, raw strings, adjacent-literal concatenation left to the evaluator)
 * and an evaluator for the expressions its parse cases are written in (literals, `+`, names,
 * calls of its message helpers, brace lists). The statement walk over the test functions lives in
 * extract-chat-cases.ts; this file knows nothing of chat.
 */

export type Tok =
  | { k: 'str'; v: string; line: number }
  | { k: 'id'; v: string; line: number }
  | { k: 'num'; v: number; line: number }
  | { k: 'p'; v: string; line: number };

const PUNCT3 = ['...', '<<=', '>>='];
const PUNCT2 = ['::', '->', '++', '--', '==', '!=', '<=', '>=', '&&', '||', '+=', '-=', '<<', '>>'];

/**
 * A C++ string literal's body to text: the escapes make bytes (`\xHH` is one byte, so a UTF-8
 * sequence written as escapes comes out as its character), the rest is the source's UTF-8.
 */
function unescape(body: string): string {
  const bytes: number[] = [];
  const push = (s: string) => bytes.push(...Buffer.from(s, 'utf8'));
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      // Keep surrogate pairs together.
      const cp = body.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      push(ch);
      i += ch.length - 1;
      continue;
    }
    const e = body[++i]!;
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '?': '?', a: '\x07', b: '\b', f: '\f', v: '\v' };
    if (e in simple) push(simple[e]!);
    else if (e === 'x') {
      let h = '';
      while (/[0-9a-fA-F]/.test(body[i + 1] ?? '')) h += body[++i];
      bytes.push(parseInt(h, 16) & 0xff);
    } else if (e === 'u' || e === 'U') {
      const n = e === 'u' ? 4 : 8;
      push(String.fromCodePoint(parseInt(body.slice(i + 1, i + 1 + n), 16)));
      i += n;
    } else if (/[0-7]/.test(e)) {
      let o = e;
      while (o.length < 3 && /[0-7]/.test(body[i + 1] ?? '')) o += body[++i];
      bytes.push(parseInt(o, 8) & 0xff);
    } else throw new Error(`unknown escape \\${e}`);
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Tokens of `src`, whose first line is numbered `firstLine`. */
export function lex(src: string, firstLine = 1): Tok[] {
  const out: Tok[] = [];
  let line = firstLine;
  let i = 0;
  const count = (s: string) => {
    for (const ch of s) if (ch === '\n') line++;
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === '\n') {
      line++;
      i++;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (src.startsWith('//', i)) {
      const end = src.indexOf('\n', i);
      i = end === -1 ? src.length : end;
      continue;
    }
    if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      count(src.slice(i, end + 2));
      i = end + 2;
      continue;
    }
    if (c === '#' && src.slice(src.lastIndexOf('\n', i - 1) + 1, i).trim() === '') {
      // A preprocessor line.
      const end = src.indexOf('\n', i);
      i = end === -1 ? src.length : end;
      continue;
    }
    const raw = /^(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(/.exec(src.slice(i, i + 24));
    if (raw) {
      const delim = `)${raw[1]}"`;
      const start = i + raw[0].length;
      const end = src.indexOf(delim, start);
      if (end === -1) throw new Error(`unterminated raw string at line ${line}`);
      const v = src.slice(start, end);
      out.push({ k: 'str', v, line });
      count(v);
      i = end + delim.length;
      continue;
    }
    const pre = /^(?:u8|u|U|L)?"/.exec(src.slice(i, i + 3));
    if (pre) {
      let j = i + pre[0].length;
      let body = '';
      while (src[j] !== '"') {
        if (src[j] === '\\') {
          body += src[j]! + src[j + 1]!;
          j += 2;
        } else {
          if (src[j] === '\n') throw new Error(`newline in string at line ${line}`);
          body += src[j];
          j++;
        }
      }
      out.push({ k: 'str', v: unescape(body), line });
      i = j + 1;
      continue;
    }
    if (c === "'") {
      let j = i + 1;
      let body = '';
      while (src[j] !== "'") {
        if (src[j] === '\\') {
          body += src[j]! + src[j + 1]!;
          j += 2;
        } else body += src[j++];
      }
      out.push({ k: 'num', v: unescape(body).codePointAt(0) ?? 0, line });
      i = j + 1;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_~][A-Za-z_0-9]*)*/.exec(src.slice(i, i + 200));
    if (id) {
      out.push({ k: 'id', v: id[0], line });
      i += id[0].length;
      continue;
    }
    const num = /^(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?)[uUlLfF]*/.exec(src.slice(i, i + 40));
    if (num) {
      out.push({ k: 'num', v: Number(num[0].replace(/[uUlLfF]+$/, '')), line });
      i += num[0].length;
      continue;
    }
    const p = PUNCT3.find((x) => src.startsWith(x, i)) ?? PUNCT2.find((x) => src.startsWith(x, i)) ?? c;
    out.push({ k: 'p', v: p, line });
    i += p.length;
  }
  return out;
}

/** A value of the test file: text, numbers, booleans, lists, and the named things it builds. */
export type Val =
  | string
  | number
  | boolean
  | Val[]
  | { t: 'enum'; name: string }
  | { t: 'obj'; type: string; fields: Record<string, Val> };

/** Scope of names: each block a layer over its parent. */
export class Scope {
  private readonly vars = new Map<string, Val>();
  constructor(private readonly parent?: Scope) {}
  get(name: string): Val | undefined {
    return this.vars.has(name) ? this.vars.get(name) : this.parent?.get(name);
  }
  set(name: string, v: Val): void {
    this.vars.set(name, v);
  }
}

export type Builtin = (args: Val[]) => Val;

/**
 * A cursor over tokens with the expression evaluator. Unknown names and constructs throw, with
 * the line: the extractor turns that into "not extracted: reason" for the case that holds them.
 */
export class Cursor {
  pos = 0;
  constructor(
    readonly toks: Tok[],
    private readonly builtins: Record<string, Builtin>,
  ) {}

  peek(o = 0): Tok | undefined {
    return this.toks[this.pos + o];
  }
  line(): number {
    return this.peek()?.line ?? this.toks[this.toks.length - 1]?.line ?? 0;
  }
  is(v: string, o = 0): boolean {
    const t = this.peek(o);
    return t !== undefined && (t.k === 'p' || t.k === 'id') && t.v === v;
  }
  eat(v: string): void {
    if (!this.is(v)) throw new Error(`line ${this.line()}: expected '${v}', found '${String(this.peek()?.v)}'`);
    this.pos++;
  }
  ident(): string {
    const t = this.peek();
    if (t?.k !== 'id') throw new Error(`line ${this.line()}: expected a name, found '${String(t?.v)}'`);
    this.pos++;
    return t.v;
  }
  /** Index just past the bracket that closes the one at `from` (a `(`, `{` or `[`). */
  matching(from: number): number {
    let depth = 0;
    for (let i = from; i < this.toks.length; i++) {
      const t = this.toks[i]!;
      if (t.k !== 'p') continue;
      if (t.v === '(' || t.v === '{' || t.v === '[') depth++;
      else if (t.v === ')' || t.v === '}' || t.v === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    throw new Error(`unbalanced bracket from line ${this.toks[from]?.line}`);
  }
  /** Skips one statement: a block, or tokens to the `;` at bracket depth 0. Returns its tokens. */
  skipStatement(): Tok[] {
    const start = this.pos;
    if (this.is('{')) {
      this.pos = this.matching(this.pos);
      return this.toks.slice(start, this.pos);
    }
    while (this.pos < this.toks.length && !this.is(';')) {
      if (this.is('(') || this.is('{') || this.is('[')) this.pos = this.matching(this.pos);
      else this.pos++;
    }
    this.pos++;
    return this.toks.slice(start, this.pos);
  }

  expr(scope: Scope): Val {
    let v = this.primary(scope);
    while (this.is('+')) {
      this.pos++;
      const r = this.primary(scope);
      if (typeof v !== 'string' || typeof r !== 'string') throw new Error(`line ${this.line()}: '+' on non-strings`);
      v = v + r;
    }
    return v;
  }

  list(scope: Scope, close: string): Val[] {
    const out: Val[] = [];
    while (!this.is(close)) {
      out.push(this.expr(scope));
      if (this.is(',')) this.pos++;
      else break;
    }
    this.eat(close);
    return out;
  }

  private primary(scope: Scope): Val {
    const t = this.peek();
    if (t === undefined) throw new Error('unexpected end');
    if (t.k === 'str') {
      let s = '';
      while (this.peek()?.k === 'str') s += (this.toks[this.pos++] as { v: string }).v;
      return s;
    }
    if (t.k === 'num') {
      this.pos++;
      return t.v;
    }
    if (t.k === 'p' && t.v === '{') {
      this.pos++;
      return this.list(scope, '}');
    }
    if (t.k === 'p' && t.v === '(') {
      this.pos++;
      const v = this.expr(scope);
      this.eat(')');
      return v;
    }
    if (t.k === 'p' && t.v === '-' && this.peek(1)?.k === 'num') {
      this.pos += 2;
      return -(this.toks[this.pos - 1] as { v: number }).v;
    }
    if (t.k === 'id') {
      this.pos++;
      if (t.v === 'true' || t.v === 'false') return t.v === 'true';
      if (t.v === 'std::string' && this.is('(')) {
        this.pos++;
        const [v] = this.list(scope, ')');
        return v ?? '';
      }
      if (this.is('(')) {
        const f = this.builtins[t.v];
        if (!f) throw new Error(`line ${t.line}: unknown function ${t.v}`);
        this.pos++;
        return f(this.list(scope, ')'));
      }
      if (this.is('.') || this.is('->') || this.is('[')) throw new Error(`line ${t.line}: member access on ${t.v} is not data`);
      const v = scope.get(t.v);
      if (v !== undefined) return v;
      if (/^COMMON_[A-Z0-9_]+$/.test(t.v)) return { t: 'enum', name: t.v };
      throw new Error(`line ${t.line}: unknown name ${t.v}`);
    }
    throw new Error(`line ${t.line}: unexpected '${t.v}'`);
  }
}

/**
 * Reads llama.cpp's tests/test-chat.cpp and writes its parse cases as data
 * (test/fixtures/chat-cases/llama-cpp-cases.json), for our own harness to replay through our parser
 * (test/unit/chat-cases.test.ts).
 *
 *   npx tsx scripts/builders/families/extract-chat-cases.ts [--llama /work/llama.cpp]
 *
 * A parse case there is one `tst.test(input)…run()` chain on a `peg_tester(template)`: the model's
 * output text after the template's generation prompt, the request's options, and the message
 * llama.cpp's parser must return (compared with whitespace stripped at both ends of content and
 * reasoning, arguments as JSON values: `assert_msg_equals(…, true)`). The file's helpers
 * (message_assist_call, simple_assist_msg, the tool definitions, loops over templates,
 * test_lfm2_parser) are evaluated here, so each case is concrete data. A chain that does not
 * evaluate, or a parse check written some other way, is kept in the output with its reason.
 *
 * For each case the generation prompt is rendered with @huggingface/jinja (transformers.js's
 * engine) the way llama.cpp computes it (the prompt with and without add_generation_prompt, the
 * part after their common prefix): a parser needs to know a thought the template has opened.
 * llama.cpp's own engine and its dedicated handlers can differ (gpt-oss, Ministral and Gemma 4
 * build it themselves); where ours fails to render, the case says so.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { Cursor, lex, Scope, type Builtin, type Tok, type Val } from './cpp-eval.js';
import { FAMILIES, familyOf } from './families.js';

const args = process.argv.slice(2);
const LLAMA = args.includes('--llama') ? args[args.indexOf('--llama') + 1]! : '/work/llama.cpp';
const OUT_DIR = path.join(import.meta.dirname, '../../../test/fixtures/chat-cases');
const SOURCE = 'tests/test-chat.cpp';

// ---------------------------------------------------------------- the file's data model

interface Call {
  name: string;
  arguments: string;
  id: string;
}
interface Msg {
  role: string;
  content: string;
  contentParts: { type: string; text: string }[];
  toolCalls: Call[];
  reasoningContent: string;
  toolName: string;
  toolCallId: string;
}
interface Tool {
  name: string;
  description: string;
  parameters: string;
}

const obj = (type: string, fields: Record<string, Val>): Val => ({ t: 'obj', type, fields });

function str(v: Val | undefined, what: string): string {
  if (v === undefined) return '';
  if (Array.isArray(v) && v.length === 0) return ''; // `{}` for a string
  if (typeof v !== 'string') throw new Error(`${what}: not a string`);
  return v;
}

function newMsg(fields: Partial<Msg> = {}): Val {
  return obj('msg', {
    role: fields.role ?? '',
    content: fields.content ?? '',
    content_parts: [],
    tool_calls: (fields.toolCalls ?? []).map((c) => obj('call', { ...c })),
    reasoning_content: fields.reasoningContent ?? '',
    tool_name: '',
    tool_call_id: '',
  });
}

function asObj(v: Val | undefined, type: string): Record<string, Val> {
  if (typeof v !== 'object' || Array.isArray(v) || v.t !== 'obj' || v.type !== type) throw new Error(`not a ${type}`);
  return v.fields;
}

/** A `{name, arguments, id}` tool call: a call object or a brace list. */
function toCall(v: Val): Call {
  if (Array.isArray(v)) return { name: str(v[0], 'call name'), arguments: str(v[1], 'call arguments'), id: str(v[2], 'call id') };
  const f = asObj(v, 'call');
  return { name: str(f.name, 'name'), arguments: str(f.arguments, 'arguments'), id: str(f.id, 'id') };
}

function toMsg(v: Val): Msg {
  if (Array.isArray(v)) {
    // Positional brace init: role, content, content_parts, tool_calls, reasoning_content, tool_name, tool_call_id.
    return {
      role: str(v[0], 'role'),
      content: str(v[1], 'content'),
      contentParts: ((v[2] as Val[]) ?? []).map((p) => ({ type: str((p as Val[])[0], 'type'), text: str((p as Val[])[1], 'text') })),
      toolCalls: ((v[3] as Val[]) ?? []).map(toCall),
      reasoningContent: str(v[4], 'reasoning'),
      toolName: str(v[5], 'tool_name'),
      toolCallId: str(v[6], 'tool_call_id'),
    };
  }
  const f = asObj(v, 'msg');
  return {
    role: str(f.role, 'role'),
    content: str(f.content, 'content'),
    contentParts: ((f.content_parts as Val[]) ?? []).map((p) => ({ type: str((p as Val[])[0], 'type'), text: str((p as Val[])[1], 'text') })),
    toolCalls: ((f.tool_calls as Val[]) ?? []).map(toCall),
    reasoningContent: str(f.reasoning_content, 'reasoning'),
    toolName: str(f.tool_name, 'tool_name'),
    toolCallId: str(f.tool_call_id, 'tool_call_id'),
  };
}

function toTool(v: Val): Tool {
  if (Array.isArray(v)) return { name: str(v[0], 'tool name'), description: str(v[1], 'description'), parameters: str(v[2], 'parameters') };
  const f = asObj(v, 'tool');
  return { name: str(f.name, 'name'), description: str(f.description, 'description'), parameters: str(f.parameters, 'parameters') };
}

/** The helpers of test-chat.cpp that build messages, as they are written there. */
function simpleAssist(content: string, reasoning = '', toolName = '', args = '', id = ''): Val {
  return newMsg({ role: 'assistant', content, reasoningContent: reasoning, toolCalls: toolName !== '' || id !== '' ? [{ name: toolName, arguments: args, id }] : [] });
}
const s = (v: Val | undefined) => str(v, 'argument');
const BUILTINS: Record<string, Builtin> = {
  simple_assist_msg: (a) => simpleAssist(s(a[0]), s(a[1]), s(a[2]), s(a[3]), s(a[4])),
  message_with_tool_calls: (a) => simpleAssist('', '', s(a[0]), s(a[1])),
  message_with_tool_calls_and_reasoning: (a) => simpleAssist('', s(a[2]), s(a[0]), s(a[1])),
  message_with_content_and_tool_call: (a) => simpleAssist(s(a[0]), '', s(a[1]), s(a[2])),
  message_with_reasoning_and_tool_call: (a) => simpleAssist('', s(a[0]), s(a[1]), s(a[2])),
  message_with_reasoning_content_and_multiple_tool_calls: (a) =>
    newMsg({ role: 'assistant', reasoningContent: s(a[0]), content: s(a[1]), toolCalls: (a[2] as Val[]).map((p) => ({ name: s((p as Val[])[0]), arguments: s((p as Val[])[1]), id: '' })) }),
  peg_tester: (a) => obj('tester', { template: s(a[0]) }),
};

// ---------------------------------------------------------------- the walk over the test code

interface CaseOptions {
  reasoningFormat: string;
  enableThinking: boolean;
  /** Keys into the output's `tools` table (a tool's name, or name@line for a second one of that name). */
  tools: string[];
  toolChoice: string;
  parallelToolCalls: boolean;
  isPartial: boolean;
  jsonSchema: string | null;
  addGenerationPrompt: boolean;
  continueFinalMessage: string;
  messages: Msg[];
}

export interface ExtractedCase {
  id: string;
  family: string;
  template: string;
  line: number;
  input: string;
  options: CaseOptions;
  /** Tools given and tool_choice not none: the parser looks for calls. */
  parseToolCalls: boolean;
  expect: { content: string; reasoningContent: string; toolCalls: Call[] };
  expectReconstruction: boolean;
  generationPrompt: string | null;
  generationPromptError?: string;
  thinkingForcedOpen: boolean | null;
}

interface Unextracted {
  family: string;
  template: string;
  line: number;
  reason: string;
  source: string;
}

const enumName = (v: Val, prefix: string): string => {
  if (typeof v !== 'object' || Array.isArray(v) || v.t !== 'enum' || !v.name.startsWith(prefix)) throw new Error(`expected ${prefix}*`);
  return v.name.slice(prefix.length).toLowerCase().replace(/_/g, '-');
};

class Walker {
  readonly cases: Omit<ExtractedCase, 'id' | 'family' | 'generationPrompt' | 'thinkingForcedOpen' | 'parseToolCalls'>[] = [];
  readonly unextracted: Unextracted[] = [];
  readonly tools = new Map<string, Tool>();
  readonly skipped: { line: number; text: string }[] = [];

  constructor(
    private readonly c: Cursor,
    private readonly functions: Map<string, { params: string[]; body: number }>,
    private readonly text: (from: number, to: number) => string,
  ) {}

  /** Statements from the cursor to the `}` closing the current block (consumed). */
  block(scope: Scope): void {
    const c = this.c;
    while (!c.is('}')) this.statement(scope);
    c.eat('}');
  }

  statement(scope: Scope): void {
    const c = this.c;
    const start = c.pos;
    const line = c.line();
    if (c.is('{')) {
      c.pos++;
      this.block(new Scope(scope));
      return;
    }
    if (c.is(';')) {
      c.pos++;
      return;
    }
    if (c.is('for')) {
      c.eat('for');
      const close = c.matching(c.pos);
      let colon = c.pos;
      while (!(c.toks[colon]!.k === 'p' && c.toks[colon]!.v === ':')) colon++;
      const name = (c.toks[colon - 1] as { v: string }).v;
      c.pos = colon + 1;
      const items = c.expr(scope);
      c.pos = close;
      if (!Array.isArray(items)) throw new Error(`line ${line}: for over a non-list`);
      const body = c.pos;
      let end = body;
      for (const item of items) {
        c.pos = body;
        const inner = new Scope(scope);
        inner.set(name, item);
        this.statement(inner);
        end = c.pos;
      }
      c.pos = end;
      return;
    }
    if (c.is('if')) {
      c.eat('if');
      c.pos = c.matching(c.pos);
      this.skip(start, c.skipStatement(), line);
      if (c.is('else')) {
        c.eat('else');
        this.skip(start, c.skipStatement(), line);
      }
      return;
    }
    try {
      if (this.declaration(scope) || this.assignment(scope) || this.chain(scope) || this.call(scope)) return;
    } catch (e) {
      c.pos = start;
      const toks = c.skipStatement();
      if (this.isCase(toks)) this.caseFailed(scope, toks, start, (e as Error).message);
      else this.skip(start, toks, line);
      return;
    }
    c.pos = start;
    this.skip(start, c.skipStatement(), line);
  }

  private isCase(toks: Tok[]): boolean {
    return toks.some((t, i) => t.k === 'id' && t.v === 'run' && toks[i - 1]?.v === '.');
  }

  /** A statement that is not case data; the cases inside one the walk cannot enter are listed. */
  private skip(start: number, toks: Tok[], line: number): void {
    const text = this.text(start, this.c.pos);
    if (this.isCase(toks)) {
      const runs = toks.filter((t, i) => t.k === 'id' && t.v === 'run' && toks[i - 1]?.v === '.');
      const template = /models\/templates\/([^"]+\.jinja)/.exec(text)?.[1] ?? '?';
      for (const run of runs) this.unextracted.push({ family: '', template, line: run.line, reason: `a case inside a statement the extractor does not walk (line ${line})`, source: text });
      return;
    }
    this.skipped.push({ line, text });
  }

  private caseFailed(scope: Scope, toks: Tok[], start: number, reason: string): void {
    const tester = toks[0]?.k === 'id' ? scope.get(toks[0].v) : undefined;
    const template = tester && typeof tester === 'object' && !Array.isArray(tester) && tester.t === 'obj' ? s(tester.fields.template) : '?';
    this.unextracted.push({ family: '', template: path.basename(template), line: toks[0]?.line ?? 0, reason, source: this.text(start, this.c.pos) });
  }

  /** `[static|const] TYPE [*|&] NAME [= EXPR | {…}];` for the types the cases use. */
  private declaration(scope: Scope): boolean {
    const c = this.c;
    const start = c.pos;
    while (c.is('static') || c.is('const')) c.pos++;
    let type = '';
    if (c.is('auto') || c.is('common_chat_msg') || c.is('common_chat_tool') || c.is('std::string')) type = c.ident();
    else if (c.is('char') && c.is('*', 1)) {
      c.pos += 2;
      type = 'char*';
    } else {
      c.pos = start;
      return false;
    }
    if (c.is('&')) c.pos++;
    const name = c.ident();
    let v: Val;
    if (c.is(';')) {
      if (type !== 'common_chat_msg') throw new Error(`line ${c.line()}: uninitialised ${type}`);
      v = newMsg();
    } else if (c.is('{')) {
      c.pos++;
      const items = c.list(scope, '}');
      if (type === 'common_chat_tool') {
        const tool = toTool(items);
        this.addTool(tool, c.line());
        v = obj('tool', { ...tool });
      } else throw new Error(`line ${c.line()}: brace init of ${type}`);
    } else {
      c.eat('=');
      v = c.expr(scope);
    }
    c.eat(';');
    scope.set(name, v);
    return true;
  }

  /** `NAME.field = EXPR;` on a message built in the test. */
  private assignment(scope: Scope): boolean {
    const c = this.c;
    if (!(c.peek()?.k === 'id' && c.is('.', 1) && c.peek(2)?.k === 'id' && c.is('=', 3))) return false;
    const name = c.ident();
    c.eat('.');
    const field = c.ident();
    c.eat('=');
    const target = scope.get(name);
    if (typeof target !== 'object' || Array.isArray(target) || target.t !== 'obj') throw new Error(`line ${c.line()}: assignment to ${name}`);
    target.fields[field] = c.expr(scope);
    c.eat(';');
    return true;
  }

  /** `test_lfm2_parser(EXPR, …);`: the file's other case function, walked with its argument. */
  private call(scope: Scope): boolean {
    const c = this.c;
    const fn = c.peek()?.k === 'id' ? this.functions.get(c.peek()!.v as string) : undefined;
    if (!fn || !c.is('(', 1)) return false;
    c.pos++;
    c.eat('(');
    const values: Val[] = [];
    while (!c.is(')')) {
      values.push(c.is('detailed_debug') ? (c.pos++, false) : c.expr(scope));
      if (c.is(',')) c.pos++;
    }
    c.eat(')');
    c.eat(';');
    const after = c.pos;
    const inner = new Scope(scope);
    fn.params.forEach((p, i) => inner.set(p, values[i] ?? false));
    c.pos = fn.body + 1;
    this.block(inner);
    c.pos = after;
    return true;
  }

  /**
   * The key a tool is stored under: its name, or `name@line` for a second, different tool of the
   * same name (gpt-oss's case has its own `edit`).
   */
  private addTool(tool: Tool, line: number): string {
    const same = (a: Tool) => a.description === tool.description && JSON.stringify(JSON.parse(a.parameters)) === JSON.stringify(JSON.parse(tool.parameters));
    for (const [key, known] of this.tools) if (known.name === tool.name && same(known)) return key;
    const key = this.tools.has(tool.name) ? `${tool.name}@${line}` : tool.name;
    this.tools.set(key, tool);
    return key;
  }

  /** `T.test(INPUT).option(…)….run();` */
  private chain(scope: Scope): boolean {
    const c = this.c;
    if (!(c.peek()?.k === 'id' && c.is('.', 1) && c.is('test', 2) && c.is('(', 3))) return false;
    const tester = scope.get(c.ident());
    const template = tester && typeof tester === 'object' && !Array.isArray(tester) && tester.t === 'obj' && tester.type === 'tester' ? s(tester.fields.template) : null;
    if (template === null) throw new Error(`line ${c.line()}: .test on something that is not a peg_tester`);
    const line = c.line();
    c.eat('.');
    c.eat('test');
    c.eat('(');
    const [input] = c.list(scope, ')');
    const options: CaseOptions = {
      reasoningFormat: 'none',
      enableThinking: true,
      tools: [],
      toolChoice: 'auto',
      parallelToolCalls: false,
      isPartial: false,
      jsonSchema: null,
      addGenerationPrompt: true,
      continueFinalMessage: 'none',
      messages: [],
    };
    let expect: Msg = toMsg(newMsg());
    let expectReconstruction = false;
    for (;;) {
      c.eat('.');
      const m = c.ident();
      c.eat('(');
      const a = c.list(scope, ')');
      if (m === 'run') break;
      const one = a[0]!;
      switch (m) {
        case 'reasoning_format': options.reasoningFormat = enumName(one, 'COMMON_REASONING_FORMAT_'); break;
        case 'enable_thinking': options.enableThinking = one as boolean; break;
        case 'tools': {
          options.tools = (one as Val[]).map((t) => this.addTool(toTool(t), line));
          break;
        }
        case 'tool_choice': options.toolChoice = enumName(one, 'COMMON_CHAT_TOOL_CHOICE_'); break;
        case 'parallel_tool_calls': options.parallelToolCalls = one as boolean; break;
        case 'is_partial': options.isPartial = one as boolean; break;
        case 'json_schema': options.jsonSchema = s(one); break;
        case 'add_generation_prompt': options.addGenerationPrompt = one as boolean; break;
        case 'continue_final_message': options.continueFinalMessage = enumName(one, 'COMMON_CHAT_CONTINUATION_'); break;
        case 'messages': options.messages = (one as Val[]).map(toMsg); break;
        case 'expect_reconstruction': expectReconstruction = a.length === 0 ? true : (one as boolean); break;
        case 'expect': expect = toMsg(one); break;
        case 'expect_content': expect = { ...expect, content: s(one) }; break;
        case 'expect_reasoning': expect = { ...expect, reasoningContent: s(one) }; break;
        case 'expect_tool_calls': expect = { ...expect, toolCalls: (one as Val[]).map(toCall) }; break;
        default: throw new Error(`line ${line}: unknown option .${m}()`);
      }
    }
    c.eat(';');
    if (typeof input !== 'string') throw new Error(`line ${line}: input is not text`);
    if (options.messages.length === 0) options.messages = [toMsg(scope.get('message_user')!)];
    this.cases.push({
      template: path.basename(template),
      line,
      input,
      options,
      expect: { content: expect.content, reasoningContent: expect.reasoningContent, toolCalls: expect.toolCalls },
      expectReconstruction,
    });
    return true;
  }
}

// ---------------------------------------------------------------- top level of the file

/** The file-scope tools and messages (before `struct peg_test_case`), and the case functions. */
function readFile(src: string) {
  const toks = lex(src);
  const text = (from: number, to: number) => {
    const a = toks[from]!.line;
    const b = toks[Math.max(from, to - 1)]!.line;
    return src.split('\n').slice(a - 1, b).join('\n');
  };
  const c = new Cursor(toks, BUILTINS);
  const globals = new Scope();
  globals.set('detailed_debug', false);
  const functions = new Map<string, { params: string[]; body: number }>();
  const walker = new Walker(c, functions, text);
  const firstTool = toks.findIndex((t) => t.k === 'id' && t.v === 'special_function_tool');
  const lastData = toks.findIndex((t) => t.k === 'id' && t.v === 'peg_test_case');
  // Function definitions anywhere: name → parameter names and the index of its body's `{`.
  for (let i = 0; i + 2 < toks.length; i++) {
    if (toks[i]!.v === 'static' && toks[i + 1]!.v === 'void' && toks[i + 2]!.k === 'id' && toks[i + 3]?.v === '(') {
      const close = c.matching(i + 3);
      const params: string[] = [];
      for (let j = i + 4; j < close; j++) if (toks[j + 1]?.v === ',' || j + 1 === close - 1) if (toks[j]!.k === 'id') params.push(toks[j]!.v as string);
      if (toks[close]?.v === '{') functions.set(toks[i + 2]!.v as string, { params, body: close });
    }
  }
  // File-scope data: declarations of tools, tool lists and messages; helper functions are skipped
  // (BUILTINS has them).
  c.pos = firstTool - 2; // `static common_chat_tool special_function_tool`
  while (c.pos < lastData - 1) {
    while (c.is('static') || c.is('const')) c.pos++;
    if (c.is('std::vector')) {
      // static std::vector<common_chat_tool> tools{ … };
      while (!c.is('>')) c.pos++;
      c.pos++;
      const name = c.ident();
      c.eat('{');
      const items = c.list(globals, '}');
      c.eat(';');
      globals.set(name, items);
      continue;
    }
    const type = c.ident();
    const name = c.ident();
    if (c.is('(')) {
      // A helper function: skip its body.
      c.pos = c.matching(c.pos);
      c.pos = c.matching(c.pos);
      continue;
    }
    let v: Val;
    if (c.is('{')) {
      c.pos++;
      const items = c.list(globals, '}');
      v = type === 'common_chat_tool' ? obj('tool', { ...toTool(items) }) : newMsgFrom(toMsg(items));
    } else {
      c.eat('=');
      v = c.expr(globals);
    }
    c.eat(';');
    globals.set(name, v);
  }
  return { c, globals, functions, walker };
}

function newMsgFrom(m: Msg): Val {
  return obj('msg', {
    role: m.role,
    content: m.content,
    content_parts: m.contentParts.map((p) => [p.type, p.text]),
    tool_calls: m.toolCalls.map((t) => obj('call', { ...t })),
    reasoning_content: m.reasoningContent,
    tool_name: m.toolName,
    tool_call_id: m.toolCallId,
  });
}

// ---------------------------------------------------------------- generation prompts

const templates = new Map<string, Template | Error>();
function templateOf(name: string): Template {
  if (!templates.has(name)) {
    try {
      templates.set(name, new Template(readFileSync(path.join(LLAMA, 'models/templates', name), 'utf8')));
    } catch (e) {
      templates.set(name, e as Error);
    }
  }
  const t = templates.get(name)!;
  if (t instanceof Error) throw t;
  return t;
}

function jinjaMessage(m: Msg): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.contentParts.length > 0 ? m.contentParts.map((p) => ({ type: p.type, text: p.text })) : m.content };
  if (m.reasoningContent !== '') out.reasoning_content = m.reasoningContent;
  if (m.toolCalls.length > 0) {
    out.tool_calls = m.toolCalls.map((tc) => {
      let args: unknown = tc.arguments;
      try {
        args = JSON.parse(tc.arguments);
      } catch {
        /* partial arguments stay text */
      }
      return { type: 'function', id: tc.id, function: { name: tc.name, arguments: args } };
    });
  }
  if (m.toolName !== '') out.name = m.toolName;
  if (m.toolCallId !== '') out.tool_call_id = m.toolCallId;
  return out;
}

/** The generation prompt as llama.cpp computes it (common_chat_template_generation_prompt_impl). */
function generationPrompt(template: string, o: CaseOptions, tools: Map<string, Tool>): string {
  const t = templateOf(template);
  const ctx = (add: boolean) => ({
    messages: o.messages.map(jinjaMessage),
    tools: o.tools.length > 0 ? o.tools.map((k) => ({ type: 'function', function: { name: tools.get(k)!.name, description: tools.get(k)!.description, parameters: JSON.parse(tools.get(k)!.parameters) } })) : undefined,
    add_generation_prompt: add,
    enable_thinking: o.enableThinking,
    bos_token: '',
    eos_token: '',
  });
  const without = t.render(ctx(false));
  const withPrompt = t.render(ctx(true));
  let k = 0;
  while (k < without.length && k < withPrompt.length && without[k] === withPrompt[k]) k++;
  return withPrompt.slice(k);
}

/** Thinking tags the templates open (llama.cpp's autoparser finds them by probing; these are its known ones). */
const THINK_OPENERS: [open: string, close: string][] = [
  ['<think>', '</think>'],
  ['[THINK]', '[/THINK]'],
  ['<|START_THINKING|>', '<|END_THINKING|>'],
  ['<seed:think>', '</seed:think>'],
  ['<|open|>think<|sep|>', '<|close|>'],
  ['Here are my reasoning steps:\n', '[BEGIN FINAL RESPONSE]'],
];
/** Heuristic: the generation prompt ends inside a thought (its last opener has no closer after it). */
function opensThought(prompt: string): boolean {
  return THINK_OPENERS.some(([open, close]) => prompt.includes(open) && !prompt.slice(prompt.lastIndexOf(open)).includes(close));
}

// ---------------------------------------------------------------- main

function llamaCommit(): string | null {
  try {
    return execFileSync('git', ['-C', LLAMA, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

/** Pretty at the top, one line per element of the long arrays: a diff shows which case changed. */
function compactJson(out: Record<string, unknown>): string {
  const parts = Object.entries(out).map(([k, v]) => {
    if (Array.isArray(v) && v.length > 0) return `  ${JSON.stringify(k)}: [\n${v.map((x) => `    ${JSON.stringify(x)}`).join(',\n')}\n  ]`;
    if (k === 'tools') return `  "tools": {\n${Object.entries(v as object).map(([n, t]) => `    ${JSON.stringify(n)}: ${JSON.stringify(t)}`).join(',\n')}\n  }`;
    return `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`;
  });
  return `{\n${parts.join(',\n')}\n}\n`;
}

function main(): void {
  const src = readFileSync(path.join(LLAMA, SOURCE), 'utf8');
  const { c, globals, functions, walker } = readFile(src);
  const entry = functions.get('test_template_output_peg_parsers');
  if (!entry) throw new Error('test_template_output_peg_parsers not found');
  c.pos = entry.body + 1;
  walker.block(new Scope(globals));

  // The case count the file itself has: `.run()` of a chain, per template it runs on.
  const perTemplate = new Map<string, number>();
  const cases: ExtractedCase[] = walker.cases.map((k) => {
    const n = (perTemplate.get(k.template) ?? 0) + 1;
    perTemplate.set(k.template, n);
    let gp: string | null = null;
    let gpError: string | undefined;
    if (k.options.continueFinalMessage !== 'none' || !k.options.addGenerationPrompt) gpError = 'continuation of a prefilled message: llama.cpp builds the prefix itself';
    else {
      try {
        gp = generationPrompt(k.template, k.options, walker.tools);
      } catch (e) {
        gpError = `@huggingface/jinja: ${(e as Error).message.split('\n')[0]}`;
      }
    }
    return {
      id: `${k.template.replace(/\.jinja$/, '')}#${n}`,
      family: familyOf(k.template),
      ...k,
      parseToolCalls: k.options.tools.length > 0 && k.options.toolChoice !== 'none',
      generationPrompt: gp,
      ...(gpError ? { generationPromptError: gpError } : {}),
      thinkingForcedOpen: gp === null ? null : opensThought(gp),
    };
  });
  const unextracted = walker.unextracted.map((u) => ({ ...u, family: familyOf(u.template) }));
  // Parse checks outside the builder (a raw common_chat_peg_parse call): a case of the family too.
  if (args.includes('--skipped')) for (const sk of walker.skipped) console.log(`skipped (not case data): line ${sk.line}: ${sk.text.split('\n')[0]!.trim()}`);
  for (const sk of walker.skipped) {
    if (!/common_chat_peg_parse|make_peg_parser/.test(sk.text)) continue;
    const tmpl = /models\/templates\/([^"]+\.jinja)/.exec(sk.text)?.[1] ?? '?';
    unextracted.push({
      family: familyOf(tmpl),
      template: tmpl,
      line: sk.line,
      reason: 'a parse check written outside the case builder (it expects the parser to throw a readable error, not a message)',
      source: sk.text,
    });
  }

  const families = [...new Set([...FAMILIES.map((f) => f.name), ...cases.map((k) => k.family), ...unextracted.map((u) => u.family)])];
  const tally = families.map((family) => {
    const extracted = cases.filter((k) => k.family === family).length;
    const failed = unextracted.filter((u) => u.family === family).length;
    return { family, inFile: extracted + failed, extracted, templates: [...new Set(cases.filter((k) => k.family === family).map((k) => k.template))] };
  });

  const tools = Object.fromEntries([...walker.tools].sort(([a], [b]) => a.localeCompare(b)).map(([key, t]) => [key, { name: t.name, description: t.description, parameters: JSON.parse(t.parameters) }]));
  const out = {
    source: { repository: 'https://github.com/ggml-org/llama.cpp', commit: llamaCommit(), file: SOURCE, note: 'the version node-llama-cpp 3.21.1 ships; MIT licence, see README.md' },
    comparison: 'content and reasoningContent compared with whitespace stripped at both ends; each call by name and by arguments as JSON values (llama.cpp: assert_msg_equals(expected, actual, true), renormalize_json); ids as llama.cpp expects them, for formats that carry one',
    counting: 'a case is one tst.test(…).run() chain on one template: the chains run in a loop over templates (test_lfm2_parser on 3 LFM2 templates, the Hermes 3 / Qwen2.5 / MiMo-VL loop) count once per template, so the file\'s 389 chains are 427 cases here; a parse check written outside the builder counts as a case of its family, in unextracted',
    generationPrompts: 'rendered with @huggingface/jinja as llama.cpp computes them (with and without add_generation_prompt, the part after the common prefix); llama.cpp\'s dedicated handlers may build their own',
    families: tally,
    tools,
    cases,
    unextracted,
  };
  mkdirSync(path.join(OUT_DIR, 'templates'), { recursive: true });
  writeFileSync(path.join(OUT_DIR, 'llama-cpp-cases.json'), compactJson(out));
  // The templates the cases name, beside them (test/fixtures/templates/llama-cpp/ is read first
  // where it has them).
  for (const t of new Set(cases.map((k) => k.template))) copyFileSync(path.join(LLAMA, 'models/templates', t), path.join(OUT_DIR, 'templates', t));
  const total = cases.length + unextracted.length;
  console.log(`${cases.length} of ${total} cases extracted (${unextracted.length} not), ${walker.tools.size} tools, ${cases.filter((k) => k.generationPrompt === null).length} without a generation prompt`);
  console.table(tally.map((t) => ({ family: t.family, inFile: t.inFile, extracted: t.extracted })));
  for (const u of unextracted) console.log(`not extracted: ${u.template}:${u.line}: ${u.reason}`);
}

main();

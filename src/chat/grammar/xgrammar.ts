/**
 * XGrammar (WebAssembly build, @mlc-ai/web-xgrammar) in a worker thread: one tokenizer description
 * per loaded model, compiled grammars cached per model (bounded, least recently used out), and a
 * matcher per constrained sequence that yields the allowed-token bitmask and advances with each token.
 *
 * Why XGrammar: measured on this machine (docs/clients.md, "Constrained decoding"), a mask costs about 0.03 ms
 * per token on a 152k vocabulary, it runs any batch size (one matcher per sequence), its JSON-schema
 * converter covers pattern, format, length and integer bounds, and its structural tags express "free
 * text until a tool-call tag, then constrained". @huggingface/transformers-structured-output serves one
 * sequence at a time and has no pattern/format.
 *
 * The package's ESM entry is a UMD wrapper that only works as CommonJS (it calls `require`), so it is
 * loaded as a CommonJS module from its file. Contract: worker thread; the wasm work is synchronous
 * (a first compile blocks the thread like a prefill chunk: about 0.1–0.3 s for a tool set; cached: 0.2 ms).
 */
import fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import type { ChatTokenizer } from '../model.js';
import { jsonSafeStrings } from './json-strings.js';
import { MAX_SAFE_INTEGER, NUMBER_DIGITS, withSafeIntegers } from './schema-subset.js';
import { tagsGrammar, type TagsWithSeparator } from './tag-grammar.js';

/** The part of the package's API used here (lib/xgrammar.d.ts). */
interface XGrammarApi {
  Testings: {
    _jsonSchemaToEBNF(
      schema: string,
      anyWhitespace: boolean,
      indent: number,
      separators: readonly [string, string] | undefined,
      strictMode: boolean,
      maxWhitespaceCnt?: number,
      jsonFormat?: 'json' | 'xml',
    ): Promise<string>;
  };
  TokenizerInfo: { createTokenizerInfo(vocab: string[], vocabType: string, prependSpace: boolean, vocabSize: number, stopTokenIds: number[]): Promise<TokenizerInfo> };
  GrammarCompiler: { createGrammarCompiler(info: TokenizerInfo, cacheEnabled: boolean): Promise<GrammarCompiler> };
  GrammarMatcher: { createGrammarMatcher(compiled: CompiledGrammar, overrideStopTokens?: number[], terminateWithoutStopToken?: boolean, maxRollbackTokens?: number): Promise<XMatcher> };
}
interface TokenizerInfo {
  getVocabSize(): number;
}
interface CompiledGrammar {
  dispose(): void;
}
interface GrammarCompiler {
  compileGrammar(ebnf: string, rootRule?: string): Promise<CompiledGrammar>;
  compileStructuralTag(tag: Record<string, unknown>): Promise<CompiledGrammar>;
}
interface XMatcher {
  acceptToken(id: number): boolean;
  getNextTokenBitmask(): Promise<Int32Array>;
  isTerminated(): boolean;
  dispose(): void;
}

/**
 * The instance in use. Each load of the bundle is an instance of its own (its own WebAssembly memory).
 * An instance that failed a conversion or a compile is never used again: XGrammar aborts a call it
 * refuses without unwinding, so each failure leaks part of the instance's stack, and after a few
 * dozen every call on it fails (`memory access out of bounds`), for every client (issue 37). Matchers
 * made before keep their own instance's memory alive until they are disposed.
 */
let api: XGrammarApi | undefined;
/** Counts the instances loaded; what was built on an older one (a model's compiler) is rebuilt. */
let instance = 0;

/** Loads the package's one bundle as CommonJS (its dynamic `import('module')` then works as in any CJS file). */
export function xgrammar(): XGrammarApi {
  if (api) return api;
  const file = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const loader = new Module(file) as Module & { _compile(source: string, filename: string): void; paths: string[] };
  loader.filename = file;
  loader.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(path.dirname(file));
  loader._compile(fs.readFileSync(file, 'utf8'), file);
  instance++;
  return (api = loader.exports as XGrammarApi);
}

/** Retires `failed` (when it is still the instance in use): the next call loads a fresh one. */
function retire(failed: XGrammarApi): void {
  if (api === failed) api = undefined;
}

/** Instances loaded so far (for tests: a failed compile retires the one it ran on). */
export function instancesLoaded(): number {
  return instance;
}

/** What a grammar is compiled from: a JSON schema (the whole output) or a structural tag (tool calls). */
export type GrammarSource =
  | { kind: 'json_schema'; schema: Record<string, unknown> }
  | { kind: 'structural_tag'; tag: Record<string, unknown> };

/** Compiled grammars kept per model: enough for a few clients' tool sets and schemas. */
const COMPILED_PER_MODEL = 64;

interface ModelGrammars {
  /** The instance the compiler and its grammars live in. */
  api: XGrammarApi;
  compiler: GrammarCompiler;
  vocabSize: number;
  compiled: Map<string, Promise<CompiledGrammar>>;
}

const perModel = new WeakMap<ChatTokenizer, { api: XGrammarApi; grammars: Promise<ModelGrammars> }>();

/**
 * The vocabulary as XGrammar wants it: token strings by id, in the tokenizer's own encoding, read
 * from the tokenizer as transformers.js built it (its model's id -> token list, added tokens
 * included, and its decoder), so a tokenizer rebuilt from a GGUF's metadata serves as well as one
 * read from tokenizer.json.
 */
function vocabularyOf(tokenizer: ChatTokenizer['tokenizer'], vocabSize: number): { vocab: string[]; type: string } {
  const inner = (tokenizer as unknown as { _tokenizer?: Inner })._tokenizer;
  const ids = inner?.model?.vocab;
  if (!Array.isArray(ids)) throw new Error('XGrammar: this transformers.js release does not have the tokenizer shape it was written for');
  const vocab = new Array<string>(vocabSize).fill('');
  ids.forEach((piece, id) => id < vocabSize && typeof piece === 'string' && (vocab[id] = piece));
  for (const added of inner?.added_tokens ?? []) if (added.id < vocabSize) vocab[added.id] = added.content;
  const decoder = inner?.tokenizer?.decoder;
  const decoders = [decoder?.type, ...(decoder?.decoders ?? []).map((d) => d.type)];
  const type = decoders.includes('ByteLevel') ? 'BYTE_LEVEL' : decoders.includes('ByteFallback') || inner?.model?.byte_fallback ? 'BYTE_FALLBACK' : 'RAW';
  return { vocab, type };
}

const longest = new WeakMap<object, number>();

/**
 * The most characters one token of the model's vocabulary can add to the text: its longest entry as
 * the vocabulary writes it (a byte-level entry has a character per byte, a byte-fallback one six).
 */
export function longestTokenChars(loaded: ChatTokenizer, vocabSize: number): number {
  let chars = longest.get(loaded.tokenizer);
  if (chars === undefined) {
    chars = 1;
    for (const piece of vocabularyOf(loaded.tokenizer, vocabSize).vocab) chars = Math.max(chars, piece.length);
    longest.set(loaded.tokenizer, chars);
  }
  return chars;
}

/** The parts of transformers.js 4.x's tokenizer object read here. */
interface Inner {
  model?: { vocab?: unknown; byte_fallback?: boolean };
  added_tokens?: Array<{ id: number; content: string }>;
  tokenizer?: { decoder?: { type?: string; decoders?: Array<{ type?: string }> } | null };
}

/** The model's compiler on the instance in use (made again on a fresh instance after a failure). */
function grammarsFor(loaded: ChatTokenizer & { eosTokenIds: number[] }, vocabSize: number): Promise<ModelGrammars> {
  const x = xgrammar();
  let entry = perModel.get(loaded);
  if (entry?.api !== x) {
    const grammars = (async () => {
      const { vocab, type } = vocabularyOf(loaded.tokenizer, vocabSize);
      const info = await x.TokenizerInfo.createTokenizerInfo(vocab, type, false, vocabSize, loaded.eosTokenIds);
      return { api: x, compiler: await x.GrammarCompiler.createGrammarCompiler(info, true), vocabSize, compiled: new Map() };
    })();
    entry = { api: x, grammars };
    perModel.set(loaded, entry);
  }
  return entry.grammars;
}

/**
 * A conversion or compile the grammar compiler refused. `regex`: its reason is a `pattern` it could
 * not parse (the schema's: ./schema-problems.ts and ./regex-subset.ts catch what they know of before).
 * Any other refusal, after those checks, is a failure of this server's (its message is for the log).
 */
export class GrammarCompileError extends Error {
  constructor(
    message: string,
    readonly regex: boolean,
  ) {
    super(message);
  }
}

/** A grammar's matcher for one sequence: the tokens allowed next, and the token chosen. */
export interface Matcher {
  /** The allowed tokens as a packed bitset (src/engines/sequence.ts LogitsMask). */
  mask(): Promise<Uint32Array>;
  /** Advances by one token; false (state unchanged) when the grammar does not allow it. */
  accept(id: number): boolean;
  /** The grammar is complete and its end (a stop token) was accepted. */
  terminated(): boolean;
  dispose(): void;
}

/**
 * Runs a compile, turning the compiler's refusal into an Error with its reason. XGrammar reports a
 * grammar it cannot build (a regex it cannot parse, minimum above maximum, an empty enum) on stderr
 * as `[FATAL] file:line: reason` and then aborts the call with a bare "Aborted()" (the module stays
 * usable); the line is caught here, kept out of the log, and becomes the message.
 */
async function withCompilerMessages<T>(x: XGrammarApi, compile: () => Promise<T>): Promise<T> {
  const lines: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (/\[(FATAL|WARNING)\]|^Aborted\(\)/.test(text)) {
      lines.push(text.trim());
      return true;
    }
    return (write as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
  }) as typeof process.stderr.write;
  try {
    return await compile();
  } catch (error) {
    retire(x);
    const fatal = lines.find((l) => l.includes('[FATAL]'))?.replace(/^.*?\[FATAL\]\s*\S+:\d+:\s*/, '');
    // Without a [FATAL] line the error is a bare exception pointer (a number) or a trap of the instance.
    const raw = error instanceof Error ? error.message : `uncaught exception ${String(error)}`;
    throw new GrammarCompileError(fatal ?? raw, fatal?.startsWith('Regex parsing error') ?? false);
  } finally {
    process.stderr.write = write;
  }
}

/** JSON as the grammar writes it: no whitespace between tokens, no properties beyond the schema's. */
const COMPACT = [false, -1, [',', ':'], true] as const satisfies readonly [boolean, number, readonly [string, string], boolean];

/** Positive integers up to `limit` (its decimal digits, two or more), without leading zeros: an EBNF choice. */
function integersUpTo(limit: string): string {
  const choices = [`[1-9] [0-9]{0,${limit.length - 2}}`];
  for (let i = 0; i < limit.length; i++) {
    const low = i === 0 ? 1 : 0;
    const high = Number(limit[i]) - 1;
    if (high < low) continue;
    const rest = limit.length - i - 1;
    choices.push([i > 0 ? `"${limit.slice(0, i)}"` : '', low === high ? `"${low}"` : `[${low}-${high}]`, rest > 0 ? `[0-9]{${rest}}` : ''].filter(Boolean).join(' '));
  }
  return `(${[...choices, `"${limit}"`].join(' | ')})`;
}

/** XGrammar's (0.1.27) number and integer expressions, wherever its converter writes them (a rule of its own or inline). */
const UNBOUNDED_NUMBER = '"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+-]? [0-9]+)?';
const UNBOUNDED_INTEGER = '("0" | "-"? [1-9] [0-9]*)';
/** The same, bounded (schema-subset.ts NUMBER_DIGITS): every number a finite double, every integer a safe one. */
const BOUNDED_NUMBER = `"-"? ("0" | [1-9] [0-9]{0,${NUMBER_DIGITS.integer - 1}}) ("." [0-9]{1,${NUMBER_DIGITS.fraction}})? ([eE] [+-]? [0-9]{1,${NUMBER_DIGITS.exponent}})?`;
const BOUNDED_INTEGER = `("0" | "-"? ${integersUpTo(String(MAX_SAFE_INTEGER))})`;

/**
 * `ebnf` (the converter's output) with its numbers bounded: a number's expression wherever it is
 * written; an integer's as one shared rule (`basic_integer`, which the converter defines; an exact
 * range written out inline for each integer would cost its compile for each). An integer schema's
 * own bounds were made two-sided and safe before the conversion (schema-subset.ts withSafeIntegers),
 * so XGrammar writes their exact range.
 */
function boundedNumbers(ebnf: string): string {
  const rule = `basic_integer ::= ${BOUNDED_INTEGER}`;
  let out = ebnf.split('\n').map((line) => (line.startsWith('basic_integer ::= ') ? rule : line)).join('\n');
  out = out.split(UNBOUNDED_NUMBER).join(BOUNDED_NUMBER);
  if (!out.includes(UNBOUNDED_INTEGER)) return out;
  out = out.split(UNBOUNDED_INTEGER).join('basic_integer');
  return out.split('\n').includes(rule) ? out : `${out}\n${rule}`;
}

/** The converter's grammar for `schema`: JSON (compact) or Qwen3-Coder's XML parameters, its numbers bounded. */
async function converted(x: XGrammarApi, schema: unknown, format: 'json' | 'xml'): Promise<string> {
  const text = JSON.stringify(withSafeIntegers(schema));
  // XML: the arguments XGrammar's own qwen_xml_parameter format passes (QwenXMLToolCallingToEBNF: any
  // whitespace, no indent, default separators, strict).
  const ebnf = format === 'json' ? await x.Testings._jsonSchemaToEBNF(text, ...COMPACT) : await x.Testings._jsonSchemaToEBNF(text, true, -1, undefined, true, undefined, 'xml');
  return boundedNumbers(ebnf);
}

/** The grammar (EBNF) of compact JSON valid against `schema`, its strings written as valid JSON (./json-strings.ts), its numbers bounded. */
export async function schemaGrammar(schema: unknown, x = xgrammar()): Promise<string> {
  return jsonSafeStrings(await converted(x, schema, 'json'));
}

/**
 * A structural tag whose JSON-schema parts are compact JSON: the tag format's own json_schema
 * allows any whitespace, in which a weak model wanders until its budget is spent, so each becomes
 * the grammar the converter writes for it with whitespace off (the compiler namespaces its rules).
 * Qwen3-Coder's XML parameters become the grammar XGrammar would build for them, its numbers bounded.
 * XGrammar takes `tags_with_separator` only as the whole format (inside `or` or `sequence` its compile
 * throws a bare exception): anywhere else it becomes the grammar it stands for (./tag-grammar.ts).
 */
async function compactTag(x: XGrammarApi, node: unknown, root: boolean): Promise<unknown> {
  if (Array.isArray(node)) return Promise.all(node.map((n) => compactTag(x, n, false)));
  if (typeof node !== 'object' || node === null) return node;
  const record = node as Record<string, unknown>;
  if (record.type === 'json_schema') return { type: 'grammar', grammar: await schemaGrammar(record.json_schema, x) };
  if (record.type === 'qwen_xml_parameter') return { type: 'grammar', grammar: await converted(x, record.json_schema, 'xml') };
  const compacted = Object.fromEntries(await Promise.all(Object.entries(record).map(async ([k, v]) => [k, await compactTag(x, v, false)] as const)));
  return record.type === 'tags_with_separator' && !root ? { type: 'grammar', grammar: tagsGrammar(compacted as unknown as TagsWithSeparator) } : compacted;
}

/** The structural tag compiled for `tag` (a GrammarSource's), its JSON-schema parts compact grammars. */
export async function structuralTag(tag: Record<string, unknown>, x = xgrammar()): Promise<{ type: 'structural_tag'; format: Record<string, unknown> }> {
  return { type: 'structural_tag', format: (await compactTag(x, tag, true)) as Record<string, unknown> };
}

/**
 * A matcher for `source`, compiled for this model (cached by source), ending on `stopIds`. Throws what the compiler
 * throws for a grammar it cannot build (the caller refuses the request).
 */
export async function matcherFor(loaded: ChatTokenizer & { eosTokenIds: number[] }, vocabSize: number, source: GrammarSource, stopIds: number[] = loaded.eosTokenIds): Promise<Matcher> {
  const grammars = await grammarsFor(loaded, vocabSize);
  const key = JSON.stringify(source);
  let compiled = grammars.compiled.get(key);
  if (compiled) {
    grammars.compiled.delete(key); // most recently used last
  } else {
    const x = grammars.api;
    compiled = withCompilerMessages(x, () =>
      source.kind === 'json_schema'
        ? schemaGrammar(source.schema, x).then((ebnf) => grammars.compiler.compileGrammar(ebnf, 'root'))
        : structuralTag(source.tag, x).then((tag) => grammars.compiler.compileStructuralTag(tag)),
    );
    // A failed compile is not kept.
    compiled.catch(() => grammars.compiled.get(key) === compiled && grammars.compiled.delete(key));
    while (grammars.compiled.size >= COMPILED_PER_MODEL) {
      const [oldest, evicted] = grammars.compiled.entries().next().value!;
      grammars.compiled.delete(oldest);
      // Matchers made from it hold their own reference (the binding counts them).
      void evicted.then((g) => g.dispose(), () => {});
    }
  }
  grammars.compiled.set(key, compiled);
  const matcher = await grammars.api.GrammarMatcher.createGrammarMatcher(await compiled, stopIds);
  return {
    mask: async () => {
      const bits = await matcher.getNextTokenBitmask();
      return new Uint32Array(bits.buffer, bits.byteOffset, bits.length);
    },
    accept: (id) => matcher.acceptToken(id),
    terminated: () => matcher.isTerminated(),
    dispose: () => matcher.dispose(),
  };
}

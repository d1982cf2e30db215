/**
 * What a chat request's output is constrained to, as a grammar (./xgrammar.ts), and a tracker that
 * follows the constrained text to say what still completes it (the budget rule, ./json-completion.ts).
 *
 * - An output schema: the whole answer (after any thinking) is one JSON value valid against it.
 * - Tool choice `any` / `tool`: the answer is one call (or several, when parallel calls are allowed)
 *   of the allowed tools, in the model's own tool-call syntax, each input valid against its schema.
 * - Tool choice `auto` with a `strict` tool: free text, but a call the model opens is constrained.
 * - Both an output schema and tools under `auto`: the JSON value or calls.
 * Tools that are not strict are relaxed where the grammar cannot express their schema; a strict
 * tool's or an output schema's unsupported feature refuses the request (CoreError schema_unsupported).
 */
import { CoreError } from '../../core/errors.js';
import type { ChatRequest } from '../../core/types.js';
import type { AutoCalls } from '../../models/template-features.js';
import type { ToolFormat } from '../tools/types.js';
import { JsonCompletion } from './json-completion.js';
import { isObject } from './schema-minimum.js';
import { keywordProblem, schemaProblems } from './schema-problems.js';
import { relaxSchema, unsupportedFeatures, withinReach, type JsonSchema, type SchemaFeature } from './schema-subset.js';
import type { GrammarSource } from './xgrammar.js';

/** How one format writes a call: the text before the input (naming the tool), the input, the text after. */
interface CallSyntax {
  begin(name: string): string;
  end: string;
  /** Between two calls. */
  separator: string;
  /** The text that opens a call inside free text. */
  trigger: string;
  /** The input is JSON; false: the family's text form (`text`), or Qwen3-Coder's XML parameters, which no tracker follows. */
  json: boolean;
  /** The input is the family's own text form (GLM's arg_key / arg_value, MiniMax's and DSML's
   * parameter tags, LFM2's Python arguments): its required properties, in the schema's order, each
   * value JSON under its schema or, for a string the family writes raw, text without `</`. */
  text?: TextArgs;
}

/** How a family writes one argument in its text form. */
interface TextArgs {
  /** What precedes the value; `raw`: the value is a string the family writes as it is. */
  key(name: string, raw: boolean): string;
  /** What follows the value (`raw`: as for key). */
  close: string | ((raw: boolean) => string);
  /** Between two arguments. */
  separator: string;
  /** The family writes string values raw (GLM, MiniMax, DSML); false: as JSON (LFM2's Python literals). */
  rawStrings: boolean;
  /** The two characters a raw value cannot hold, which open its close (default `</`). */
  rawStop?: string;
}

/** As each format's chat template renders a call in the history (and ../tools/parser.ts reads it). */
const SYNTAX: Record<Exclude<ToolFormat, 'auto'>, CallSyntax> = {
  hermes: { begin: (name) => `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": `, end: '}\n</tool_call>', separator: '\n', trigger: '<tool_call>', json: true },
  generic: { begin: (name) => `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": `, end: '}\n</tool_call>', separator: '\n', trigger: '<tool_call>', json: true },
  'qwen3-xml': { begin: (name) => `<tool_call>\n<function=${name}>\n`, end: '</function>\n</tool_call>', separator: '\n', trigger: '<tool_call>', json: false },
  'llama3-json': { begin: (name) => `<|python_tag|>{"name": ${JSON.stringify(name)}, "parameters": `, end: '}', separator: '; ', trigger: '<|python_tag|>', json: true },
  // The families' own forms (src/chat/tools/parser.ts and family-calls.ts read them back). XGrammar
  // takes no empty separator: where a family writes calls back to back, a newline (its parser skips
  // whitespace between calls; harmony's turn ends at its first <|call|> anyway).
  harmony: { begin: (name) => `<|channel|>commentary to=functions.${name} <|constrain|>json<|message|>`, end: '<|call|>', separator: '\n', trigger: '<|channel|>commentary to=', json: true },
  mistral: { begin: (name) => `[TOOL_CALLS]${name}[ARGS]`, end: '', separator: '\n', trigger: '[TOOL_CALLS]', json: true },
  'kimi-k2': {
    begin: (name) => `<|tool_calls_section_begin|><|tool_call_begin|>functions.${name}:0<|tool_call_argument_begin|>`,
    end: '<|tool_call_end|><|tool_calls_section_end|>', separator: '\n', trigger: '<|tool_calls_section_begin|>', json: true,
  },
  glm: {
    begin: (name) => `<tool_call>${name}`, end: '</tool_call>', separator: '\n', trigger: '<tool_call>', json: false,
    text: { key: (k) => `<arg_key>${k}</arg_key><arg_value>`, close: '</arg_value>', separator: '', rawStrings: true },
  },
  'deepseek-r1': {
    begin: (name) => `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n`,
    end: '\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>', separator: '\n', trigger: '<｜tool▁calls▁begin｜>', json: true,
  },
  'deepseek-v3.1': {
    begin: (name) => `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>${name}<｜tool▁sep｜>`,
    end: '<｜tool▁call▁end｜><｜tool▁calls▁end｜>', separator: '\n', trigger: '<｜tool▁calls▁begin｜>', json: true,
  },
  'deepseek-dsml': {
    begin: (name) => `<｜DSML｜function_calls>\n<｜DSML｜invoke name="${name}">\n`,
    end: '</｜DSML｜invoke>\n</｜DSML｜function_calls>', separator: '\n', trigger: '<｜DSML｜function_calls>', json: false,
    text: { key: (k, raw) => `<｜DSML｜parameter name="${k}" string="${raw}">`, close: '</｜DSML｜parameter>\n', separator: '', rawStrings: true },
  },
  'minimax-m2': {
    begin: (name) => `<minimax:tool_call>\n<invoke name="${name}">\n`,
    end: '</invoke>\n</minimax:tool_call>', separator: '\n', trigger: '<minimax:tool_call>', json: false,
    text: { key: (k) => `<parameter name="${k}">`, close: '</parameter>\n', separator: '', rawStrings: true },
  },
  gemma4: {
    begin: (name) => `<|tool_call>call:${name}{`, end: '}<tool_call|>', separator: '\n', trigger: '<|tool_call>', json: false,
    text: { key: (k, raw) => `${k}:${raw ? '<|"|>' : ''}`, close: (raw) => (raw ? '<|"|>' : ''), separator: ',', rawStrings: true, rawStop: '<|' },
  },
  lfm2: {
    begin: (name) => `<|tool_call_start|>[${name}(`, end: ')]<|tool_call_end|>', separator: '\n', trigger: '<|tool_call_start|>', json: false,
    text: { key: (k) => `${k}=`, close: '', separator: ', ', rawStrings: false },
  },
};

/**
 * The syntax of a form the template analysis found (src/chat/template/analyze.ts), as the template
 * renders a call: a JSON call under its keys inside its section, or the tagged form with each
 * argument's value raw (a string) or JSON (../tools/auto-calls.ts types it back by the schema).
 */
function analysedSyntax(calls: AutoCalls): CallSyntax {
  if (calls.shape === 'json') {
    const [open, close] = calls.array ? ['[', ']'] : ['', ''];
    // The id the template writes before the name (Command R's `"tool_call_id": "0"`), as it writes it.
    const id = calls.id?.first ? `${JSON.stringify(calls.id.key)}: ${JSON.stringify(calls.id.value)}, ` : '';
    return {
      begin: (name) => `${calls.open}${open}{${id}${JSON.stringify(calls.nameKey)}: ${JSON.stringify(name)}, ${JSON.stringify(calls.argsKey)}: `,
      end: `}${close}${calls.close}`, separator: '\n', trigger: calls.open, json: true,
    };
  }
  return {
    begin: (name) => `${calls.open}${calls.nameOpen}${name}${calls.nameClose}`, end: `${calls.callClose}${calls.close}`, separator: '\n', trigger: calls.open, json: false,
    text: { key: (k) => `${calls.argOpen}${k}${calls.argMid}`, close: calls.argClose, separator: '', rawStrings: true },
  };
}

/** A dedicated format's syntax, or the analysed form's (for the `auto` format). */
function syntaxOf(form: ToolFormat | AutoCalls): CallSyntax {
  if (typeof form !== 'string') return analysedSyntax(form);
  if (form === 'auto') throw new Error('the auto format is constrained by its analysed call form');
  return SYNTAX[form];
}

export interface Constraint {
  source: GrammarSource;
  /** Follows the constrained text; says what completes it. */
  tracker(): ConstraintTracker;
  /** Tool schema features dropped so the grammar could express the rest (for the log). */
  relaxed: Array<SchemaFeature & { tool: string }>;
}

/**
 * The constraint a request asks for, or undefined when its output is free; `format` is the family's,
 * or the analysed call form of an `auto` family. `loose`: schemas that are
 * not strict (tools, a non-strict output) lose every value check too (for when the compiler refused
 * their relaxed form). `reach`: the most characters the output can hold; counts beyond it are made
 * equivalent and cheap to compile (./schema-subset.ts withinReach).
 */
export function planConstraint(request: ChatRequest, format: ToolFormat | AutoCalls, loose = false, reach = Infinity): Constraint | undefined {
  const cheap = (schema: JsonSchema) => (Number.isFinite(reach) ? (withinReach(schema, reach) as JsonSchema) : schema);
  const checked = request.output && (request.output.strict ? refuseUnsupported(request.output.schema, { reason: 'output' }) : relaxSchema(refuseProblems(request.output.schema, { reason: 'output' }), loose).schema);
  const output = checked && cheap(checked);
  const choice = request.toolChoice;
  const tools = request.tools?.length && choice?.mode !== 'none' ? request.tools : [];
  const allowed = choice?.mode === 'tool' ? tools.filter((t) => t.name === choice.name) : tools;
  const forced = choice?.mode === 'any' || choice?.mode === 'tool';
  const strictTools = tools.some((t) => t.strict);
  tools.forEach((tool, i) => tool.strict && refuseUnsupported(tool.inputSchema, { reason: 'tool', item: i }));
  const useTools = forced || strictTools;
  if (!output && !useTools) return undefined;

  const syntax = syntaxOf(format);
  const relaxed: Constraint['relaxed'] = [];
  const calls = (useTools ? allowed : []).map((tool) => {
    if (tool.strict) return { name: tool.name, schema: cheap(tool.inputSchema) };
    const relaxedTool = relaxSchema(tool.inputSchema, loose, (node, key, value) => keywordProblem(node, key, value, tool.inputSchema));
    relaxed.push(...relaxedTool.relaxed.map((f) => ({ ...f, tool: tool.name })));
    return { name: tool.name, schema: cheap(relaxedTool.schema) };
  });
  const parallel = choice?.parallel ?? true;
  const tags = calls.map(({ name, schema }) => ({
    type: 'tag',
    begin: syntax.begin(name),
    content: syntax.json ? { type: 'json_schema', json_schema: schema } : syntax.text ? textArguments(schema, syntax.text) : { type: 'qwen_xml_parameter', json_schema: schema },
    end: syntax.end,
  }));
  const callLayout = { syntax, calls, parallel };
  if (forced || (output && useTools)) {
    const callsTag = { type: 'tags_with_separator', tags, separator: syntax.separator, at_least_one: true, stop_after_first: !parallel };
    if (forced || !output) return { source: { kind: 'structural_tag', tag: callsTag }, tracker: () => new CallsTracker(callLayout, 'forced'), relaxed };
    return {
      source: { kind: 'structural_tag', tag: { type: 'or', elements: [{ type: 'json_schema', json_schema: output }, callsTag] } },
      tracker: () => new EitherTracker(output, callLayout),
      relaxed,
    };
  }
  if (output) return { source: { kind: 'json_schema', schema: output }, tracker: () => new JsonTracker(output), relaxed };
  const triggered = { type: 'triggered_tags', triggers: [syntax.trigger], tags, at_least_one: false, stop_after_first: !parallel };
  return { source: { kind: 'structural_tag', tag: triggered }, tracker: () => new CallsTracker(callLayout, 'triggered'), relaxed };
}

/**
 * A call's input and end as the tracker follows them and the grammar is built from them: literal
 * text, a JSON value under a schema, a raw string value (any text without `stop`, the two characters
 * that open what follows it), or optional whitespace.
 */
type Piece = { kind: 'text'; text: string } | { kind: 'json'; schema: JsonSchema } | { kind: 'raw'; stop: string } | { kind: 'space' };

/**
 * A text-form call's arguments: its required properties in the schema's order (the optional ones are
 * left out: a sequence has no optional elements), each value JSON under its own schema, or raw text
 * for a string the family writes raw.
 */
function textArgumentPieces(schema: JsonSchema, form: TextArgs): Piece[] {
  const properties = propertiesOf(schema);
  const required = Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string' && Object.hasOwn(properties, k)) : [];
  const pieces: Piece[] = [];
  const text = (value: string) => value !== '' && pieces.push({ kind: 'text', text: value });
  required.forEach((name, i) => {
    const property = properties[name]!;
    const raw = form.rawStrings && property.type === 'string';
    text((i > 0 ? form.separator : '') + form.key(name, raw));
    pieces.push(raw ? { kind: 'raw', stop: form.rawStop ?? '</' } : { kind: 'json', schema: property });
    text(typeof form.close === 'string' ? form.close : form.close(raw));
  });
  return pieces.length === 0 ? [{ kind: 'space' }] : pieces;
}

/** An object schema's properties by name (none when it names none). */
const propertiesOf = (schema: JsonSchema) => (isObject(schema.properties) ? schema.properties : {}) as Record<string, JsonSchema>;

/** The input's pieces of one call, its end included; undefined for Qwen3-Coder's XML parameters (XmlParametersFollower). */
function callPieces(syntax: CallSyntax, schema: JsonSchema): Piece[] | undefined {
  const end: Piece[] = syntax.end ? [{ kind: 'text', text: syntax.end }] : [];
  if (syntax.json) return [{ kind: 'json', schema }, ...end];
  return syntax.text ? [...textArgumentPieces(schema, syntax.text), ...end] : undefined;
}

const inClass = (c: string) => (/[\\\]^-]/.test(c) ? `\\${c}` : c);
const literal = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The grammar of a text-form call's arguments (its pieces, the call's end left to the tag). */
function textArguments(schema: JsonSchema, form: TextArgs): Record<string, unknown> {
  const elements = textArgumentPieces(schema, form).map((piece): Record<string, unknown> => {
    switch (piece.kind) {
      case 'text':
        return { type: 'const_string', value: piece.text };
      case 'json':
        return { type: 'json_schema', json_schema: piece.schema };
      case 'raw': {
        const [a, b] = [...piece.stop] as [string, string];
        return { type: 'regex', pattern: `([^${inClass(a)}]|${literal(a)}[^${inClass(b)}])*` };
      }
      case 'space':
        return { type: 'regex', pattern: '\\s*' };
    }
  });
  return elements.length === 1 ? elements[0]! : { type: 'sequence', elements };
}

type Where = { reason: 'output' | 'tool'; item?: number };

/**
 * The schema itself when some value satisfies it and it is valid JSON Schema; otherwise a CoreError
 * naming its first problem (./schema-problems.ts): what no value satisfies is refused even where the
 * schema is not strict, since relaxing it would only hide the client's mistake.
 */
function refuseProblems(schema: JsonSchema, where: Where): JsonSchema {
  const [first] = schemaProblems(schema);
  if (!first) return schema;
  throw new CoreError('schema_unsupported', `The schema's ${first.feature} at '${first.path || '/'}' cannot be used: ${first.problem}`, {
    ...where,
    feature: first.feature,
    schemaPath: first.path,
    problem: first.problem,
  });
}

/** The schema itself when the grammar enforces all of it; otherwise a CoreError naming its first problem, or the first feature it cannot enforce. */
function refuseUnsupported(schema: JsonSchema, where: Where): JsonSchema {
  refuseProblems(schema, where);
  const [first] = unsupportedFeatures(schema);
  if (!first) return schema;
  throw new CoreError('schema_unsupported', `The schema uses ${first.feature} at '${first.path || '/'}', which constrained decoding cannot enforce`, {
    ...where,
    feature: first.feature,
    schemaPath: first.path,
  });
}

/** Follows the text of the constrained part of an answer. */
export interface ConstraintTracker {
  push(text: string): void;
  /** The shortest text that completes it: '' when it may end now, undefined when unknown. */
  completion(): string | undefined;
}

class JsonTracker implements ConstraintTracker {
  private readonly json: JsonCompletion;
  constructor(schema: JsonSchema) {
    this.json = new JsonCompletion(schema);
  }
  push(text: string): void {
    this.json.push(text);
  }
  completion(): string | undefined {
    return this.json.completion();
  }
}

interface CallLayout {
  syntax: CallSyntax;
  calls: Array<{ name: string; schema: JsonSchema }>;
  parallel: boolean;
}

/**
 * The shortest text of the pieces from each index to the end (`[i]`: from piece i; `[length]`: '');
 * undefined from a piece whose shortest value cannot be known. Worked out once per call: the guide
 * asks for a completion at every token.
 */
function shortestSuffixes(pieces: readonly Piece[]): Array<string | undefined> {
  const suffixes: Array<string | undefined> = [];
  suffixes[pieces.length] = '';
  for (let i = pieces.length - 1; i >= 0; i--) {
    const piece = pieces[i]!;
    const text = piece.kind === 'text' ? piece.text : piece.kind === 'json' ? new JsonCompletion(piece.schema).completion() : '';
    const rest = suffixes[i + 1];
    suffixes[i] = rest === undefined || text === undefined ? undefined : text + rest;
  }
  return suffixes;
}

/** Follows one call's input and end, character by character. */
interface InputFollower {
  /** The call has ended. */
  readonly done: boolean;
  /** One character; false when the call had already ended (the character is not the call's). */
  push(c: string): boolean;
  /** The shortest text that ends the call; undefined when it cannot be known. */
  completion(): string | undefined;
}

/** Follows one call's input and end, piece by piece; lost (no completion) at text the pieces do not take. */
class PiecesFollower implements InputFollower {
  private at = 0;
  /** In a text piece: its characters matched; in a raw value: whether the last character opened its stop. */
  private offset = 0;
  private json: JsonCompletion | undefined;
  private lost = false;

  constructor(
    private readonly pieces: readonly Piece[],
    /** shortestSuffixes(pieces). */
    private readonly suffixes: ReadonlyArray<string | undefined>,
  ) {
    this.enter();
  }

  get done(): boolean {
    return !this.lost && this.at === this.pieces.length;
  }

  /** One character; false when the call had already ended (the character is not the call's). */
  push(c: string): boolean {
    if (this.lost) return true;
    const piece = this.pieces[this.at];
    if (!piece) return false;
    switch (piece.kind) {
      case 'text':
        if (piece.text[this.offset] !== c) this.lost = true;
        else if (++this.offset === piece.text.length) this.next();
        return true;
      case 'json': {
        const after = this.json!.push(c);
        if (!this.json!.complete) return true;
        this.next();
        return after === '' || this.push(after); // a number ends at the character after it
      }
      case 'raw':
        if (this.offset === 1 && c === piece.stop[1]) {
          this.next();
          return [...piece.stop].every((s) => this.push(s));
        }
        this.offset = this.offset === 0 && c === piece.stop[0] ? 1 : 0;
        return true;
      case 'space':
        if (/\s/.test(c)) return true;
        this.next();
        return this.push(c);
    }
  }

  completion(): string | undefined {
    if (this.lost) return undefined;
    const piece = this.pieces[this.at];
    if (!piece) return '';
    const rest = this.suffixes[this.at + 1];
    if (rest === undefined) return undefined;
    switch (piece.kind) {
      case 'text':
        return piece.text.slice(this.offset) + rest;
      case 'json': {
        const value = this.json!.completion();
        return value === undefined ? undefined : value + rest;
      }
      case 'raw': {
        // A held first stop character is the start of what follows (which begins with the stop).
        if (this.offset === 0) return rest;
        return rest.startsWith(piece.stop[0]!) ? rest.slice(1) : undefined;
      }
      case 'space':
        return rest;
    }
  }

  private next(): void {
    this.at++;
    this.enter();
  }

  private enter(): void {
    this.offset = 0;
    const piece = this.pieces[this.at];
    this.json = piece?.kind === 'json' ? new JsonCompletion(piece.schema) : undefined;
  }
}

const isSpace = (c: string) => c === ' ' || c === '\n' || c === '\t';

/**
 * Qwen3-Coder's XML parameters as XGrammar's qwen_xml_parameter grammar has them, then the call's
 * end: the schema's properties in its order, the optional ones optional, each `<parameter=NAME>`
 * VALUE `</parameter>` with whitespace around the value and before a parameter (never before the
 * end); a string value is XML text (it holds no `<`), any other value JSON.
 */
class XmlParametersFollower implements InputFollower {
  /** The schema's properties in its order: a string's value is XML text; `shortest`: the shortest value. */
  private readonly properties: Array<{ name: string; schema: JsonSchema; required: boolean; text: boolean; shortest: string | undefined }>;
  /** The first property that may still come. */
  private next = 0;
  private phase: 'between' | 'value' | 'close' | 'done' = 'between';
  /** The text of a parameter's opening tag, the end, or a closing tag being written. */
  private typed = '';
  /** Whitespace since the last parameter: another parameter must follow. */
  private spaced = false;
  /** The value being written: JSON, or XML text with an escape or entity it has not finished. */
  private json: JsonCompletion | undefined;
  private unfinished = '';
  private lost = false;

  constructor(schema: JsonSchema, private readonly end: string) {
    const properties = propertiesOf(schema);
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    this.properties = Object.entries(properties).map(([name, property]) => {
      const text = property.type === 'string';
      return { name, schema: property, required: required.has(name), text, shortest: text ? '' : new JsonCompletion(property).completion() };
    });
  }

  get done(): boolean {
    return this.phase === 'done';
  }

  push(c: string): boolean {
    if (this.lost) return true;
    switch (this.phase) {
      case 'done':
        return false;
      case 'between':
        return this.between(c);
      case 'value':
        return this.value(c);
      case 'close':
        if (this.typed === '' && isSpace(c)) return true;
        this.typed += c;
        if (!CLOSE.startsWith(this.typed)) this.lost = true;
        else if (this.typed === CLOSE) [this.phase, this.typed, this.spaced] = ['between', '', false];
        return true;
    }
  }

  completion(): string | undefined {
    if (this.lost) return undefined;
    switch (this.phase) {
      case 'done':
        return '';
      case 'between': {
        let best: string | undefined;
        for (const option of this.options()) {
          if (!option.text.startsWith(this.typed)) continue;
          const rest = option.at === undefined ? '' : this.afterOpening(option.at);
          if (rest === undefined) continue;
          const text = option.text.slice(this.typed.length) + rest;
          if (best === undefined || text.length < best.length) best = text;
        }
        return best;
      }
      case 'value': {
        const value = this.json ? this.json.completion() : this.unfinished === '' ? '' : undefined;
        return join(value, CLOSE, this.requiredFrom(this.next));
      }
      case 'close':
        return join(CLOSE.slice(this.typed.length), this.requiredFrom(this.next));
    }
  }

  /** After property `at`'s opening tag: its shortest value, its close, and the required ones after it. */
  private afterOpening(at: number): string | undefined {
    return join(this.properties[at]!.shortest, CLOSE, this.requiredFrom(at + 1));
  }

  /** What may come next: the properties up to the first required one, and the end once none is required. */
  private options(): Array<{ text: string; at: number | undefined }> {
    const out: Array<{ text: string; at: number | undefined }> = [];
    for (let at = this.next; at < this.properties.length; at++) {
      out.push({ text: `<parameter=${this.properties[at]!.name}>`, at });
      if (this.properties[at]!.required) return out;
    }
    if (!this.spaced) out.push({ text: this.end, at: undefined });
    return out;
  }

  private between(c: string): boolean {
    if (this.typed === '' && isSpace(c)) return (this.spaced = true);
    this.typed += c;
    const options = this.options().filter((o) => o.text.startsWith(this.typed));
    const whole = options.find((o) => o.text === this.typed);
    if (options.length === 0) this.lost = true;
    else if (whole?.at === undefined && whole) this.phase = 'done';
    else if (whole) {
      const property = this.properties[whole.at!]!;
      this.next = whole.at! + 1;
      this.json = property.text ? undefined : new JsonCompletion(property.schema);
      [this.phase, this.typed, this.unfinished] = ['value', '', ''];
    }
    return true;
  }

  private value(c: string): boolean {
    if (this.json) {
      const after = this.json.push(c);
      if (!this.json.complete) return true;
      this.phase = 'close';
      return after === '' || this.push(after); // a number ends at the character after it
    }
    if (this.unfinished !== '') {
      // An escape (\n, \uXXXX) or an entity (&lt;) being written.
      this.unfinished += c;
      const u = this.unfinished;
      if (u[0] === '&' ? c === ';' : u.length === (u[1] === 'u' ? 6 : 2)) this.unfinished = '';
      return true;
    }
    if (c === '\\' || c === '&') this.unfinished = c;
    else if (c === '<') [this.phase, this.typed] = ['close', '<'];
    return true;
  }

  /** The required properties from `at` with their shortest values, then the end. */
  private requiredFrom(at: number): string | undefined {
    let out = '';
    for (let i = at; i < this.properties.length; i++) {
      const { required, name, shortest } = this.properties[i]!;
      if (!required) continue;
      if (shortest === undefined) return undefined;
      out += `<parameter=${name}>${shortest}${CLOSE}`;
    }
    return out + this.end;
  }
}

const CLOSE = '</parameter>';
/** The parts joined; undefined when one is unknown. */
const join = (...parts: Array<string | undefined>) => (parts.some((p) => p === undefined) ? undefined : parts.join(''));

/** How one call's input in `syntax` is followed: a follower for each call written, and the shortest input and end. */
function followerFor(syntax: CallSyntax, schema: JsonSchema): { start: () => InputFollower; shortest: string | undefined } {
  const pieces = callPieces(syntax, schema);
  if (!pieces) return { start: () => new XmlParametersFollower(schema, syntax.end), shortest: new XmlParametersFollower(schema, syntax.end).completion() };
  const suffixes = shortestSuffixes(pieces);
  return { start: () => new PiecesFollower(pieces, suffixes), shortest: suffixes[0] };
}

/** Tool calls, forced (at least one, nothing else) or triggered (free text around them). */
class CallsTracker implements ConstraintTracker {
  /** Text since the last call ended (or the start). */
  private pending = '';
  /** The call being written. */
  private open: InputFollower | undefined;
  private done = 0;
  private readonly followers: Map<string, ReturnType<typeof followerFor>>;

  constructor(
    private readonly layout: CallLayout,
    private readonly mode: 'forced' | 'triggered',
  ) {
    this.followers = new Map(layout.calls.map((call) => [call.name, followerFor(layout.syntax, call.schema)]));
  }

  push(text: string): void {
    const { syntax } = this.layout;
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      const open = this.open;
      if (open && open.push(c)) {
        if (open.done) {
          this.open = undefined;
          this.done++;
        }
        continue;
      }
      this.pending += c;
      const call = this.layout.calls.find((k) => this.pending.endsWith(syntax.begin(k.name)));
      if (call) {
        this.open = this.followers.get(call.name)!.start();
        this.pending = '';
      }
    }
  }

  completion(): string | undefined {
    const { syntax } = this.layout;
    const open = this.open;
    if (open) return open.completion();
    // Between calls: what a call still needs, if one must come or has begun.
    const lead = this.mode === 'forced' && this.done > 0 ? syntax.separator : '';
    let started = this.pending;
    if (this.mode === 'triggered') {
      const at = this.pending.lastIndexOf(syntax.trigger);
      if (at < 0) return '';
      started = this.pending.slice(at);
    } else if (this.done > 0 && this.pending === '') return '';
    let best: string | undefined;
    for (const call of this.layout.calls) {
      const opener = lead + syntax.begin(call.name);
      if (!opener.startsWith(started)) continue;
      const input = this.followers.get(call.name)!.shortest;
      if (input === undefined) continue;
      const text = opener.slice(started.length) + input;
      if (best === undefined || text.length < best.length) best = text;
    }
    return best;
  }
}

/** An output schema's JSON value or tool calls: the first character tells which. */
class EitherTracker implements ConstraintTracker {
  private chosen: ConstraintTracker | undefined;
  constructor(
    private readonly schema: JsonSchema,
    private readonly layout: CallLayout,
  ) {}
  push(text: string): void {
    if (text === '') return;
    this.chosen ??= text.startsWith(this.layout.syntax.begin('').slice(0, 1)) ? new CallsTracker(this.layout, 'forced') : new JsonTracker(this.schema);
    this.chosen.push(text);
  }
  completion(): string | undefined {
    return this.chosen ? this.chosen.completion() : new JsonTracker(this.schema).completion();
  }
}

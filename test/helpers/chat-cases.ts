/**
 * llama.cpp's parse cases (tests/test-chat.cpp, as data in test/fixtures/chat-cases/, made by
 * scripts/builders/families/extract-chat-cases.ts) and the adapter that replays one through our
 * parser: the template's tool-call format and thinking switch as src/models/template-features.ts
 * reads them, the tool-call parser of that format, and the AnswerBuilder that splits thinking,
 * text and calls, fed the model's output as the worker feeds it. When the parsers change their
 * entry points, `parseWithOurs` is the one place to follow them.
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parseModelOutput } from '../../src/chat/parse-output.js';
import type { ToolSpec } from '../../src/core/types.js';
import { ROOT } from './paths.js';

const FIXTURES = path.join(ROOT, 'test/fixtures');

export interface ExpectedCall {
  name: string;
  /** JSON text as llama.cpp's test wrote it (partial JSON in a few partial cases). */
  arguments: string;
  id: string;
}

export interface ChatCaseMessage {
  role: string;
  content: string;
  contentParts: { type: string; text: string }[];
  toolCalls: ExpectedCall[];
  reasoningContent: string;
  toolName: string;
  toolCallId: string;
}

export interface ChatCase {
  id: string;
  family: string;
  template: string;
  /** Line of the case in llama.cpp's tests/test-chat.cpp. */
  line: number;
  /** The model's output after the generation prompt. */
  input: string;
  options: {
    reasoningFormat: 'none' | 'auto' | 'deepseek' | 'deepseek-legacy';
    enableThinking: boolean;
    /** Keys into the fixture's tools table. */
    tools: string[];
    toolChoice: 'auto' | 'required' | 'none';
    parallelToolCalls: boolean;
    /** The output is cut mid-generation: the message so far is compared. */
    isPartial: boolean;
    jsonSchema: string | null;
    addGenerationPrompt: boolean;
    /** Not none: the input continues the conversation's last (assistant) message. */
    continueFinalMessage: 'none' | 'auto' | 'reasoning' | 'content';
    messages: ChatCaseMessage[];
  };
  parseToolCalls: boolean;
  expect: { content: string; reasoningContent: string; toolCalls: ExpectedCall[] };
  expectReconstruction: boolean;
  generationPrompt: string | null;
  generationPromptError?: string;
  thinkingForcedOpen: boolean | null;
}

export interface ChatCaseFile {
  families: { family: string; inFile: number; extracted: number; templates: string[] }[];
  tools: Record<string, { name: string; description: string; parameters: Record<string, unknown> }>;
  cases: ChatCase[];
  unextracted: { family: string; template: string; line: number; reason: string; source: string }[];
}

let loaded: ChatCaseFile | undefined;
export function chatCases(): ChatCaseFile {
  loaded ??= JSON.parse(readFileSync(path.join(FIXTURES, 'chat-cases/llama-cpp-cases.json'), 'utf8')) as ChatCaseFile;
  return loaded;
}

/** Each family's cases, in the file's order (families with no extracted case included, empty). */
export function casesByFamily(): Map<string, ChatCase[]> {
  const file = chatCases();
  const out = new Map(file.families.map((f) => [f.family, [] as ChatCase[]]));
  for (const c of file.cases) out.get(c.family)!.push(c);
  return out;
}

/** A llama.cpp template, from the shared fixture folder (test/fixtures/templates/llama-cpp: all of llama.cpp's). */
export function templateSource(name: string): string {
  const file = path.join(FIXTURES, 'templates/llama-cpp', name);
  if (!existsSync(file)) throw new Error(`template ${name} is not in test/fixtures/templates/llama-cpp`);
  return readFileSync(file, 'utf8');
}

export interface ParsedMessage {
  content: string;
  reasoningContent: string;
  toolCalls: { name: string; input: Record<string, unknown> }[];
}

/**
 * The message our code makes of a case's output, fed in `chunk`-character deltas (code points;
 * Infinity: all at once). What the request would be on our server: its tools (when llama.cpp
 * parses calls), thinking on when the case asks the template for it and wants it extracted
 * (enable_thinking, reasoning_format not none) and the template has the switch our code reads.
 * Throws for what our chat layer has no counterpart of (continuing a prefilled assistant message).
 */
export function parseWithOurs(c: ChatCase, chunk = Infinity): ParsedMessage {
  if (c.options.continueFinalMessage !== 'none') {
    const last = c.options.messages.at(-1);
    // Our prefill (src/chat/prompt.ts) continues a final assistant message's content; a thought in
    // it is not rendered, and the answer is the continuation alone.
    if (last?.reasoningContent) throw new Unsupported('continuing a prefilled assistant message that holds a thought (our prefill continues content only)');
    throw new Unsupported('continuing a prefilled assistant message (the answer would be the continuation alone)');
  }
  const table = chatCases().tools;
  const tools: ToolSpec[] = c.options.tools.map((key) => ({ name: table[key]!.name, description: table[key]!.description, inputSchema: table[key]!.parameters }));
  const points = [...c.input];
  const step = Number.isFinite(chunk) ? Math.max(1, chunk) : Math.max(1, points.length);
  const chunks: string[] = [];
  for (let i = 0; i < points.length; i += step) chunks.push(points.slice(i, i + step).join(''));
  // The server's own entry point (a chat turn's answer, without a model): thinking looked for when the
  // case asks the template for it and wants it extracted; the thought already open where the case's
  // generation prompt opened it. A partial case is parsed as if the generation ended there.
  const parsed = parseModelOutput(templateSource(c.template), chunks, {
    thinking: c.options.enableThinking && c.options.reasoningFormat !== 'none',
    thoughtOpened: c.thinkingForcedOpen === true,
    ...(c.parseToolCalls && tools.length > 0 ? { tools } : {}),
  });
  const out: ParsedMessage = { content: parsed.content, reasoningContent: parsed.reasoning, toolCalls: parsed.toolCalls.map((t) => ({ name: t.name, input: t.input })) };
  return out;
}

export class Unsupported extends Error {}

/** JSON values equal, object keys in any order (llama.cpp compares them re-dumped by nlohmann, sorted). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => sameJson(x, (b as unknown[])[i]));
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b as object).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const show = (s: string) => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);

/**
 * Why `actual` is not the case's expected message, or null when it is: content and reasoning equal
 * with whitespace stripped at both ends, the same number of calls, each with the same name and
 * arguments equal as JSON (as llama.cpp's assert_msg_equals(…, true) compares). A call whose
 * expected arguments are not JSON (partial cases: empty or cut) never matches: llama.cpp wants
 * arguments that are not JSON either, and our parser hands back only complete calls. Ids are not
 * compared: ours are made by the server, not by the parser.
 */
export function mismatch(c: ChatCase, actual: ParsedMessage): string | null {
  const e = c.expect;
  if (e.content.trim() !== actual.content.trim()) return `content ${show(actual.content)}, expected ${show(e.content)}`;
  if (e.reasoningContent.trim() !== actual.reasoningContent.trim()) return `reasoning ${show(actual.reasoningContent)}, expected ${show(e.reasoningContent)}`;
  if (e.toolCalls.length !== actual.toolCalls.length) return `${actual.toolCalls.length} calls, expected ${e.toolCalls.length}`;
  for (const [i, call] of e.toolCalls.entries()) {
    const got = actual.toolCalls[i]!;
    if (call.name !== got.name) return `call ${i} named ${got.name}, expected ${call.name}`;
    let args: unknown;
    try {
      args = JSON.parse(call.arguments);
    } catch {
      return `call ${i}: expected partial arguments ${show(call.arguments)}`;
    }
    if (!sameJson(args, got.input)) return `call ${i} arguments ${show(JSON.stringify(got.input))}, expected ${show(call.arguments)}`;
  }
  return null;
}

export interface Replay {
  passed: boolean;
  /** Our chat layer has no counterpart of the case's request (it is not passed either). */
  unsupported?: boolean;
  /** Why not, when it did not pass. */
  reason?: string;
}

/**
 * One case through our parser, whole and streamed one character at a time: it passes when both
 * give the expected message (llama.cpp's test also feeds every prefix).
 */
export function replay(c: ChatCase): Replay {
  try {
    const whole = mismatch(c, parseWithOurs(c));
    if (whole) return { passed: false, reason: whole };
    const streamed = mismatch(c, parseWithOurs(c, 1));
    if (streamed) return { passed: false, reason: `streamed: ${streamed}` };
    return { passed: true };
  } catch (e) {
    if (e instanceof Unsupported) return { passed: false, unsupported: true, reason: `unsupported: ${e.message}` };
    return { passed: false, reason: `threw: ${(e as Error).message}` };
  }
}

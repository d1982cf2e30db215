/**
 * The pure entry point to a family's output parsing, for tests and for replaying llama.cpp's
 * tests/test-chat.cpp cases: (the template's features, or its source; the model's output text with
 * its marker strings; thinking on/off; the tools) -> the message it means. It runs the same answer
 * builder and parser as a chat turn (./answer.ts, ./tools/parser.ts), so a case that passes here
 * passes in a turn fed the same text, whatever its split into deltas.
 */
import { familyMarkers, thoughtTags, type TemplateFeatures } from '../models/template-features.js';
import { familyFeatures } from './template/family-features.js';
import type { ToolSpec } from '../core/types.js';
import { AnswerBuilder } from './answer.js';
import { createToolCallParser } from './tools/parser.js';

export interface ParseOptions {
  /** Look for a thought (thinking on). Default: true. */
  thinking?: boolean;
  /** The prompt ends inside a thought its template opened, so the text starts inside it (llama.cpp's
   * "forced open" thinking: the output has no opening tag). */
  thoughtOpened?: boolean;
  /** The request's tools; calls to others are text. None: calls are not looked for (harmony's
   * channels still are). */
  tools?: readonly ToolSpec[];
}

export interface ParsedOutput {
  content: string;
  reasoning: string;
  toolCalls: Array<{ name: string; input: Record<string, unknown> }>;
}

/** `text` may be split into deltas (an array) to test streaming; the result does not depend on it. */
export function parseModelOutput(family: TemplateFeatures | string, text: string | readonly string[], options: ParseOptions = {}): ParsedOutput {
  const features = typeof family === 'string' ? familyFeatures(family) : family;
  const tags = thoughtTags(features);
  const format = features.toolFormat;
  const tools = options.tools?.length ? options.tools : undefined;
  const parser = tools || format === 'harmony' ? createToolCallParser(format, tools ?? [], features.auto?.calls) : undefined;
  const builder = new AnswerBuilder({
    send: () => {},
    ...(tags && (options.thinking ?? true) ? { reasoning: tags, startsInThought: options.thoughtOpened ?? false } : {}),
    ...(parser ? { tools: parser } : {}),
    markers: familyMarkers(features),
  });
  const chunks = typeof text === 'string' ? [text] : text;
  chunks.forEach((chunk, i) => builder.push(chunk, i + 1));
  builder.finish(chunks.length);
  const out: ParsedOutput = { content: '', reasoning: '', toolCalls: [] };
  for (const part of builder.parts) {
    if (part.kind === 'text') out.content += part.text;
    else if (part.kind === 'thinking') out.reasoning += part.text;
    else out.toolCalls.push({ name: part.call.name, input: part.call.input });
  }
  return out;
}

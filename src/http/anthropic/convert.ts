/**
 * Anthropic wire body -> internal ChatPrompt / ChatRequest. What the server cannot do (PDFs, server
 * tools, MCP servers) is refused here with a 400
 * that names it; nothing is silently dropped, except what Anthropic itself documents as hints.
 * `image` blocks (base64 or url sources), in user turns and inside `tool_result` content, become the
 * turn's images through the request's ImageIntake (../shared/image-intake.ts), which checks them.
 *
 * The conversation as the API defines it: `system` messages anywhere in `messages` join the system
 * prompt in order; consecutive turns of one role are combined; an assistant turn's `tool_use` blocks
 * become its tool calls and its `thinking` blocks its reasoning; a user turn's `tool_result` blocks
 * become one tool message each (in order, before the turn's text); a final assistant turn without
 * tool calls is a prefill. Claude Code's billing-header system block (a per-request value) is dropped.
 */
import { clip } from '../../core/errors.js';
import type { ChatMessage, ChatPrompt, ChatRequest, ThinkingOptions, ToolCall, ToolChoice, ToolSpec } from '../../core/types.js';
import { HttpError, invalidRequest } from '../shared/errors.js';
import { imageBlockSchema, type CountTokensBody, type MessagesBody } from './schema.js';
import { describeValue, parseField } from '../shared/validation.js';
import { ImageIntake, shiftImages, TurnContent } from '../shared/image-intake.js';
import { thinkingLevel } from '../shared/effort.js';

type PromptBody = CountTokensBody | MessagesBody;
type Block = { type: string; [key: string]: unknown };

/** Claude Code's first system block: `x-anthropic-billing-header: cc_version=…; cc_entrypoint=…;` — never part of the prompt. */
const BILLING_HEADER = /^\s*x-anthropic-billing-header:/;

/** `images`: the request's image intake (the plugin's, with the server's settings; the defaults otherwise). */
export function toChatPrompt(body: PromptBody, images = new ImageIntake()): ChatPrompt {
  // The model's name as messages quote it: a client's string, so clipped.
  const model = clip(body.model);
  if (body.messages.length === 0) throw invalidRequest('messages: at least one message is required', 'messages');
  if (body.mcp_servers?.length) throw unsupported('mcp_servers', 'MCP servers', model);
  const systemParts = body.system === undefined ? [] : [systemText(body.system)];
  const turns: Array<{ index: number; message: ChatMessage }> = [];
  body.messages.forEach((message, i) => {
    const where = `messages.${i}`;
    if (message.role === 'system') systemParts.push(textOf(message.content, `${where}.content`, model));
    else for (const converted of convertTurn(message.role, message.content, { where, model, images })) turns.push({ index: i, message: converted });
  });
  if (turns.length === 0) throw invalidRequest('messages: at least one user message is required', 'messages');
  if (turns[0]!.message.role !== 'user' && turns[0]!.message.role !== 'tool') throw invalidRequest('messages: first message must use the "user" role', `messages.${turns[0]!.index}.role`);
  const last = turns.at(-1)!;
  turns.forEach(({ index, message }) => {
    const isFinalAssistant = message === last.message && message.role === 'assistant';
    const empty = message.content.trim() === '' && !(message.role === 'assistant' && message.toolCalls?.length) && !(message.role === 'user' && message.images);
    if (empty && !isFinalAssistant && message.role !== 'tool') {
      throw invalidRequest(`messages.${index}: ${message.role} messages must have non-empty content`, `messages.${index}.content`);
    }
  });
  // An empty final assistant message, which the API allows, means no prefill: it is dropped rather
  // than rendered as a finished empty turn (or merged into the turn before it).
  if (last.message.role === 'assistant' && last.message.content === '' && !last.message.toolCalls?.length) turns.pop();
  const messages = mergeTurns(turns.map((t) => t.message));
  // The prefill is the merged final assistant turn: checked as a whole, whatever it was sent as.
  const final = messages.at(-1)!;
  if (final.role === 'assistant' && !final.toolCalls?.length && /\s$/.test(final.content)) {
    throw invalidRequest('messages: final assistant content cannot end with trailing whitespace', `messages.${last.index}.content`);
  }
  const system = systemParts.filter((part) => part !== '').join('\n\n');
  return {
    model: body.model,
    ...(system !== '' || body.system !== undefined ? { system } : {}),
    messages,
    ...toolsOf(body),
    ...(thinkingOf(body) ?? {}),
  };
}

export function toChatRequest(body: MessagesBody, images = new ImageIntake()): ChatRequest {
  const prompt = toChatPrompt(body, images);
  if (body.thinking?.type === 'enabled' && body.thinking.budget_tokens >= body.max_tokens) {
    throw invalidRequest(`thinking.budget_tokens: must be less than max_tokens (${body.max_tokens}), got ${body.thinking.budget_tokens}`, 'thinking.budget_tokens');
  }
  return {
    ...prompt,
    maxTokens: body.max_tokens,
    sampling: { temperature: body.temperature, topP: body.top_p, topK: body.top_k },
    stopStrings: body.stop_sequences ?? [],
    ...outputOf(body),
  };
}

/** Structured outputs, in the current form or the beta one (not both). */
function outputOf(body: MessagesBody): Pick<ChatRequest, 'output'> {
  const current = body.output_config?.format;
  const beta = body.output_format;
  if (current && beta) throw invalidRequest('output_format: send either output_config.format or the beta output_format, not both', 'output_format');
  const format = current ?? beta;
  // Anthropic enforces every schema it accepts: the grammar refuses what it cannot enforce.
  return format ? { output: { schema: format.schema, strict: true } } : {};
}

const unsupported = (field: string, feature: string, model: string) =>
  new HttpError('unsupported_feature', `\`${field}\`: the model \`${model}\` does not support ${feature}; remove \`${field}\` from the request.`, field);

/** The system prompt's text; the billing-header block of Claude Code is left out. */
function systemText(system: NonNullable<PromptBody['system']>): string {
  if (typeof system === 'string') return BILLING_HEADER.test(system) ? '' : system;
  return system.filter((block) => !BILLING_HEADER.test(block.text)).map((block) => block.text).join('');
}

/** Where a block is and what reads its images, for the converters below. */
interface Place {
  where: string;
  model: string;
  images: ImageIntake;
}

/** One wire message as core turns: tool results come first (one tool message each), then the rest. */
function convertTurn(role: 'user' | 'assistant', content: string | Block[], { where, model, images }: Place): ChatMessage[] {
  if (typeof content === 'string') return [{ role, content }];
  const text = new TurnContent();
  const calls: ToolCall[] = [];
  const reasoning: string[] = [];
  const results: ChatMessage[] = [];
  content.forEach((block, j) => {
    const at = `${where}.content.${j}`;
    switch (block.type) {
      case 'text':
        text.add(stringField(block, 'text', at));
        return;
      case 'document':
        text.add(documentText(block, at, model));
        return;
      case 'image':
        if (role !== 'user') throw invalidRequest(`${at}: image blocks belong to user messages (or a tool_result's content)`, `${at}.type`);
        text.image(imageOf(block, at, images));
        return;
      case 'tool_use':
        if (role !== 'assistant') throw invalidRequest(`${at}: tool_use blocks belong to assistant messages`, `${at}.type`);
        calls.push({ id: stringField(block, 'id', at), name: stringField(block, 'name', at), input: objectField(block, 'input', at) });
        return;
      case 'tool_result': {
        if (role !== 'user') throw invalidRequest(`${at}: tool_result blocks belong to user messages`, `${at}.type`);
        const output = block.content === undefined ? new TurnContent() : contentOf(block.content as string | Block[], { where: `${at}.content`, model, images });
        results.push({ role: 'tool', callId: stringField(block, 'tool_use_id', at), name: '', content: output.text, isError: block.is_error === true, ...output.imagesField });
        return;
      }
      case 'thinking':
        if (role === 'assistant') reasoning.push(stringField(block, 'thinking', at));
        return;
      case 'redacted_thinking':
        // Encrypted reasoning of another model: nothing a local model can read.
        return;
      default:
        throw unsupportedBlock(block.type, at, model);
    }
  });
  if (role === 'user') return [...results, ...(text.text !== '' || text.images.length > 0 || results.length === 0 ? [{ role: 'user' as const, content: text.text, ...text.imagesField }] : [])];
  return [{ role: 'assistant', content: text.text, ...(calls.length ? { toolCalls: calls } : {}), ...(reasoning.length ? { reasoning: reasoning.join('\n\n') } : {}) }];
}

/** Consecutive turns of one role become one (tool results stay one message per call). */
function mergeTurns(turns: ChatMessage[]): ChatMessage[] {
  const merged: ChatMessage[] = [];
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous?.role === 'user' && turn.role === 'user') {
      const shifted = shiftImages(turn.images, previous.content.length + 2);
      previous.content = `${previous.content}\n\n${turn.content}`;
      if (shifted.length > 0) previous.images = [...(previous.images ?? []), ...shifted];
    } else if (previous?.role === 'assistant' && turn.role === 'assistant') {
      previous.content = [previous.content, turn.content].filter((t) => t !== '').join('\n\n');
      if (turn.toolCalls) previous.toolCalls = [...(previous.toolCalls ?? []), ...turn.toolCalls];
      if (turn.reasoning) previous.reasoning = [previous.reasoning, turn.reasoning].filter(Boolean).join('\n\n');
    } else {
      merged.push({ ...turn });
    }
  }
  // Tool results name the tool they answer (some templates print it).
  const names = new Map(merged.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => [c.id, c.name] as const) : [])));
  for (const m of merged) if (m.role === 'tool') m.name = names.get(m.callId) ?? '';
  return merged;
}

function toolsOf(body: PromptBody): { tools?: ToolSpec[]; toolChoice?: ToolChoice } {
  const tools = (body.tools ?? []).map((tool, i): ToolSpec => {
    if (tool.type !== undefined && tool.type !== 'custom') {
      throw new HttpError('unsupported_feature', `tools.${i}: server tools of type \`${clip(tool.type, 64)}\` are not available on this server; send client tools (name, description, input_schema).`, `tools.${i}.type`);
    }
    if (!tool.input_schema) throw invalidRequest(`tools.${i}.input_schema: Field required`, `tools.${i}.input_schema`);
    return { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: tool.input_schema, ...(tool.strict ? { strict: true } : {}) };
  });
  const choice = body.tool_choice;
  if (choice && tools.length === 0 && choice.type !== 'none') throw invalidRequest('tool_choice: requires `tools`', 'tool_choice');
  if (choice?.type === 'tool' && !tools.some((t) => t.name === choice.name)) {
    throw invalidRequest(`tool_choice.name: no tool named \`${clip(choice.name, 128)}\` in \`tools\``, 'tool_choice.name');
  }
  if (tools.length === 0) return {};
  const parallel = !(choice && 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use);
  return { tools, toolChoice: { mode: choice?.type ?? 'auto', ...(choice?.type === 'tool' ? { name: choice.name } : {}), parallel } };
}

/**
 * enabled (with its budget) and adaptive turn thinking on; disabled and between_tools turn it off.
 * output_config.effort is the level, for templates that take one (gpt-oss).
 */
function thinkingOf(body: PromptBody): { thinking: ThinkingOptions } | undefined {
  const thinking = body.thinking;
  const level = thinkingLevel(body.output_config?.effort);
  const at = level ? { level } : {};
  if (!thinking) return level ? { thinking: { enabled: false, ...at } } : undefined;
  if (thinking.type === 'enabled') return { thinking: { enabled: true, budgetTokens: thinking.budget_tokens, ...at } };
  return { thinking: { enabled: thinking.type === 'adaptive', ...at } };
}

/** Text blocks (and text documents) joined in order; any other block is refused with its position. */
function textOf(content: string | Block[], where: string, model: string): string {
  if (typeof content === 'string') return content;
  return content.map((block, j) => blockText(block, `${where}.${j}`, model)).join('');
}

/** A text block's or a text document's text; any other block is refused with its position. */
function blockText(block: Block, at: string, model: string): string {
  if (block.type === 'text') return stringField(block, 'text', at);
  if (block.type === 'document') return documentText(block, at, model);
  throw unsupportedBlock(block.type, at, model);
}

/** A tool result's content: text blocks, text documents and images, in order. */
function contentOf(content: string | Block[], { where, model, images }: Place): TurnContent {
  return TurnContent.of(content, { at: (j) => `${where}.${j}`, isImage: (block) => block.type === 'image', image: (block, at) => imageOf(block, at, images), text: (block, at) => blockText(block, at, model) });
}

/** An image block's source: base64 data with its media type, or a URL (fetched only where the server allows it). */
function imageOf(block: Block, at: string, images: ImageIntake) {
  // The source's kind first, in words a client can act on (the union alone says only "none of the forms").
  const kind = (block.source as { type?: unknown } | null | undefined)?.type;
  if (block.source != null && typeof block.source === 'object' && kind !== 'base64' && kind !== 'url' && kind !== 'file') {
    throw invalidRequest(`${at}.source.type: expected "base64" or "url", got ${describeValue(kind)}`, `${at}.source.type`);
  }
  const { source } = parseField(imageBlockSchema, block, [at]);
  if (source.type === 'base64') return images.take({ kind: 'base64', data: source.data, mediaType: source.media_type }, at);
  if (source.type === 'url') return images.take({ kind: 'url', url: source.url }, at);
  throw new HttpError('unsupported_feature', `${at}.source: file sources (the Files API) are not served by this server; send the image as base64 or by url`, `${at}.source.type`);
}

/** A document with a plain-text source is its text (titled when it has a title); a PDF or an image is refused. */
function documentText(block: Block, at: string, model: string): string {
  const source = block.source as { type?: string; data?: unknown; content?: unknown } | undefined;
  let text: string | undefined;
  if (source?.type === 'text' && typeof source.data === 'string') text = source.data;
  if (source?.type === 'content') text = typeof source.content === 'string' ? source.content : textOf(source.content as Block[], `${at}.source.content`, model);
  if (text === undefined) throw unsupportedBlock(`document (${source?.type ?? 'no'} source)`, at, model);
  return typeof block.title === 'string' && block.title !== '' ? `${block.title}\n\n${text}` : text;
}

const unsupportedBlock = (type: string, at: string, model: string) =>
  new HttpError('unsupported_feature', `${at}: content blocks of type \`${clip(type, 64)}\` are not supported by the text-only model \`${model}\`.`, `${at}.type`);

function stringField(block: Block, field: string, at: string): string {
  const value = block[field];
  if (typeof value !== 'string') throw invalidRequest(`${at}.${field}: ${value === undefined ? 'Field required' : 'expected a string'}`, `${at}.${field}`);
  return value;
}

function objectField(block: Block, field: string, at: string): Record<string, unknown> {
  const value = block[field];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest(`${at}.${field}: ${value === undefined ? 'Field required' : 'expected an object'}`, `${at}.${field}`);
  }
  return value as Record<string, unknown>;
}

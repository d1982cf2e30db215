/**
 * Responses wire body -> internal ChatRequest, on the same core as the two chat dialects.
 *
 * - `instructions`, then `system` and `developer` message items wherever they are, form the system
 *   prompt in order (as chat completions joins its system and developer messages); so does the
 *   summary a `compaction` item carries (POST /v1/responses/compact wrote it).
 * - `user` items are user turns; `assistant` items (their `output_text` parts), `function_call` items
 *   and `reasoning` items fed back form assistant turns (a call after a message joins its turn, a
 *   reasoning item is the thought of the turn it precedes); `function_call_output` items are tool
 *   results. `input_image` parts of user messages and of function_call_output items (an `image_url`
 *   data URL, or http(s) where the server fetches; `detail`) become the turn's images through the
 *   request's ImageIntake (../shared/image-intake.ts), which checks them; a `file_id` image, file and
 *   audio parts are a 400 that names them.
 * - Tools: `function` tools as they are; a `namespace` tool's functions under `namespace.name`, and
 *   called back as a function_call with that `namespace` (render.ts); hosted tools only a hosted
 *   service can run are left out of the prompt (the plugin logs them) unless `tool_choice` forces
 *   one, which is a 400; tools the client executes in forms of their own (custom, shell, apply_patch…)
 *   are a 400 naming the type.
 * - `text.format` json_schema / json_object through the grammar; `reasoning.effort` turns the
 *   model's thinking switch on (none and minimal: off), at its level where the template takes one.
 */
import { clip } from '../../core/errors.js';
import type { ChatMessage, ChatRequest, ThinkingOptions, ToolCall, ToolChoice, ToolSpec } from '../../core/types.js';
import { HttpError, invalidRequest } from '../shared/errors.js';
import { callArguments } from '../shared/call-arguments.js';
import { parseField } from '../shared/validation.js';
import { allowedToolsChoiceSchema, functionChoiceSchema, inputImagePartSchema, ITEM_SCHEMAS, type FunctionToolBody, type InputItem, type NamespaceToolBody, type ResponsesBody } from './schema.js';
import { thinkingFromEffort } from '../shared/effort.js';
import { ImageIntake, TurnContent } from '../shared/image-intake.js';

type Part = { type: string; text?: string; [key: string]: unknown };

const unsupported = (param: string, message: string) => new HttpError('unsupported_feature', `${param}: ${message}`, param);

/** Tools only a hosted service can run: left out of the prompt, never the reason a request fails. */
export const HOSTED_TOOLS = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11', 'file_search', 'code_interpreter', 'image_generation', 'computer_use', 'computer_use_preview', 'mcp', 'tool_search']);

/** A namespaced function's name as the model sees it, and back. */
export const NAMESPACE_SEPARATOR = '.';

export interface ConvertedRequest {
  request: ChatRequest;
  /** Hosted tools left out of the prompt (for the log). */
  skippedTools: string[];
  /** Namespaced tool names as the model sees them -> their namespace and own name. */
  namespaced: Map<string, { namespace: string; name: string }>;
}

export interface ConvertOptions {
  /** The model's output limit, for a request that names none (the window then bounds it). */
  defaultMaxTokens: number;
  /** The text of an encrypted_content this server wrote (a reasoning item's thought, a compaction item's summary); undefined for any other. */
  readSealed: (encrypted: string, kind: 'thought' | 'summary') => string | undefined;
  /** The request's image intake (the plugin's, with the server's settings; the defaults otherwise). */
  images?: ImageIntake;
}

/** `items`: the conversation as items (the previous response's input and output first, references resolved). */
export function toResponsesRequest(body: Omit<ResponsesBody, 'stream'>, items: InputItem[], options: ConvertOptions): ConvertedRequest {
  refuseUnserved(body);
  const { system, messages } = conversationOf(items, { instructions: body.instructions ?? undefined, model: body.model, readSealed: options.readSealed, images: options.images ?? new ImageIntake() });
  if (messages.length === 0) throw invalidRequest('input: at least one item other than system or developer messages is required', 'input');
  const { tools, toolChoice, skipped, namespaced } = toolsOf(body);
  const logprobs = body.include?.includes('message.output_text.logprobs') ? (body.top_logprobs ?? 0) : undefined;
  const thinking = thinkingOf(body);
  const request: ChatRequest = {
    model: body.model,
    ...(system.length > 0 ? { system: system.join('\n\n') } : {}),
    messages,
    ...(tools.length > 0 ? { tools, ...(toolChoice ? { toolChoice } : {}) } : {}),
    ...(thinking ? { thinking } : {}),
    maxTokens: body.max_output_tokens ?? options.defaultMaxTokens,
    sampling: {
      ...(body.temperature != null ? { temperature: body.temperature } : {}),
      ...(body.top_p != null ? { topP: body.top_p } : {}),
    },
    stopStrings: [],
    ...(logprobs !== undefined ? { logprobs } : {}),
    ...(body.ignore_eos ? { ignoreEos: true } : {}),
    ...outputOf(body),
    ...(body.prompt_cache_key ? { cacheKey: body.prompt_cache_key } : {}),
  };
  return { request, skippedTools: skipped, namespaced };
}

function refuseUnserved(body: Omit<ResponsesBody, 'stream'>): void {
  if (body.background) throw unsupported('background', 'background responses are not served by this server; leave `background` out (the response is answered when it is done)');
  if (body.conversation != null) throw unsupported('conversation', 'conversations are not kept by this server; send `previous_response_id`, or the whole history as `input`');
  if (body.prompt != null) throw unsupported('prompt', 'stored prompt templates are not served by this server; send `instructions` and `input`');
  if (body.top_logprobs != null && body.top_logprobs > 0 && !body.include?.includes('message.output_text.logprobs')) {
    throw invalidRequest('top_logprobs: requires include: ["message.output_text.logprobs"]', 'top_logprobs');
  }
}

/** The system prompt's parts and the turns, from the items in order. */
function conversationOf(items: InputItem[], context: { instructions: string | undefined; model: string; readSealed: ConvertOptions['readSealed']; images: ImageIntake }): { system: string[]; messages: ChatMessage[] } {
  const { instructions, model, images } = context;
  const system = instructions ? [instructions] : [];
  const messages: ChatMessage[] = [];
  const callNames = new Map<string, string>();
  /** A thought fed back, waiting for the assistant turn it belongs to. */
  let thought: string | undefined;
  type Turn = Extract<ChatMessage, { role: 'assistant' }>;
  const newTurn = (): Turn => {
    const turn: Turn = { role: 'assistant', content: '', ...(thought !== undefined ? { reasoning: thought } : {}) };
    thought = undefined;
    messages.push(turn);
    return turn;
  };
  /** The assistant turn an item joins: the last one, while no tool result, other turn or new thought came between. */
  const lastTurn = (): Turn | undefined => {
    const last = messages.at(-1);
    return last?.role === 'assistant' && thought === undefined ? last : undefined;
  };
  items.forEach((given, i) => {
    const where = `input[${i}]`;
    const type = given.type ?? 'message';
    const item = checkedItem(given, type, where);
    if (type === 'message' && 'role' in item && item.role === 'user') {
      const content = contentOf(item.content as string | Part[], { where: `${where}.content`, model, images });
      messages.push({ role: 'user', content: content.text, ...content.imagesField });
    } else if (type === 'message' && 'role' in item) {
      const text = textOf(item.content as string | Part[], `${where}.content`, model);
      if (item.role === 'system' || item.role === 'developer') system.push(text);
      else {
        // Text after the turn's calls starts a turn of its own.
        const last = lastTurn();
        (last && !last.toolCalls ? last : newTurn()).content += text;
      }
    } else if (type === 'function_call' && 'call_id' in item && 'arguments' in item) {
      const name = item.namespace ? `${item.namespace}${NAMESPACE_SEPARATOR}${item.name}` : (item.name as string);
      callNames.set(item.call_id as string, name);
      const call: ToolCall = { id: item.call_id as string, name, input: callArguments(item.arguments as string, `${where}.arguments`) };
      const turn = lastTurn() ?? newTurn();
      turn.toolCalls = [...(turn.toolCalls ?? []), call];
    } else if (type === 'function_call_output' && 'call_id' in item && 'output' in item) {
      const output = contentOf(item.output as string | Part[], { where: `${where}.output`, model, images });
      messages.push({ role: 'tool', content: output.text, callId: item.call_id as string, name: callNames.get(item.call_id as string) ?? '', ...output.imagesField });
    } else if (type === 'reasoning') {
      const text = thoughtOf(item as ReasoningItem, context.readSealed);
      if (text) thought = thought === undefined ? text : `${thought}\n\n${text}`;
    } else if (type === 'compaction') {
      // A summary POST /v1/responses/compact wrote stands for the conversation before it.
      const summary = context.readSealed(String((item as { encrypted_content?: unknown }).encrypted_content ?? ''), 'summary');
      if (summary === undefined) throw invalidRequest(`${where}.encrypted_content: not a compaction this server wrote (or written under another RESPONSES_REASONING_KEY)`, `${where}.encrypted_content`);
      system.push(`Summary of the earlier conversation:\n${summary}`);
    } else {
      throw unsupported(`${where}.type`, `\`${clip(type, 64)}\` items are not served by this server; send message, function_call, function_call_output, reasoning, compaction or item_reference items`);
    }
  });
  return { system, messages };
}

interface ReasoningItem {
  content?: Array<{ text: string }> | null;
  summary?: Array<{ text: string }>;
  encrypted_content?: string | null;
}

/**
 * The thought a reasoning item carries: the one this server sealed in its encrypted_content, else its
 * content (the reasoning text), else its summary. One of them, never their join: an item this server
 * wrote holds the same thought in all three and Codex sends it back whole (joined, harmony's analysis
 * went back to gpt-oss twice), and a summary restates the content it comes with.
 */
function thoughtOf(item: ReasoningItem, readSealed: ConvertOptions['readSealed']): string | undefined {
  const sealed = item.encrypted_content ? readSealed(item.encrypted_content, 'thought') : undefined;
  const joined = (parts: Array<{ text: string }> | null | undefined) => (parts ?? []).map((p) => p.text).join('\n\n');
  return sealed ?? (joined(item.content) || joined(item.summary) || undefined);
}

/** An item of a type served here, as its own schema reads it; refused with the field at fault when it does not fit. */
function checkedItem(item: InputItem, type: string, where: string): InputItem {
  const schema = ITEM_SCHEMAS.get(type);
  if (!schema) return item;
  const parsed = schema.safeParse(item);
  if (parsed.success) return parsed.data as InputItem;
  const issue = parsed.error.issues[0]!;
  const field = [where, ...issue.path.map(String)].join('.');
  throw invalidRequest(`${field}: ${issue.message}`, field);
}

/** Text parts joined; any other part is refused with its place. */
function textOf(content: string | Part[], where: string, model: string): string {
  if (typeof content === 'string') return content;
  return content.map((part, j) => partText(part, `${where}[${j}]`, model)).join('');
}

function partText(part: Part, at: string, model: string): string {
  if ((part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') && typeof part.text === 'string') return part.text;
  if (part.type === 'refusal') return (part as { refusal?: string }).refusal ?? '';
  if (part.type === 'input_text' || part.type === 'output_text') throw invalidRequest(`${at}.text: Field required`, `${at}.text`);
  if (part.type === 'input_image') throw invalidRequest(`${at}: input_image parts belong to user messages and function_call_output items`, `${at}.type`);
  throw unsupported(`${at}.type`, `\`${clip(part.type, 64)}\` content is not supported: the model \`${clip(model)}\` is text-only; send input_text parts`);
}

/** A user message's or a tool output's text and input_image parts, in order. */
function contentOf(content: string | Part[], { where, model, images }: { where: string; model: string; images: ImageIntake }): TurnContent {
  return TurnContent.of(content, { at: (j) => `${where}[${j}]`, isImage: (part) => part.type === 'input_image', image: (part, at) => imageOf(part, at, images), text: (part, at) => partText(part, at, model) });
}

/**
 * An input_image part: `image_url` (a data URL, or http(s) where the server fetches) and `detail`
 * (`low`: a low-resolution view; `high`, `original`, `auto`: the model's own processor settings); a
 * `file_id` is refused.
 */
function imageOf(part: Part, at: string, images: ImageIntake) {
  const { image_url: url, file_id: fileId, detail } = parseField(inputImagePartSchema, part, [at]);
  if (fileId != null && url == null) throw unsupported(`${at}.file_id`, 'images by file_id (the Files API) are not served by this server; send `image_url` with a data URL (data:image/png;base64,...)');
  if (url == null) throw invalidRequest(`${at}.image_url: Field required`, `${at}.image_url`);
  return images.take({ kind: 'url', url }, at, { lowResolution: detail === 'low' });
}

const functionSpec = (f: FunctionToolBody | { name: string; description?: string | null; parameters?: unknown; strict?: boolean | null }, name = f.name): ToolSpec => ({
  name,
  ...(f.description ? { description: f.description } : {}),
  inputSchema: (f.parameters as Record<string, unknown> | null | undefined) ?? { type: 'object', properties: {} },
  ...(f.strict ? { strict: true } : {}),
});

function toolsOf(body: Omit<ResponsesBody, 'stream'>): { tools: ToolSpec[]; toolChoice?: ToolChoice; skipped: string[]; namespaced: ConvertedRequest['namespaced'] } {
  const tools: ToolSpec[] = [];
  const skipped: string[] = [];
  const namespaced: ConvertedRequest['namespaced'] = new Map();
  (body.tools ?? []).forEach((tool, i) => {
    if (tool.type === 'function') tools.push(functionSpec(tool as FunctionToolBody));
    else if (tool.type === 'namespace') {
      const ns = tool as NamespaceToolBody;
      ns.tools.forEach((inner, j) => {
        if (inner.type !== 'function') throw unsupported(`tools[${i}].tools[${j}].type`, `\`${clip(inner.type, 64)}\` tools inside a namespace are not served; send function tools`);
        const f = inner as unknown as FunctionToolBody;
        const name = `${ns.name}${NAMESPACE_SEPARATOR}${f.name}`;
        namespaced.set(name, { namespace: ns.name, name: f.name });
        tools.push(functionSpec(f, name));
      });
    } else if (HOSTED_TOOLS.has(tool.type)) skipped.push(tool.type);
    else throw unsupported(`tools[${i}].type`, `\`${clip(tool.type, 64)}\` tools are not served by this server; send function tools (a hosted tool such as web_search is left out of the prompt)`);
  });
  return { tools, ...choiceOf(body, tools), skipped, namespaced };
}

function choiceOf(body: Omit<ResponsesBody, 'stream'>, tools: ToolSpec[]): { toolChoice?: ToolChoice } {
  const parallel = body.parallel_tool_calls ?? true;
  const choice = body.tool_choice;
  if (choice == null) return tools.length > 0 ? { toolChoice: { mode: 'auto', parallel } } : {};
  if (typeof choice === 'string') {
    // "auto" with no tools left (none sent, or only hosted ones) is no choice at all, as OpenAI takes it
    // (Codex's compaction turn sends it so); "required" needs a tool to call.
    if (tools.length === 0 && choice !== 'required') return {};
    if (tools.length === 0) throw invalidRequest('tool_choice: "required" requires function tools in `tools`', 'tool_choice');
    return { toolChoice: { mode: choice === 'required' ? 'any' : choice, parallel } };
  }
  if (choice.type === 'function') {
    const { name } = parseField(functionChoiceSchema, choice, ['tool_choice']);
    if (!tools.some((t) => t.name === name)) throw invalidRequest(`tool_choice.name: no function tool named \`${clip(name, 64)}\` in \`tools\``, 'tool_choice');
    return { toolChoice: { mode: 'tool', name, parallel } };
  }
  if (choice.type === 'allowed_tools') {
    const { mode, tools: listed } = parseField(allowedToolsChoiceSchema, choice, ['tool_choice']);
    const allowed = new Set(listed.map((t) => t.name));
    const kept = tools.filter((t) => allowed.has(t.name));
    if (kept.length === 0) throw invalidRequest('tool_choice.tools: none of the allowed tools is a function tool in `tools`', 'tool_choice');
    tools.splice(0, tools.length, ...kept);
    return { toolChoice: { mode: mode === 'required' ? 'any' : 'auto', parallel } };
  }
  throw unsupported('tool_choice.type', `\`${clip(choice.type, 64)}\` cannot be forced here: it is a tool only a hosted service runs; send "auto", "none", "required", a function or allowed_tools`);
}

/** reasoning: effort none or minimal turns the model's thinking off; any other effort, or none given, on (at the effort's level). */
function thinkingOf(body: Omit<ResponsesBody, 'stream'>): ThinkingOptions | undefined {
  if (!body.reasoning) return undefined;
  return thinkingFromEffort(body.reasoning.effort) ?? { enabled: true };
}

/** text.format: json_object is any JSON object; json_schema its schema (enforced exactly when strict). */
function outputOf(body: Omit<ResponsesBody, 'stream'>): Pick<ChatRequest, 'output'> {
  const format = body.text?.format;
  if (!format || format.type === 'text') return {};
  if (format.type === 'json_object') return { output: { schema: { type: 'object', additionalProperties: true }, strict: false } };
  return { output: { schema: format.schema, strict: format.strict === true } };
}

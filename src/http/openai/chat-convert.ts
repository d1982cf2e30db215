/**
 * OpenAI chat wire body -> internal ChatRequest. The conversation goes to the model's chat template
 * as sent (OpenAI does not merge turns): `system` and `developer` messages, wherever they are, form
 * the system prompt in order; an assistant message's `tool_calls` become its tool calls (their
 * `arguments` parsed), a `tool` message one tool result; a final assistant message without tool calls
 * is a prefill that the answer continues (as llama-server does). What the server cannot do is refused
 * with a 400 naming the field, never ignored: audio, logit bias, n > 1. A user message's `image_url`
 * parts (data URLs; http(s) URLs where the server fetches them; `detail`) become its images through
 * the request's ImageIntake (../shared/image-intake.ts), which checks them.
 * Log probabilities are the model's raw distribution (src/engines/logprobs.ts).
 */
import { clip } from '../../core/errors.js';
import type { ChatMessage, ChatRequest, ToolCall, ToolChoice, ToolSpec } from '../../core/types.js';
import { HttpError, invalidRequest } from '../shared/errors.js';
import { callArguments } from '../shared/call-arguments.js';
import { functionChoiceSchema, imageUrlPartSchema, type ChatBody, type ChatMessageBody } from './chat-schema.js';
import { parseField } from '../shared/validation.js';
import { thinkingFromEffort } from '../shared/effort.js';
import { ImageIntake, TurnContent } from '../shared/image-intake.js';

type Part = { type: string; text?: string; image_url?: unknown };

const unsupported = (param: string, message: string) => new HttpError('unsupported_feature', `${param}: ${message}`, param);

/**
 * `defaultMaxTokens`: the model's output limit, for a request that names none (the window then bounds
 * it). `images`: the request's image intake (the plugin's, with the server's settings; the defaults otherwise).
 */
export function toChatCompletionRequest(body: ChatBody, defaultMaxTokens: number, images = new ImageIntake()): ChatRequest {
  refuseUnserved(body);
  const system: string[] = [];
  const messages: ChatMessage[] = [];
  const callNames = new Map<string, string>();
  body.messages.forEach((message, i) => {
    const where = `messages[${i}]`;
    const converted = convertMessage(message, { where, model: body.model, callNames, images });
    if (converted === 'system') system.push(textOf(message.content as string | Part[], `${where}.content`, body.model));
    else messages.push(converted);
  });
  if (messages.length === 0) throw invalidRequest('messages: at least one message other than system or developer is required', 'messages');
  const systemText = system.join('\n\n');
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? defaultMaxTokens;
  const thinking = thinkingFromEffort(body.reasoning_effort);
  return {
    model: body.model,
    ...(system.length > 0 ? { system: systemText } : {}),
    messages,
    ...toolsOf(body),
    ...(thinking ? { thinking } : {}),
    maxTokens,
    sampling: {
      ...(body.temperature != null ? { temperature: body.temperature } : {}),
      ...(body.top_p != null ? { topP: body.top_p } : {}),
      ...(body.top_k != null ? { topK: body.top_k } : {}),
      ...(body.seed != null ? { seed: body.seed } : {}),
      ...(body.presence_penalty ? { presencePenalty: body.presence_penalty } : {}),
      ...(body.frequency_penalty ? { frequencyPenalty: body.frequency_penalty } : {}),
      ...(body.repetition_penalty != null ? { repetitionPenalty: body.repetition_penalty } : {}),
    },
    stopStrings: body.stop == null ? [] : (typeof body.stop === 'string' ? [body.stop] : body.stop).filter((s) => s !== ''),
    ...(body.logprobs ? { logprobs: body.top_logprobs ?? 0 } : {}),
    ...(body.ignore_eos ? { ignoreEos: true } : {}),
    ...outputOf(body),
    ...(body.prompt_cache_key ? { cacheKey: body.prompt_cache_key } : {}),
  };
}

function refuseUnserved(body: ChatBody): void {
  if (body.n != null && body.n > 1) throw unsupported('n', `only 1 choice per request is served (got ${body.n}); send n: 1 and repeat the request, or leave n out`);
  if (body.logit_bias && Object.keys(body.logit_bias).length > 0) throw unsupported('logit_bias', 'logit bias is not served by this server; leave it out');
  if (body.top_logprobs != null && !body.logprobs) throw invalidRequest('top_logprobs: requires logprobs: true', 'top_logprobs');
  if (body.modalities && body.modalities.some((m) => m !== 'text')) throw unsupported('modalities', `only "text" output is served (got ${body.modalities.map((m) => JSON.stringify(clip(m, 32))).join(', ')})`);
  if (body.audio != null) throw unsupported('audio', 'audio output is not served by this server');
  if (body.prediction != null) throw unsupported('prediction', 'predicted outputs are not served by this server');
  if (body.web_search_options != null) throw unsupported('web_search_options', 'web search is not available on this server');
  if (body.functions != null || body.function_call != null) {
    throw unsupported(body.functions != null ? 'functions' : 'function_call', 'the legacy functions API is not served; send `tools` and `tool_choice`');
  }
}

/** One wire message as a core turn, or 'system' for a system or developer message (joined by the caller). */
function convertMessage(message: ChatMessageBody, { where, model, callNames, images }: { where: string; model: string; callNames: Map<string, string>; images: ImageIntake }): ChatMessage | 'system' {
  switch (message.role) {
    case 'system':
    case 'developer':
      return 'system';
    case 'user': {
      const content = userContent(message.content, { where: `${where}.content`, model, images });
      return { role: 'user', content: content.text, ...content.imagesField };
    }
    case 'assistant': {
      const calls = (message.tool_calls ?? []).map((call, j): ToolCall => {
        callNames.set(call.id, call.function.name);
        return { id: call.id, name: call.function.name, input: callArguments(call.function.arguments, `${where}.tool_calls[${j}].function.arguments`) };
      });
      return {
        role: 'assistant',
        content: message.content == null ? '' : textOf(message.content, `${where}.content`, model),
        ...(calls.length > 0 ? { toolCalls: calls } : {}),
        ...(message.reasoning_content ? { reasoning: message.reasoning_content } : {}),
      };
    }
    case 'tool':
      return { role: 'tool', content: textOf(message.content, `${where}.content`, model), callId: message.tool_call_id, name: callNames.get(message.tool_call_id) ?? '' };
    case 'function':
      throw unsupported(`${where}.role`, 'the legacy "function" role is not served; send tool results as role "tool" with tool_call_id');
  }
}

/** Text parts joined; any other part is refused with its place. */
function textOf(content: string | Part[], where: string, model: string): string {
  if (typeof content === 'string') return content;
  return content.map((part, j) => partText(part, `${where}[${j}]`, model)).join('');
}

function partText(part: Part, at: string, model: string): string {
  if (part.type === 'text' && typeof part.text === 'string') return part.text;
  if (part.type === 'text') throw invalidRequest(`${at}.text: Field required`, `${at}.text`);
  if (part.type === 'image_url') throw invalidRequest(`${at}: image_url parts belong to user messages`, `${at}.type`);
  throw unsupported(`${at}.type`, `\`${clip(part.type, 64)}\` content is not supported: the model \`${clip(model)}\` is text-only; send text parts`);
}

/** A user message's text and image_url parts, in order. */
function userContent(content: string | Part[], { where, model, images }: { where: string; model: string; images: ImageIntake }): TurnContent {
  return TurnContent.of(content, { at: (j) => `${where}[${j}]`, isImage: (part) => part.type === 'image_url', image: (part, at) => imageOf(part, at, images), text: (part, at) => partText(part, at, model) });
}

/**
 * An image_url part: `{url, detail}` (or the URL alone, as vLLM takes it); a data URL, or http(s)
 * where the server fetches. `detail: low` is a low-resolution view; `high`, `auto` and none are the
 * model's own processor settings, already its full resolution.
 */
function imageOf(part: Part, at: string, images: ImageIntake) {
  const given = parseField(imageUrlPartSchema, part, [at]).image_url;
  const { url, detail } = typeof given === 'string' ? { url: given, detail: undefined } : given;
  return images.take({ kind: 'url', url }, at, { lowResolution: detail === 'low' });
}

function toolsOf(body: ChatBody): { tools?: ToolSpec[]; toolChoice?: ToolChoice } {
  const tools = (body.tools ?? []).map(({ function: f }): ToolSpec => ({
    name: f.name,
    ...(f.description !== undefined ? { description: f.description } : {}),
    inputSchema: f.parameters ?? { type: 'object', properties: {} },
    ...(f.strict ? { strict: true } : {}),
  }));
  const choice = body.tool_choice;
  if (choice != null && typeof choice === 'object' && choice.type !== 'function') {
    throw unsupported('tool_choice.type', `\`${clip(String(choice.type), 64)}\` is not served; send "none", "auto", "required" or {type: "function", function: {name}}`);
  }
  // A malformed function choice reached the union's catch-all: held to its own form, the field at fault named.
  const named = typeof choice === 'object' && choice !== null ? parseField(functionChoiceSchema, choice, ['tool_choice']).function.name : undefined;
  if (named !== undefined && !tools.some((t) => t.name === named)) throw invalidRequest(`tool_choice.function.name: no tool named \`${clip(named, 64)}\` in \`tools\``, 'tool_choice');
  if (choice != null && choice !== 'none' && tools.length === 0) throw invalidRequest('tool_choice: requires `tools`', 'tool_choice');
  if (tools.length === 0) return {};
  const mode: ToolChoice['mode'] = named !== undefined ? 'tool' : choice === 'required' ? 'any' : choice === 'none' ? 'none' : 'auto';
  return { tools, toolChoice: { mode, ...(named !== undefined ? { name: named } : {}), parallel: body.parallel_tool_calls ?? true } };
}

/** response_format: json_object is any JSON object; json_schema its schema (enforced exactly when strict). */
function outputOf(body: ChatBody): Pick<ChatRequest, 'output'> {
  const format = body.response_format;
  if (!format || format.type === 'text') return {};
  if (format.type === 'json_object') return { output: { schema: { type: 'object', additionalProperties: true }, strict: false } };
  return { output: { schema: format.json_schema.schema ?? { type: 'object', additionalProperties: true }, strict: format.json_schema.strict === true } };
}

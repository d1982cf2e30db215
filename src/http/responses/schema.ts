/**
 * Wire schema of the Responses dialect (POST /v1/responses), as the `openai` SDK, the OpenAI Agents
 * SDK, LangChain's ChatOpenAI (useResponsesApi), the AI SDK's `openai.responses` and the Codex CLI
 * send it. Unknown top-level fields are refused with OpenAI's wording. Input items are read leniently
 * (clients send their earlier output items back as they received them, with every field); what
 * the server cannot serve exactly is accepted here and refused by the converter with a message
 * naming it.
 */
import { z } from 'zod';
import { ignoreEosSchema } from '../shared/ignore-eos.js';

/**
 * An image part of a user message or a function_call_output, as the converter reads it once a part
 * says `input_image`: `image_url` (a data URL, or http(s) the server fetches only where it is allowed
 * to); a `file_id` alone is refused (no Files API here). The bytes are checked by the image intake
 * (src/http/shared/image-intake.ts), not here.
 */
export const inputImagePartSchema = z
  .object({
    type: z.literal('input_image'),
    image_url: z.string().nullish(),
    file_id: z.string().nullish(),
    detail: z.enum(['auto', 'low', 'high', 'original']).nullish(),
  })
  .passthrough();

/** A content part of a message item: text, or another kind the converter names in its refusal. */
const contentPart = z.object({ type: z.string(), text: z.string().optional() }).passthrough();
const messageContent = z.union([z.string(), z.array(contentPart)]);

const messageItem = z
  .object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: messageContent,
    id: z.string().optional(),
  })
  .passthrough();

const functionCallItem = z
  .object({ type: z.literal('function_call'), call_id: z.string(), name: z.string(), arguments: z.string(), namespace: z.string().nullish(), id: z.string().optional() })
  .passthrough();

const functionCallOutputItem = z
  .object({ type: z.literal('function_call_output'), call_id: z.string(), output: z.union([z.string(), z.array(contentPart)]), id: z.string().nullish() })
  .passthrough();

const textList = z.array(z.object({ type: z.string(), text: z.string() }).passthrough());
const reasoningItem = z
  .object({ type: z.literal('reasoning'), id: z.string().optional(), summary: textList.default([]), content: textList.nullish(), encrypted_content: z.string().nullish() })
  .passthrough();

const itemReference = z.object({ type: z.literal('item_reference'), id: z.string() }).passthrough();

/** Any other item type: named in the converter's refusal. */
const otherItem = z.object({ type: z.string() }).passthrough();

export const inputItemSchema = z.union([messageItem, functionCallItem, functionCallOutputItem, reasoningItem, itemReference, otherItem]);

/**
 * The schema of each item type the converter serves: an item of one of these types that does not
 * fit it (it reached the union's catch-all) is refused with the field at fault. A Map: the type is
 * the client's string (`constructor` must find nothing).
 */
export const ITEM_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map<string, z.ZodType>([
  ['message', messageItem],
  ['function_call', functionCallItem],
  ['function_call_output', functionCallOutputItem],
  ['reasoning', reasoningItem],
  ['item_reference', itemReference],
]);
export type InputItem = z.infer<typeof inputItemSchema>;

const functionTool = z
  .object({
    type: z.literal('function'),
    name: z.string().min(1).max(128),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
    strict: z.boolean().nullish(),
  })
  .passthrough();

const namespaceTool = z
  .object({ type: z.literal('namespace'), name: z.string().min(1), description: z.string().nullish(), tools: z.array(z.object({ type: z.string() }).passthrough()) })
  .passthrough();

/** Hosted and client-executed tools: the converter says what becomes of each. */
const otherTool = z.object({ type: z.string() }).passthrough();

export const toolSchema = z.union([functionTool, namespaceTool, otherTool]);
export type FunctionToolBody = z.infer<typeof functionTool>;
export type NamespaceToolBody = z.infer<typeof namespaceTool>;

/** The tool choices a converter holds a choice of their type to (convert.ts), when it reached the union's catch-all. */
export const functionChoiceSchema = z.object({ type: z.literal('function'), name: z.string() }).passthrough();
export const allowedToolsChoiceSchema = z
  .object({ type: z.literal('allowed_tools'), mode: z.enum(['auto', 'required']), tools: z.array(z.object({ type: z.string(), name: z.string().optional() }).passthrough()) })
  .passthrough();

const toolChoiceSchema = z.union([z.enum(['none', 'auto', 'required']), functionChoiceSchema, allowedToolsChoiceSchema, z.object({ type: z.string() }).passthrough()]);

const formatSchema = z.union([
  z.object({ type: z.literal('text') }).strict(),
  z.object({ type: z.literal('json_object') }).strict(),
  z.object({ type: z.literal('json_schema'), name: z.string().optional(), schema: z.record(z.string(), z.unknown()), strict: z.boolean().nullish(), description: z.string().optional() }).strict(),
]);

export const responsesSchema = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(inputItemSchema)]).optional(),
    instructions: z.string().nullish(),
    max_output_tokens: z.number().int().min(1).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    ignore_eos: ignoreEosSchema,
    include: z.array(z.string()).nullish(),
    tools: z.array(toolSchema).nullish(),
    tool_choice: toolChoiceSchema.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    text: z.object({ format: formatSchema.optional(), verbosity: z.enum(['low', 'medium', 'high']).nullish() }).passthrough().nullish(),
    reasoning: z.object({ effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish(), summary: z.enum(['auto', 'concise', 'detailed']).nullish(), generate_summary: z.string().nullish() }).passthrough().nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_obfuscation: z.boolean().optional() }).passthrough().nullish(),
    store: z.boolean().nullish(),
    previous_response_id: z.string().nullish(),
    truncation: z.enum(['auto', 'disabled']).nullish(),
    metadata: z.record(z.string(), z.string()).nullish(),
    user: z.string().optional(),
    safety_identifier: z.string().nullish(),
    service_tier: z.enum(['auto', 'default', 'flex', 'scale', 'priority']).nullish(),
    prompt_cache_key: z.string().nullish(),
    prompt_cache_retention: z.string().nullish(),
    background: z.boolean().nullish(),
    conversation: z.unknown().optional(),
    prompt: z.unknown().optional(),
    // Codex CLI: its own metadata for the service, which has no effect here.
    client_metadata: z.record(z.string(), z.unknown()).nullish(),
    context_management: z.unknown().optional(),
    moderation: z.unknown().optional(),
    prompt_cache_options: z.unknown().optional(),
  })
  .strict();

export type ResponsesBody = z.infer<typeof responsesSchema>;

/** POST /v1/responses/input_tokens: the body a response would be created with, nothing generated. */
export const inputTokensSchema = responsesSchema.omit({ stream: true, stream_options: true, store: true, background: true }).partial({ model: true }).extend({ model: z.string().min(1) });

/** POST /v1/responses/compact: the conversation to compact (the SDK's ResponseCompactParams). */
export const compactSchema = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(inputItemSchema)]).optional(),
    instructions: z.string().nullish(),
    previous_response_id: z.string().nullish(),
    prompt_cache_key: z.string().nullish(),
  })
  .strict();

export const listQuerySchema = z
  .object({
    after: z.string().optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    order: z.enum(['asc', 'desc']).default('desc'),
    include: z.union([z.string(), z.array(z.string())]).optional(),
  })
  .strict();

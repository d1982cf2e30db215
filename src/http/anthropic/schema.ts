/**
 * Wire schemas of the Anthropic Messages dialect (POST /v1/messages and /v1/messages/count_tokens).
 *
 * Unknown top-level fields are rejected with 400 "Extra inputs are not permitted", as the Anthropic
 * API does, so a client never believes a field took effect when it did not. Fields the dialect
 * knows but this server cannot honour (MCP servers, structured output, server tools, images) pass
 * the schema and are refused with a specific message by the converter. Hints that cannot change the
 * text of a reply here (cache_control, service_tier, speed, inference_geo, diagnostics,
 * context_management, output_config.effort) are accepted and have no effect; docs/clients.md lists them.
 */
import { z } from 'zod';

const cacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.string().optional() }).passthrough().nullish();

export const textBlockSchema = z
  .object({ type: z.literal('text'), text: z.string(), cache_control: cacheControl, citations: z.array(z.unknown()).nullish() })
  .passthrough();

/**
 * An image block, as the converter reads it once a block says `image` (in a user message or a
 * tool_result's content): base64 data with its media type, or a URL the server fetches only where it
 * is allowed to (a `file` source: a 400, there is no Files API here). The bytes are checked by the
 * image intake (src/http/shared/image-intake.ts), not here.
 */
export const imageBlockSchema = z
  .object({
    type: z.literal('image'),
    source: z.discriminatedUnion('type', [
      z.object({ type: z.literal('base64'), media_type: z.string().describe('image/png, image/jpeg, image/webp or image/gif; it must be the type of the data (checked from its bytes)'), data: z.string() }).passthrough(),
      z.object({ type: z.literal('url'), url: z.string() }).passthrough(),
      z.object({ type: z.literal('file'), file_id: z.string() }).passthrough(),
    ]),
    cache_control: cacheControl,
  })
  .passthrough();

/** Any content block; the converter decides what a text-only model accepts. */
const contentBlockSchema = z.object({ type: z.string() }).passthrough();

export const messageSchema = z.object({
  // `system` messages inside `messages` (SDK 1.x, Claude Code 2.1+) are folded into the system prompt.
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(contentBlockSchema)]),
});

/** A client tool. A server tool (web search, code execution, ...) has a `type` and is refused by the converter. */
const toolSchema = z
  .object({
    type: z.string().optional(),
    name: z.string().min(1, 'must not be empty').max(128),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().optional(),
    cache_control: cacheControl,
  })
  .passthrough();

const toolChoiceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }).strict(),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }).strict(),
  z.object({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }).strict(),
  z.object({ type: z.literal('none') }).strict(),
]);

const thinkingSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('enabled'), budget_tokens: z.number().int('must be an integer').min(1024, 'must be at least 1024') }).passthrough(),
  z.object({ type: z.literal('adaptive') }).passthrough(),
  z.object({ type: z.literal('disabled') }).passthrough(),
  z.object({ type: z.literal('between_tools') }).passthrough(),
]);

/** Structured outputs: the answer's text is JSON valid against `schema`. */
const outputFormatSchema = z.object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }).strict();

const promptFields = {
  model: z.string().min(1, 'must not be empty'),
  messages: z.array(messageSchema),
  system: z.union([z.string(), z.array(textBlockSchema)]).optional(),
  tools: z.array(toolSchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
  thinking: thinkingSchema.optional(),
  mcp_servers: z.array(z.unknown()).optional(),
  // Accepted with no effect: the server keeps no state to edit between requests.
  context_management: z.unknown().optional(),
  // effort and task_budget are hints with no effect here; format is served by constrained decoding.
  output_config: z.object({ effort: z.string().nullish(), task_budget: z.unknown().optional(), format: outputFormatSchema.nullish() }).strict().optional(),
  // The beta form of output_config.format (structured-outputs-2025-11-13), still sent by some clients.
  output_format: outputFormatSchema.nullish(),
  cache_control: cacheControl,
};

export const countTokensSchema = z.object(promptFields).strict();

export const messagesSchema = z
  .object({
    ...promptFields,
    max_tokens: z.number().int('must be an integer').min(1, 'must be at least 1'),
    stop_sequences: z.array(z.string().min(1, 'stop sequences must not be empty')).max(64).optional(),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().gt(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    metadata: z.object({ user_id: z.string().max(256).nullish() }).strict().optional(),
    service_tier: z.enum(['auto', 'standard_only']).optional(),
    speed: z.enum(['standard', 'fast']).nullish(),
    inference_geo: z.string().nullish(),
    diagnostics: z.object({ previous_message_id: z.string().nullish() }).strict().nullish(),
    container: z.unknown().optional(),
  })
  .strict();

export type MessagesBody = z.infer<typeof messagesSchema>;
export type CountTokensBody = z.infer<typeof countTokensSchema>;

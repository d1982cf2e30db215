/**
 * Wire schema of the OpenAI chat dialect (POST /v1/chat/completions), as the `openai` SDKs, LangChain
 * ChatOpenAI and the AI SDK's openai-compatible provider send it. Unknown top-level fields are refused
 * with OpenAI's own wording ("Unrecognized request argument supplied"). Fields the server cannot serve
 * exactly are accepted by the schema and refused by the converter with a message naming them.
 */
import { z } from 'zod';
import { ignoreEosSchema } from '../shared/ignore-eos.js';

/**
 * An image part of a user message, as the converter reads it once a part says `image_url`: a data URL
 * (data:image/png;base64,...) or an http(s) URL the server fetches only where it is allowed to; the
 * bare URL string vLLM also takes. The bytes are checked by the image intake
 * (src/http/shared/image-intake.ts), not here.
 */
export const imageUrlPartSchema = z
  .object({
    type: z.literal('image_url'),
    image_url: z.union([
      z.object({ url: z.string(), detail: z.enum(['auto', 'low', 'high']).nullish() }).passthrough(),
      z.string(),
    ]),
  })
  .passthrough();

/** A content part: text, or another kind the converter names in its refusal. */
const part = z.object({ type: z.string(), text: z.string().optional() }).passthrough();
const content = z.union([z.string(), z.array(part)]);
const name = z.string().optional();

const toolCall = z
  .object({
    id: z.string(),
    type: z.literal('function'),
    function: z.object({ name: z.string(), arguments: z.string() }).strict(),
  })
  .strict();

const messageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content, name }).strict(),
  z.object({ role: z.literal('developer'), content, name }).strict(),
  z.object({ role: z.literal('user'), content, name }).strict(),
  z
    .object({
      role: z.literal('assistant'),
      content: content.nullish(),
      name,
      tool_calls: z.array(toolCall).nullish(),
      // What llama-server, vLLM and DeepSeek return the reasoning in; sent back by some clients.
      reasoning_content: z.string().nullish(),
      refusal: z.string().nullish(),
      function_call: z.unknown().optional(),
      audio: z.unknown().optional(),
    })
    .strict(),
  z.object({ role: z.literal('tool'), content, tool_call_id: z.string() }).strict(),
  z.object({ role: z.literal('function'), content: z.unknown(), name: z.string() }).strict(),
]);

const toolSchema = z
  .object({
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().min(1).max(64).regex(/^[a-zA-Z0-9_-]+$/, 'must be letters, digits, underscores and dashes'),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
        strict: z.boolean().nullish(),
      })
      .strict(),
  })
  .strict();

/** A tool choice naming a function: a choice of type "function" is held to it (chat-convert.ts). */
export const functionChoiceSchema = z.object({ type: z.literal('function'), function: z.object({ name: z.string() }).strict() }).strict();

const toolChoiceSchema = z.union([z.enum(['none', 'auto', 'required']), functionChoiceSchema, z.object({ type: z.string() }).passthrough()]);

const responseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }).strict(),
  z.object({ type: z.literal('json_object') }).strict(),
  z
    .object({
      type: z.literal('json_schema'),
      json_schema: z
        .object({
          name: z.string().min(1).max(64),
          description: z.string().optional(),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullish(),
        })
        .strict(),
    })
    .strict(),
]);

export const chatSchema = z
  .object({
    model: z.string().min(1, 'must not be empty'),
    messages: z.array(messageSchema).min(1, 'must contain at least one message'),
    max_completion_tokens: z.number().int('must be an integer').min(1, 'must be at least 1').nullish(),
    max_tokens: z.number().int('must be an integer').min(1, 'must be at least 1').nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    // Not OpenAI's: vLLM's and llama-server's extension, which clients of local servers send.
    top_k: z.number().int().min(0).nullish(),
    /** vLLM's extension, as top_k: HF's repetition penalty over prompt and output tokens (1: none). */
    repetition_penalty: z.number().gt(0).max(100).nullish(),
    ignore_eos: ignoreEosSchema,
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
    seed: z.number().int().nullish(),
    n: z.number().int().min(1).max(128).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    logit_bias: z.record(z.string(), z.number()).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(20).nullish(),
    tools: z.array(toolSchema).optional(),
    tool_choice: toolChoiceSchema.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    response_format: responseFormatSchema.nullish(),
    reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().optional(), include_obfuscation: z.boolean().optional() }).strict().nullish(),
    // Accepted with no effect: nothing is stored, there is one tier, the prompt cache is automatic.
    user: z.string().optional(),
    metadata: z.record(z.string(), z.string()).nullish(),
    store: z.boolean().nullish(),
    service_tier: z.string().nullish(),
    prompt_cache_key: z.string().optional(),
    safety_identifier: z.string().optional(),
    verbosity: z.enum(['low', 'medium', 'high']).nullish(),
    // Refused by the converter with a message naming each.
    modalities: z.array(z.string()).nullish(),
    audio: z.unknown().optional(),
    prediction: z.unknown().optional(),
    web_search_options: z.unknown().optional(),
    functions: z.unknown().optional(),
    function_call: z.unknown().optional(),
  })
  .strict();

export type ChatBody = z.infer<typeof chatSchema>;
export type ChatMessageBody = ChatBody['messages'][number];

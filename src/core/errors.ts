/**
 * The errors the inference core raises (the pool, the workers, the service), defined once. Each has
 * a typed code and structured details; its message is a neutral English default with no wire words.
 * The HTTP dialects decide status, error type and wording from the code and the details
 * (src/http/anthropic/errors.ts, src/http/openai/errors.ts), each with a test that maps every code.
 */
import { NO_IMAGE_INPUT, type ModelDescription, type ModelTask } from './model.js';

export const CORE_ERROR_CODES = [
  /** No model by that name or alias. */
  'model_not_found',
  /** A chat model asked for embeddings, or the other way round. details.task: the model's task. */
  'wrong_model_task',
  /**
   * The prompt alone leaves no room for output in the context window. details: limit (context),
   * promptTokens (a lower bound when promptTokensAtLeast: counting stops once the prompt cannot fit).
   */
  'prompt_too_long',
  /** More output tokens asked for than the model's output limit. details: model, limit, requested. */
  'output_limit_exceeded',
  /** One embedding input is longer than the context. details: item, limit, requested. */
  'input_too_long',
  /** A token id outside the vocabulary. details: item, limit (vocabulary size). */
  'token_out_of_vocabulary',
  /** An input that yields no tokens, or no vector. details: item, reason ('no_tokens' | 'no_known_token'). */
  'nothing_to_embed',
  /** A vector width the model cannot give. details: limit (native width), requested, shortenable. */
  'dimensions_unsupported',
  /** The chat template refused the conversation. details.reason: the template's message. */
  'template_rejected',
  /** A prompt with images, to a model that takes none. details: model, reason (why it takes none). */
  'image_input_unsupported',
  /**
   * An image the model's image processor cannot take: bytes that do not decode past their header,
   * or a shape it refuses (an aspect ratio over 200:1). details: model, item (the image's place among
   * the prompt's images, from 0), reason.
   */
  'image_unreadable',
  /**
   * A JSON schema the request requires to hold (an output schema, a strict tool's input schema) uses a
   * feature constrained decoding cannot enforce, or the grammar could not be built from it. details:
   * reason ('output' | 'tool'), item (the tool's index), feature, schemaPath (JSON pointer).
   */
  'schema_unsupported',
  /** The model's queue is full. */
  'overloaded',
  /** The model has no loaded pool. */
  'model_unavailable',
  /** A task ran past its deadline. details: limit (ms), restarted (its worker was stuck and replaced). */
  'timeout',
  /** The worker died while handling the task. */
  'worker_failed',
  /** Anything unexpected: the message is never shown to a client. */
  'internal',
] as const;

export type CoreErrorCode = (typeof CORE_ERROR_CODES)[number];

export interface ErrorDetails {
  model?: string;
  task?: ModelTask;
  /** The bound that was exceeded: context window, vocabulary size, vector width, deadline in ms. */
  limit?: number;
  /** What the request asked for against that bound (tokens, width). */
  requested?: number;
  /** Prompt tokens, where the request also asked for output tokens. */
  promptTokens?: number;
  /** promptTokens is a lower bound: tokenization stopped once the prompt could not fit. */
  promptTokensAtLeast?: boolean;
  /** Index of the input at fault in a request with several. */
  item?: number;
  /** Of a score request (ScoreRequest): whether the input at fault is one of its queries or of its documents. */
  part?: 'query' | 'document';
  reason?: string;
  /** A JSON Schema keyword constrained decoding cannot enforce, and where it is (a JSON pointer). */
  feature?: string;
  schemaPath?: string;
  /** Why the schema at schemaPath cannot be used (no value satisfies it, or it is not a valid schema): a sentence. */
  problem?: string;
  shortenable?: boolean;
  restarted?: boolean;
}

/** The plain shape an error takes to cross a thread boundary. */
export interface CoreErrorData {
  code: CoreErrorCode;
  message: string;
  details: ErrorDetails;
}

export class CoreError extends Error {
  readonly code: CoreErrorCode;
  readonly details: ErrorDetails;

  constructor(code: CoreErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'CoreError';
    this.code = code;
    this.details = details;
  }

  static from(data: CoreErrorData): CoreError {
    return new CoreError(data.code, data.message, data.details);
  }

  toData(): CoreErrorData {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export const isCoreError = (value: unknown): value is CoreError => value instanceof CoreError;

/** Anything thrown below HTTP as a CoreError; an unexpected error becomes `internal` (its text stays in the log). */
export function toCoreError(error: unknown): CoreError {
  return isCoreError(error) ? error : new CoreError('internal', 'The server failed to handle the request.');
}

/** A client's string for a message: at most `max` characters, the rest marked as cut. */
export const clip = (value: string, max = 100) => (value.length <= max ? value : `${value.slice(0, max)}… (${value.length} characters)`);

export const modelNotFound = (model: string) => new CoreError('model_not_found', `The model \`${clip(model)}\` does not exist.`, { model: clip(model) });

export const wrongModelTask = (model: string, task: ModelTask) =>
  new CoreError('wrong_model_task', `The model \`${clip(model)}\` is ${task === 'chat' ? 'a chat model and cannot embed' : task === 'rerank' ? 'a rerank model (a cross-encoder): it only ranks' : 'an embedding model and cannot chat'}.`, { model, task });

/** A prompt with images to a model that takes none; the HTTP edge refuses it first, naming the block (src/http/shared/image-intake.ts). */
export const imageInputUnsupported = (model: ModelDescription) =>
  new CoreError('image_input_unsupported', `The model \`${clip(model.id)}\` takes no image input (${NO_IMAGE_INPUT[model.engine]}).`, { model: model.id, reason: NO_IMAGE_INPUT[model.engine] });

/** The prompt's image `item` (from 0), which the model's image processor cannot take, and why. */
export const imageUnreadable = (model: string, item: number, reason: string) =>
  new CoreError('image_unreadable', `Image ${item + 1} of the prompt cannot be read by the model \`${clip(model)}\`'s image processor: ${reason}.`, { model, item, reason });

export const overloaded = (model: string) => new CoreError('overloaded', `The model \`${model}\` is busy; retry shortly.`, { model });

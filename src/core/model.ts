/**
 * The core's description of a model: what the server says of it and what a request is checked
 * against (its names, task and limits). Where its files are and how they load is the model
 * scanner's record (src/models/registry.ts ModelInfo), which extends this one and never reaches HTTP.
 */
/** rerank: a cross-encoder that scores (query, document) pairs (…ForSequenceClassification with one label). */
export type ModelTask = 'chat' | 'embedding' | 'rerank';

/** What runs a model: onnxruntime (an ONNX export) or llama.cpp (a GGUF file). */
export type ModelEngine = 'onnx' | 'llama';

/**
 * How a chat model was given to write tool calls and thoughts, read from its chat template
 * (src/models/template-features.ts): the call format (`hermes`, `harmony`, `mistral`, `glm`, …,
 * `auto:json` / `auto:tagged` for a form the analysis of the template found, `generic` for the
 * server's own), the reasoning style (`think-tags`, `mistral-think`, `harmony`, `auto-tags`, `none`),
 * and whether the template takes a reasoning level.
 */
export interface ChatFormat {
  toolFormat: string;
  reasoning: string;
  effortLevels: boolean;
}

export interface ModelDescription {
  id: string;
  task: ModelTask;
  engine: ModelEngine;
  contextLength: number;
  /** Most output tokens one request may ask for; at most the context length. */
  maxOutputTokens: number;
  /** Chat models: the chat template has a thinking switch (`enable_thinking`, as Qwen3's). */
  thinking: boolean;
  /** Chat models: the formats their template was given. */
  chatFormat?: ChatFormat;
  /** Chat models: the model takes images in its turns (absent: it takes none). */
  imageInput?: boolean;
  aliases: string[];
  displayName: string;
  /** Unix seconds: when the model's files were last changed. */
  created: number;
}

/** Why a model of each engine takes no image, for the refusal (every model until the vision engine lands: issue 42). */
export const NO_IMAGE_INPUT: Record<ModelEngine, string> = {
  onnx: 'text-only onnx model',
  llama: "text-only llama model: llama.cpp's multimodal path is not in node-llama-cpp 3.21.1",
};

/** The prompt carries an image somewhere. */
export const hasImages = (messages: ReadonlyArray<object>) => messages.some((m) => 'images' in m && Array.isArray(m.images) && m.images.length > 0);

/** The description alone, out of a richer record (a scanned model folder). */
export function describedAs({ id, task, engine, contextLength, maxOutputTokens, thinking, chatFormat, imageInput, aliases, displayName, created }: ModelDescription): ModelDescription {
  return { id, task, engine, contextLength, maxOutputTokens, thinking, ...(chatFormat ? { chatFormat } : {}), ...(imageInput ? { imageInput } : {}), aliases, displayName, created };
}

/**
 * OpenAI embeddings wire body -> internal EmbedRequest, and the result back to the wire.
 */
import type { EmbedInput, EmbedRequest, EmbedResult } from '../../core/types.js';
import { clip } from '../../core/errors.js';
import { HttpError, invalidRequest } from '../shared/errors.js';
import { describeValue } from '../shared/validation.js';
import { MAX_INPUTS, type EmbeddingsBody } from './schema.js';

export type EncodingFormat = 'float' | 'base64';

export interface ConvertedEmbeddings {
  request: EmbedRequest;
  encodingFormat: EncodingFormat;
}

const isTokenArray = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0);

export function toEmbedRequest(body: EmbeddingsBody, pathModel: string | undefined): ConvertedEmbeddings {
  if (pathModel !== undefined && body.model !== undefined && body.model !== pathModel) {
    throw new HttpError('model_mismatch', `The model in the path (\`${clip(pathModel)}\`) and the model in the body (\`${clip(body.model)}\`) differ; send one model.`, 'model');
  }
  const model = pathModel ?? body.model;
  if (model === undefined) throw invalidRequest('model: Field required', 'model');
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw invalidRequest(`encoding_format: expected "float" or "base64", got ${describeValue(format)}.`, 'encoding_format');
  }
  return { request: { model, inputs: toInputs(body.input), dimensions: body.dimensions }, encodingFormat: format };
}

/** string | string[] | number[] | number[][] -> a list of inputs, each text or token ids. */
function toInputs(input: unknown): EmbedInput[] {
  if (input === undefined) throw invalidRequest('input: Field required', 'input');
  if (typeof input === 'string') {
    if (input === '') throw invalidRequest('input: must not be an empty string', 'input');
    return [input];
  }
  if (!Array.isArray(input)) throw invalidRequest(`input: expected a string, an array of strings, an array of token ids, or an array of token-id arrays; got ${describeValue(input)}`, 'input');
  if (input.length === 0) throw invalidRequest('input: must not be empty', 'input');
  if (isTokenArray(input)) return [input];
  if (input.length > MAX_INPUTS) throw invalidRequest(`input: at most ${MAX_INPUTS} items per request, got ${input.length}`, 'input');
  return input.map((item, i) => {
    if (typeof item === 'string') {
      if (item === '') throw invalidRequest(`input[${i}]: must not be an empty string`, 'input');
      return item;
    }
    if (isTokenArray(item)) return item;
    throw invalidRequest(`input[${i}]: expected a non-empty string or a non-empty array of non-negative integer token ids, got ${describeValue(item)}`, 'input');
  });
}

export function renderEmbeddings(model: string, result: EmbedResult, format: EncodingFormat) {
  return {
    object: 'list' as const,
    data: result.vectors.map((vector, index) => ({
      object: 'embedding' as const,
      index,
      embedding: format === 'base64' ? toBase64(vector) : Array.from(vector),
    })),
    model,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}

/** Little-endian float32 bytes, base64: what openai-python decodes with numpy.frombuffer(dtype="float32"). */
function toBase64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}

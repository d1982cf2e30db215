/**
 * `ignore_eos`, the benchmark extension vLLM, SGLang and llama-server accept on their OpenAI routes
 * (their benchmark clients send it for a fixed output length): the model's end-of-sequence tokens do
 * not end the answer, which runs to its token limit; stop strings, a grammar's end (a schema, a
 * forced tool call) and a stop after a tool call still end it. Shared by the chat completions and
 * Responses schemas; the core reads it as ChatRequest.ignoreEos.
 */
import { z } from 'zod';

export const ignoreEosSchema = z
  .boolean()
  .nullish()
  .describe('Benchmark extension (vLLM, SGLang, llama-server): end-of-sequence tokens do not end the answer, which runs to its token limit; stop strings and a grammar\'s end (a schema, a forced tool call) still end it.');

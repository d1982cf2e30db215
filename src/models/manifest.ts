/**
 * The optional `manifest.json` beside a model's files. Every field is optional: what is absent is
 * read from the Hugging Face files (config.json, tokenizer_config.json, the onnx/ folder).
 */
import { z } from 'zod';

/** transformers.js dtype names and the file-name suffix each selects (onnx/model{suffix}.onnx). */
export const DTYPE_SUFFIX = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
} as const;

export type Dtype = keyof typeof DTYPE_SUFFIX;
export const DTYPES = Object.keys(DTYPE_SUFFIX) as Dtype[];

/** Model ids become path segments and URL segments: keep them to a safe alphabet. */
export const MODEL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const manifestSchema = z
  .object({
    id: z.string().regex(MODEL_ID_PATTERN, 'letters, digits, ".", "_", ":", "-"; not starting with a dot').optional(),
    task: z.enum(['chat', 'embedding', 'rerank']).optional(),
    dtype: z.enum(DTYPES as [Dtype, ...Dtype[]]).optional(),
    contextLength: z.number().int().positive().optional(),
    /** Most output tokens one request may ask for (Anthropic's per-model max_tokens limit); default: the context length. */
    maxOutputTokens: z.number().int().positive().optional(),
    /** GGUF chat models: this model's KV budget in bytes (the kvBudgetBytes setting, for this model). */
    kvBudgetBytes: z.number().int().min(0).optional(),
    /** Worker threads for this model; each holds its own copy of the weights. */
    poolSize: z.number().int().positive().max(64).optional(),
    /** Embedding models: how token vectors become one vector. */
    pooling: z.enum(['mean', 'cls']).optional(),
    normalize: z.boolean().optional(),
    /** Text put before every string input of an embedding model that expects one (e.g. "query: " for E5). */
    prefix: z.string().optional(),
    /** Embedding models trained so that a prefix of the vector is itself an embedding (OpenAI `dimensions`). */
    matryoshka: z.boolean().optional(),
    /** Other names clients may use for this model. */
    aliases: z.array(z.string().regex(MODEL_ID_PATTERN)).optional(),
    displayName: z.string().optional(),
    /**
     * The weights are random (a model built for tests, as the bundled cross-encoder): it runs, but its
     * outputs mean nothing, so a request that names no model is given it only when no other model can
     * serve (src/inference/ranking.ts).
     */
    randomWeights: z.boolean().optional(),
  })
  .passthrough();

export type ModelManifest = z.infer<typeof manifestSchema>;

/**
 * Wire schema of the OpenAI embeddings dialect (POST /v1/embeddings and the legacy
 * POST /v1/engines/{model}/embeddings). `input` and `encoding_format` are checked by the converter,
 * which can word their errors better than a union schema.
 */
import { z } from 'zod';

export const MAX_INPUTS = 2048;

export const embeddingsSchema = z
  .object({
    model: z.string().min(1, 'must not be empty').optional(),
    input: z.unknown(),
    encoding_format: z.unknown().optional(),
    dimensions: z.number().int('must be an integer').min(1, 'must be at least 1').optional(),
    user: z.string().optional(),
  })
  .strict();

export type EmbeddingsBody = z.infer<typeof embeddingsSchema>;

export const unknownKeysMessage = (keys: string[]) => `Unrecognized request argument supplied: ${keys.join(', ')}`;

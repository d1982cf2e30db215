/** llama-server's /tokenize body (`content`); its /detokenize is the shared one (../schema.ts), with no model. */
import { z } from 'zod';
import { model } from '../schema.js';

export const llamaTokenizeSchema = z
  .object({ model, content: z.string(), add_special: z.boolean().nullish(), with_pieces: z.boolean().nullish(), parse_special: z.boolean().nullish() })
  .loose();

/**
 * The Responses dialect answers errors as the rest of OpenAI's API does: the OpenAI envelope
 * (`{"error":{"message","type","param","code"}}`) from the OpenAI dialect's table, on its own paths.
 */
import { OPENAI_ERRORS, openAiDialect, openAiPaths, schemaUnsupported } from '../openai/errors.js';
import type { PathDialect } from '../shared/connection.js';

/** OpenAI's table, with a schema's fields named as Responses names them (text.format, a function tool's parameters). */
export const responsesErrors = openAiDialect({
  ...OPENAI_ERRORS,
  schema_unsupported: schemaUnsupported({ output: 'text.format', schema: 'text.format.schema', tool: (item) => `tools[${item}].parameters` }),
});

/** The envelope of answers given before routing (shared/connection.ts) on this dialect's paths. */
export const responsesPaths: PathDialect = { prefixes: ['/v1/responses'], envelope: openAiPaths.envelope };

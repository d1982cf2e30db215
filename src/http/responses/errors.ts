/**
 * The Responses dialect answers errors as the rest of OpenAI's API does: the OpenAI envelope
 * (`{"error":{"message","type","param","code"}}`) from the OpenAI dialect's table, on its own paths.
 */
import { openAiPaths } from '../openai/errors.js';
import type { PathDialect } from '../shared/connection.js';

export { openAiErrors as responsesErrors } from '../openai/errors.js';

/** The envelope of answers given before routing (shared/connection.ts) on this dialect's paths. */
export const responsesPaths: PathDialect = { prefixes: ['/v1/responses'], envelope: openAiPaths.envelope };

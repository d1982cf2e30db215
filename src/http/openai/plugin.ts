/**
 * The OpenAI embeddings dialect: POST /v1/embeddings and POST /v1/engines/{model}/embeddings, one
 * handler. Its own error handler renders every failure in OpenAI's envelope.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { InferenceService } from '../../core/types.js';
import { requireKey, type KeyChecker } from '../shared/auth.js';
import { sendError } from '../shared/errors.js';
import { openAiErrors } from './errors.js';
import { parseBody } from '../shared/validation.js';
import { renderEmbeddings, toEmbedRequest } from './convert.js';
import { embeddingsSchema, unknownKeysMessage } from './schema.js';

export interface OpenAiPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
}

export const openAiPlugin: FastifyPluginAsync<OpenAiPluginOptions> = async (app, { inference, checkKey }) => {
  app.setErrorHandler((error, request, reply) => sendError(openAiErrors, error, request, reply));

  app.addHook(
    'onRequest',
    requireKey({ checkKey, allowXApiKey: false, missing: "You didn't provide an API key. Send it as `Authorization: Bearer KEY`.", invalid: 'Incorrect API key provided.' }),
  );

  const handler = async (request: FastifyRequest<{ Params: { model?: string } }>) => {
    const body = parseBody(embeddingsSchema, request.body, { unknownKeys: unknownKeysMessage });
    const { request: embedRequest, encodingFormat } = toEmbedRequest(body, request.params.model);
    const result = await inference.embed(embedRequest);
    return renderEmbeddings(embedRequest.model, result, encodingFormat);
  };
  app.post('/v1/embeddings', handler);
  app.post('/v1/engines/:model/embeddings', handler);
};

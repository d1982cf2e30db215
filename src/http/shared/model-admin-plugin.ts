/**
 * Loading and unloading a model on request (issue 31: the playground's Load and Unload buttons), in
 * llama-server's router-mode spelling: `POST /models/load` and `POST /models/unload` with
 * `{"model": "<id>"}`, also served under `/v1/`. Behind the same API keys as every /v1 route; errors
 * in the envelope app.ts gives (OpenAI's, as llama-server answers). Served unless the modelAdmin
 * setting turns it off.
 */
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { InferenceService, ModelStatus } from '../../core/types.js';
import { requireKey, type KeyChecker } from './auth.js';
import { HttpError, invalidRequest, sendError, type ErrorDialect } from './errors.js';
import { parseBody } from './validation.js';

/** What both routes take: the model by id or alias (llama-server sends only this field). */
export const modelAdminSchema = z.object({
  model: z.string().min(1).max(256).describe('The model to load or unload: its id or an alias'),
});

/** The service's methods for it (LocalInferenceService has them; a service without them answers 400). */
export interface ModelAdmin {
  loadModel(name: string): Promise<ModelStatus>;
  unloadModel(name: string): Promise<{ busy: boolean; status: ModelStatus }>;
}

const hasAdmin = (inference: InferenceService): inference is InferenceService & ModelAdmin =>
  typeof (inference as Partial<ModelAdmin>).loadModel === 'function' && typeof (inference as Partial<ModelAdmin>).unloadModel === 'function';

export interface ModelAdminPluginOptions {
  inference: InferenceService;
  checkKey: KeyChecker;
  /** The envelope errors are answered in. */
  errors: ErrorDialect;
}

export const MODEL_LOAD_PATHS = ['/models/load', '/v1/models/load'] as const;
export const MODEL_UNLOAD_PATHS = ['/models/unload', '/v1/models/unload'] as const;

/** The answer of both routes: success, and where the model now is. */
function answer(status: ModelStatus) {
  const state = status.state ?? 'loaded';
  return {
    success: true as const,
    model: status.id,
    state,
    loaded: state === 'loaded',
    expires_at: status.expiresAt === undefined ? null : new Date(status.expiresAt).toISOString(),
  };
}

export const modelAdminPlugin: FastifyPluginAsync<ModelAdminPluginOptions> = async (app, { inference, checkKey, errors }) => {
  app.setErrorHandler((error, request, reply) => sendError(errors, error, request, reply));
  app.addHook('onRequest', requireKey({ checkKey, allowXApiKey: true, missing: 'An API key is required.', invalid: 'Incorrect API key provided.' }));

  const admin = () => {
    if (!hasAdmin(inference)) throw new HttpError('unsupported_feature', 'This server cannot load or unload models on request.');
    return inference;
  };

  for (const url of MODEL_LOAD_PATHS) {
    app.post(url, async (request) => {
      const { model } = parseBody(modelAdminSchema, request.body);
      return answer(await admin().loadModel(model));
    });
  }
  for (const url of MODEL_UNLOAD_PATHS) {
    app.post(url, async (request) => {
      const { model } = parseBody(modelAdminSchema, request.body);
      const { busy, status } = await admin().unloadModel(model);
      // A model in use is not taken from under its requests (there is no conflict code in the
      // error tables: a 400 that says why and what to do).
      if (busy) throw invalidRequest(`The model \`${status.id}\` is in use by ${status.inflight ?? 'some'} request(s); unload it once they have finished.`, 'model');
      return answer(status);
    });
  }
};

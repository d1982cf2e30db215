/**
 * GET /openapi.json: the API reference as an OpenAPI 3.1 document (./openapi.ts). It is built on
 * the first request, when every plugin has registered its routes (app.ts records them with
 * collectRoutes), and kept. The page that reads it (/docs) is served with the playground (src/web).
 */
import type { FastifyPluginAsync } from 'fastify';
import { openApiDocument } from './openapi.js';

export const referencePlugin: FastifyPluginAsync = async (app) => {
  let document: string | undefined;
  app.get('/openapi.json', async (_request, reply) => {
    document ??= JSON.stringify(openApiDocument(app.registeredRoutes ?? []));
    reply.header('cache-control', 'no-cache');
    return reply.type('application/json; charset=utf-8').send(document);
  });
};

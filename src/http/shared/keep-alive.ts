/**
 * The per-request keep-alive, as Ollama's `keep_alive` works: how long the model stays loaded after
 * this request. Neither dialect's body has such a field, so it is a header: `X-Model-Keep-Alive: 10m`
 * (also `30s`, `0` to unload right after, `-1` to keep it until asked).
 */
import type { FastifyRequest } from 'fastify';
import { parseDuration } from '../../core/duration.js';
import { invalidRequest } from './errors.js';

export const KEEP_ALIVE_HEADER = 'x-model-keep-alive';

export function keepAliveOf(request: FastifyRequest): { keepAliveMs?: number } {
  const value = request.headers[KEEP_ALIVE_HEADER];
  if (value === undefined) return {};
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  if (ms === undefined) throw invalidRequest(`${KEEP_ALIVE_HEADER}: expected a duration such as 5m, 30s, 0 or -1, got ${JSON.stringify(String(value)).slice(0, 40)}`);
  return { keepAliveMs: ms };
}

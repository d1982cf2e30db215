/**
 * Which dialect's envelope a route every dialect shares (models, not found, framework errors)
 * answers in. Each dialect states its own claim (src/http/<dialect>/errors.ts); app.ts lists them
 * and names the fallback. This module names no dialect.
 */
import type { FastifyRequest } from 'fastify';
import type { ErrorDialect } from './errors.js';

/** A dialect's claim on a request to a shared route: its paths, or headers only its clients send. */
export interface DialectClaim {
  errors: ErrorDialect;
  claims(request: FastifyRequest): boolean;
}

export type DialectOf = (request: FastifyRequest) => ErrorDialect;

/** The dialect of the first claim that takes the request, else the fallback. */
export function dialectChooser(claims: readonly DialectClaim[], fallback: ErrorDialect): DialectOf {
  return (request) => claims.find((claim) => claim.claims(request))?.errors ?? fallback;
}

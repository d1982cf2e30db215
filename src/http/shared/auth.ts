/**
 * API key checks. Keys are compared as SHA-256 digests with timingSafeEqual, against every
 * configured key, so the time taken says nothing about how much of a key matched or which one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { HttpError } from './errors.js';

export type KeyChecker = (presented: string | undefined) => boolean;

const digest = (value: string) => createHash('sha256').update(value).digest();

export function makeKeyChecker(keys: readonly string[]): KeyChecker {
  const digests = keys.map(digest);
  return (presented) => {
    if (digests.length === 0) return true;
    if (!presented) return false;
    const candidate = digest(presented);
    let ok = false;
    for (const key of digests) ok = timingSafeEqual(candidate, key) || ok;
    return ok;
  };
}

/** The key from `Authorization: Bearer KEY`, or (when allowed) `x-api-key: KEY`. */
export function presentedKey(headers: IncomingHttpHeaders, allowXApiKey: boolean): string | undefined {
  const xApiKey = headers['x-api-key'];
  if (allowXApiKey && typeof xApiKey === 'string' && xApiKey !== '') return xApiKey;
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (match) return match[1];
  }
  return undefined;
}

export interface KeyHookOptions {
  checkKey: KeyChecker;
  /** Accept `x-api-key` besides `Authorization: Bearer` (the Anthropic dialect). */
  allowXApiKey: boolean;
  /** The dialect's wording for a missing and for a wrong key. */
  missing: string;
  invalid: string;
}

/**
 * An onRequest hook that refuses requests without a valid key. onRequest runs before the body is
 * read, so unauthenticated clients cost no parsing.
 */
export function requireKey(options: KeyHookOptions) {
  return async (request: FastifyRequest): Promise<void> => {
    const key = presentedKey(request.headers, options.allowXApiKey);
    if (!options.checkKey(key)) {
      throw new HttpError('invalid_api_key', key ? options.invalid : options.missing);
    }
  };
}

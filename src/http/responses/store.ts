/**
 * Stored responses (`store`, default true, as OpenAI and LM Studio keep them): each response with
 * the input items it was made from, so `previous_response_id` continues a conversation,
 * `item_reference` names an earlier item, and the response can be read back, listed and deleted.
 *
 * Bounded by count and by age (configuration: responsesStoreEntries, responsesStoreMaxAgeMs): the
 * oldest go first. Kept in this process's memory only: a restart forgets them all, and each replica
 * behind a balancer has its own (deploy/nginx.conf keeps a conversation on one replica).
 * A response is readable only with the API key that created it (its owner); without keys
 * configured, every client is the same owner.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { presentedKey, type KeyChecker } from '../shared/auth.js';
import type { InputItem } from './schema.js';

/**
 * Whose stored responses a request may read: a digest of its API key. Without keys configured (the
 * checker lets a request with no key in) every client is the same owner, whatever token it presents:
 * the SDK's placeholder key and a plain curl read the same responses.
 */
export function ownerOf(checkKey: KeyChecker): (request: FastifyRequest) => string {
  const everyone = checkKey(undefined);
  return (request) => createHash('sha256').update(everyone ? '' : (presentedKey(request.headers, false) ?? '')).digest('hex');
}

export interface StoredResponse {
  owner: string;
  /** The response object as it was answered. */
  response: { id: string; output: unknown[] } & Record<string, unknown>;
  /** The items the response was made from, with ids: the previous response's, then this request's own. */
  input: Array<InputItem & { id: string }>;
  storedAt: number;
}

export class ResponseStore {
  private readonly responses = new Map<string, StoredResponse>();

  constructor(private readonly limits: { entries: number; maxAgeMs: number }, private readonly now: () => number = Date.now) {}

  put(entry: Omit<StoredResponse, 'storedAt'>): void {
    if (this.limits.entries === 0) return;
    this.responses.delete(entry.response.id);
    this.responses.set(entry.response.id, { ...entry, storedAt: this.now() });
    this.prune();
  }

  /** The response, for its owner; undefined when absent, expired or another key's. */
  get(id: string, owner: string): StoredResponse | undefined {
    this.prune();
    const entry = this.responses.get(id);
    return entry && entry.owner === owner ? entry : undefined;
  }

  delete(id: string, owner: string): boolean {
    return this.get(id, owner) !== undefined && this.responses.delete(id);
  }

  /** An item of a stored response of this owner (input or output), by its id. */
  item(id: string, owner: string): InputItem | undefined {
    this.prune();
    for (const entry of [...this.responses.values()].reverse()) {
      if (entry.owner !== owner) continue;
      const found = entry.input.find((item) => item.id === id) ?? (entry.response.output as Array<InputItem & { id?: string }>).find((item) => item.id === id);
      if (found) return found;
    }
    return undefined;
  }

  private prune(): void {
    const oldest = this.now() - this.limits.maxAgeMs;
    for (const [id, entry] of this.responses) {
      if (this.responses.size > this.limits.entries || (this.limits.maxAgeMs > 0 && entry.storedAt < oldest)) this.responses.delete(id);
      else break;
    }
  }
}

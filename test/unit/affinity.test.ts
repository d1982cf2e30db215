/**
 * Prefix affinity (src/pool/affinity.ts): the key follows the prompt's start (system prompt and
 * tools), the preferred worker is stable and spreads keys, and a saturated or dying preferred worker
 * gives way to the least busy one.
 */
import { describe, expect, it } from 'vitest';
import { AFFINITY, affinityBalancer, affinityKey, preferredWorker } from '../../src/pool/affinity.js';
import type { ChatPrompt } from '../../src/core/types.js';

const prompt = (system: string | undefined, user: string): ChatPrompt => ({ model: 'm', ...(system !== undefined ? { system } : {}), messages: [{ role: 'user', content: user }] });
const worker = (id: number, currentUsage = 0) => ({ id, currentUsage, terminating: false, destroyed: false });
const task = (key: number) => ({ [AFFINITY]: { affinity: key } });

describe('affinityKey', () => {
  it('is the system prompt and tools, whatever the turns after them; the first message without either', () => {
    expect(affinityKey(prompt('You are an agent.', 'turn 1'))).toBe(affinityKey(prompt('You are an agent.', 'turn 7')));
    expect(affinityKey(prompt('You are an agent.', 'x'))).not.toBe(affinityKey(prompt('You are another agent.', 'x')));
    const tools = { ...prompt('S', 'x'), tools: [{ name: 'read', inputSchema: {} }] } as ChatPrompt;
    expect(affinityKey(tools)).not.toBe(affinityKey(prompt('S', 'x')));
    expect(affinityKey(prompt(undefined, 'hello'))).not.toBe(affinityKey(prompt(undefined, 'bye')));
    // prompt_cache_key: the client's name for a conversation wins over the shared system prompt.
    expect(affinityKey({ ...prompt('You are an agent.', 'x'), cacheKey: 'session-a' })).toBe(affinityKey({ ...prompt('Another prompt.', 'y'), cacheKey: 'session-a' }));
    expect(affinityKey({ ...prompt('You are an agent.', 'x'), cacheKey: 'session-a' })).not.toBe(affinityKey({ ...prompt('You are an agent.', 'x'), cacheKey: 'session-b' }));
  });

  it('keys a first message\'s image by its hash and view: the same image is the same key, another of the same size is not', () => {
    const image = (hash: string, fill: number) => ({ mediaType: 'image/png' as const, bytes: new Uint8Array(64).fill(fill), width: 8, height: 8, hash, offset: 0 });
    const withImage = (hash: string, fill: number): ChatPrompt => ({ model: 'm', messages: [{ role: 'user', content: 'look', images: [image(hash, fill)] }] });
    expect(affinityKey(withImage('a'.repeat(64), 1))).toBe(affinityKey(withImage('a'.repeat(64), 1)));
    expect(affinityKey(withImage('a'.repeat(64), 1))).not.toBe(affinityKey(withImage('b'.repeat(64), 2)));
    // The key is the hash's: the bytes themselves are not read (they are what the hash is of).
    expect(affinityKey(withImage('a'.repeat(64), 1))).toBe(affinityKey(withImage('a'.repeat(64), 9)));
    // The same bytes seen at low resolution (detail: low) are another key.
    const low: ChatPrompt = { model: 'm', messages: [{ role: 'user', content: 'look', images: [{ ...image('a'.repeat(64), 1), lowResolution: true }] }] };
    expect(affinityKey(low)).not.toBe(affinityKey(withImage('a'.repeat(64), 1)));
    expect(affinityKey(low)).toBe(affinityKey(structuredClone(low)));
  });
});

describe('affinityBalancer', () => {
  it('sends a key to the same worker every time, and different keys to different workers', () => {
    const balance = affinityBalancer(4);
    const workers = [worker(3), worker(5), worker(9)];
    const chosen = Array.from({ length: 32 }, (_, k) => balance(task(k * 7919), workers)!.id);
    expect(Array.from({ length: 32 }, (_, k) => balance(task(k * 7919), workers)!.id)).toEqual(chosen);
    expect(new Set(chosen).size).toBe(3);
    expect(chosen.every((id, k) => id === preferredWorker(k * 7919, [3, 5, 9]))).toBe(true);
  });

  it('falls back to the least busy worker when the preferred one is full or going away; null when all are full', () => {
    const balance = affinityBalancer(2);
    const key = 12345;
    const preferred = preferredWorker(key, [1, 2, 3])!;
    const others = [1, 2, 3].filter((id) => id !== preferred);
    const busy = (usage: Record<number, number>) => [1, 2, 3].map((id) => worker(id, usage[id] ?? 0));
    expect(balance(task(key), busy({ [preferred]: 1, [others[0]!]: 0 }))!.id).toBe(preferred);
    expect(balance(task(key), busy({ [preferred]: 2, [others[0]!]: 1 }))!.id).toBe(others[1]);
    const dying = busy({}).map((w) => (w.id === preferred ? { ...w, terminating: true } : w));
    expect(balance(task(key), dying)!.id).not.toBe(preferred);
    expect(balance(task(key), busy({ 1: 2, 2: 2, 3: 2 }))).toBeNull();
    expect(balance({}, busy({ 1: 1, 2: 0, 3: 1 }))!.id).toBe(2);
  });
});

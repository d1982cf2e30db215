/**
 * Workers log through the server's logger: a worker's line arrives with the model id and the
 * worker's thread id, whatever thread wrote it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/log.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealService, type RealService } from '../helpers/real-service.js';

const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
const capture = (level: string) => (fields: object, msg: string) => lines.push({ level, fields: fields as Record<string, unknown>, msg });
const logger: Logger = { error: capture('error'), warn: capture('warn'), info: capture('info'), debug: capture('debug') };

let service: RealService;
beforeAll(async () => {
  service = await startRealService({ only: [CHAT_MODEL], faults: true, logger });
});
afterAll(() => service?.close());

describe('worker logs', () => {
  it('the load is logged with the model id', () => {
    expect(lines).toContainEqual(expect.objectContaining({ level: 'info', msg: `model ${CHAT_MODEL} loaded`, fields: expect.objectContaining({ model: CHAT_MODEL }) }));
  });

  it('an unexpected error in a worker reaches the main logger with the model and thread ids and the error', async () => {
    const request = { model: CHAT_MODEL, maxTokens: 2, sampling: { temperature: 0 }, stopStrings: [], messages: [{ role: 'user' as const, content: '[fault:throw] hi' }] };
    await expect(service.chat(request)).rejects.toMatchObject({ code: 'internal' });
    for (let i = 0; i < 100 && !lines.some((l) => l.level === 'error'); i++) await new Promise((r) => setTimeout(r, 10));
    const line = lines.find((l) => l.level === 'error');
    expect(line).toMatchObject({ msg: 'generate task failed', fields: { model: CHAT_MODEL, worker: expect.any(Number), err: { message: 'injected fault' } } });
  });
});

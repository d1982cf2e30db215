import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { FakeInference } from './fake-inference.js';

export const ANTHROPIC_HEADERS = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
export const JSON_HEADERS = { 'content-type': 'application/json' };

export async function fakeApp(options: { apiKeys?: string[]; bodyLimit?: number; pingIntervalMs?: number } = {}): Promise<{ app: FastifyInstance; fake: FakeInference }> {
  const fake = new FakeInference();
  const app = await buildApp({
    config: { apiKeys: options.apiKeys ?? [], bodyLimit: options.bodyLimit ?? 1024 * 1024, pingIntervalMs: options.pingIntervalMs ?? 60_000 },
    inference: fake,
  });
  return { app, fake };
}

/** Parses an SSE body into [event, data] pairs, checking each frame's event name matches data.type. */
export function parseSse(body: string): Array<{ event: string; data: Record<string, any> }> {
  return body
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const lines = frame.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))!.slice(7);
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) as Record<string, any>;
      return { event, data };
    });
}

/**
 * What the disk prompt-cache model tests share (test/model/*prompt-cache-disk*.test.ts): real services
 * on a chat model with the cache's folder set, one greedy conversation, and the files.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChatRequest } from '../../src/core/types.js';
import type { Logger } from '../../src/core/log.js';
import { MODELS_DIR, ONNX_CHAT_MODEL } from './paths.js';
import { startRealService, type RealService } from './real-service.js';

const SYSTEM = 'You are a coding agent. Tools: read_file(path), write_file(path, text), run(command). Answer briefly and call tools when needed. '.repeat(4);
const MAX_TOKENS = 8;
/** Low enough for the bundled model's prompts (~130 tokens) to be written. */
export const MIN_TOKENS = 32;

export type Turn = { role: 'user' | 'assistant'; content: string };
export const FIRST: Turn[] = [{ role: 'user', content: 'List the files under src and say which one to edit.' }];
export const secondTurn = (reply: string): Turn[] => [...FIRST, { role: 'assistant', content: reply || '.' }, { role: 'user', content: 'Now open it and fix the bug.' }];

/** Warnings the services log (the workers' included), for the tests to read. */
export const warnings: string[] = [];
const logger: Logger = { error: () => {}, info: () => {}, debug: () => {}, warn: (_fields, msg) => void warnings.push(msg) };

/** A service on the chat model (the bundled ONNX one unless named); with `cacheDir`, its prompt cache on disk there. */
export function serve(options: { cacheDir?: string; modelsDir?: string; model?: string } = {}): Promise<RealService> {
  return startRealService({
    modelsDir: options.modelsDir ?? MODELS_DIR,
    only: [options.model ?? ONNX_CHAT_MODEL],
    logger,
    engine: options.cacheDir ? { promptCacheDir: options.cacheDir, promptCacheMinTokens: MIN_TOKENS } : {},
  });
}

/** One greedy turn: its text and the prompt tokens read from a cache. */
export async function chat(service: RealService, messages: Turn[], model = ONNX_CHAT_MODEL): Promise<{ text: string; reads: number }> {
  const request: ChatRequest = { model, system: SYSTEM, messages, maxTokens: MAX_TOKENS, sampling: { temperature: 0 }, stopStrings: [] };
  const result = await service.chat(request);
  return { text: result.text, reads: result.cachedInputTokens ?? 0 };
}

/** The prompt-cache files under `dir`. */
export const cacheFiles = (dir: string): string[] => (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.lspc')).map((f) => path.join(dir, f)) : []);

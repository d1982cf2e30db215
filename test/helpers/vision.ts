/**
 * What the vision engine tests share (test/model/vision-engine.test.ts for the Qwen-VL model,
 * vision-gemma3.test.ts for the Gemma 3 one): the fixture images and the engine's greedy tokens.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { ChatImage } from '../../src/core/types.js';
import type { SequenceEngine, SequenceImage } from '../../src/engines/sequence.js';

/** A width x height PNG; `shade` changes its pixels, not its size. */
export async function png(width: number, height: number, shade = 128): Promise<ChatImage> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) raw.set([(i % width) % 256, Math.floor(i / width) % 256, shade], i * 3);
  const bytes = new Uint8Array(await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer());
  return { mediaType: 'image/png', bytes, width, height, hash: createHash('sha256').update(bytes).digest('hex'), offset: 0 };
}

export const GREEDY = { doSample: false, temperature: 1, topK: 0, topP: 1 };

/** The engine's greedy tokens for a rendered prompt (stopping at the model's end, as generate does), and the prefix it read from its cache. */
export async function greedyTokens(engine: SequenceEngine, eosTokenIds: readonly number[], ids: number[], images: SequenceImage[] | undefined, maxTokens: number): Promise<{ tokens: number[]; cached: number }> {
  const tokens: number[] = [];
  const prefix = await engine.lookup(ids, maxTokens, images ? { images } : {});
  await engine.run({ promptIds: ids, ...(images ? { images } : {}), maxTokens, sampling: GREEDY, cancelled: () => false, onToken: (id) => (tokens.push(id), eosTokenIds.includes(id)) }, prefix);
  return { tokens, cached: prefix?.length ?? 0 };
}

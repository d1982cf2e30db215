/**
 * The bundled models this checkout builds (scripts/builders/bundled/index.ts), each with its builder
 * version, and the stamp a built folder carries: manifest.json's `"bundled": { "version": N }`.
 * The one place both sides read: the builder stamps each folder it writes and rebuilds one whose
 * stamp differs; the server's start-up check (bundled-check.ts) compares the stamps without
 * importing or running any build code (scripts/ may import src/, never the reverse).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Bump a model's version when its builder's output changes, so existing folders count as stale and are rebuilt. */
export const BUNDLED_MODEL_VERSIONS = {
  // 2: single letters and numbers have rows; [UNK] has a fixed placeholder row instead of zeros.
  'glove-sif-100d': 2,
  // 3: 32,768 positions (was 4096).
  'tiny-qwen3-random': 3,
  // 1: BERT-shaped cross-encoder, hidden 32, 2 layers, 128 positions (scripts/builders/bundled/test-reranker.ts).
  // 2: its manifest says randomWeights (a rank request that names no model gets it last).
  'tiny-bert-reranker-random': 2,
  // 1: Qwen3-VL-shaped split export (embed_tokens, vision_encoder, decoder_model_merged), hidden 32, 2 layers (scripts/builders/bundled/vision-model.ts).
  'tiny-qwen3-vl-random': 1,
  // 1: Gemma 3-shaped split export on Gemma 3's tokenizer, 64x64 images of 16 soft tokens, hidden 32, 2 layers (scripts/builders/bundled/gemma3-vision-model.ts).
  'tiny-gemma3-vl-random': 1,
} as const satisfies Record<string, number>;

export type BundledModelId = keyof typeof BUNDLED_MODEL_VERSIONS;

/** What the builder writes into a built folder's manifest.json under `bundled`. */
export interface BundledStamp {
  version: number;
}

/** The builder version stamped in `dir`/manifest.json; undefined when the folder, its manifest or the stamp is absent. */
export function readBundledVersion(dir: string): number | undefined {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { bundled?: Partial<BundledStamp> };
    return typeof manifest.bundled?.version === 'number' ? manifest.bundled.version : undefined;
  } catch {
    return undefined;
  }
}

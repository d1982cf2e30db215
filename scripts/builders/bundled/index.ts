/**
 * The models the project builds from registry packages, so a fresh clone serves chat, embeddings and
 * rerank with no network. Each is built into a temporary folder and renamed into place when complete, so an
 * interrupted build never leaves a folder the registry would try to load.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildTinyChatModel } from './chat-model.js';
import { buildGloveEmbedder } from './glove-embedder.js';
import { buildMiniLmShape } from './minilm-shape.js';
import { buildTestReranker } from './test-reranker.js';
import { buildTinyVisionModel } from './vision-model.js';
import { buildTinyGemma3VisionModel } from './gemma3-vision-model.js';
import { buildBenchLm, buildBenchLmQwen3Tokenizer, buildModelBuilderBenchLm, QWEN25_05B_SHAPE, SMOLLM2_135M_SHAPE, SMOLLM2_135M_SHAPE_32K } from './bench-lm.js';
import { writeJson, type BuildContext } from './build-context.js';
import type { ModelManifest } from '../../../src/models/manifest.js';
import { BUNDLED_MODEL_VERSIONS, readBundledVersion, type BundledStamp } from '../../../src/models/bundled-versions.js';

export interface BundledModel {
  manifest: ModelManifest & { id: string };
  /**
   * Bump when the builder's output changes, so existing folders are rebuilt. The bundled models'
   * versions live in src/models/bundled-versions.ts, where the server's start-up check reads them.
   */
  version: number;
  build: (ctx: BuildContext) => void;
}

export const BUNDLED_MODELS: BundledModel[] = [
  {
    manifest: { id: 'glove-sif-100d', task: 'embedding', dtype: 'fp32', pooling: 'mean', normalize: true },
    version: BUNDLED_MODEL_VERSIONS['glove-sif-100d'],
    build: buildGloveEmbedder,
  },
  {
    manifest: { id: 'tiny-qwen3-random', task: 'chat', dtype: 'fp32' },
    version: BUNDLED_MODEL_VERSIONS['tiny-qwen3-random'],
    build: buildTinyChatModel,
  },
  {
    // randomWeights: its scores rank nothing, so a rank request that names no model gets it only when nothing else can rank.
    manifest: { id: 'tiny-bert-reranker-random', task: 'rerank', dtype: 'fp32', randomWeights: true },
    version: BUNDLED_MODEL_VERSIONS['tiny-bert-reranker-random'],
    build: buildTestReranker,
  },
  {
    manifest: { id: 'tiny-qwen3-vl-random', task: 'chat', dtype: 'fp32', randomWeights: true },
    version: BUNDLED_MODEL_VERSIONS['tiny-qwen3-vl-random'],
    build: buildTinyVisionModel,
  },
  {
    manifest: { id: 'tiny-gemma3-vl-random', task: 'chat', dtype: 'fp32', randomWeights: true },
    version: BUNDLED_MODEL_VERSIONS['tiny-gemma3-vl-random'],
    build: buildTinyGemma3VisionModel,
  },
];

/** Models built only for benchmarks (scripts/build-models.ts --bench), into bench/models/. */
export const BENCH_MODELS: BundledModel[] = [
  {
    manifest: { id: 'minilm-l6-shape-random', task: 'embedding', dtype: 'fp32', pooling: 'mean', normalize: true },
    version: 1,
    build: buildMiniLmShape,
  },
  ...(
    [
      ['smollm2-135m-shape', SMOLLM2_135M_SHAPE],
      ['qwen2.5-0.5b-shape', QWEN25_05B_SHAPE],
    ] as const
  ).flatMap(([name, shape]) =>
    ([false, true] as const).map((quantize): BundledModel => ({
      manifest: { id: `${name}-${quantize ? 'q8' : 'fp32'}`, task: 'chat', dtype: quantize ? 'q8' : 'fp32' },
      version: 1,
      build: (ctx) => buildBenchLm(ctx, shape, quantize),
    })),
  ),
  // The same shapes in onnxruntime-genai model-builder form (GroupQueryAttention with rotary inside,
  // MatMulNBits blocks of 32): q4 and q4f16 as onnx-community publishes them, and 8-bit MatMulNBits.
  ...(
    [
      ['smollm2-135m-shape', SMOLLM2_135M_SHAPE],
      ['qwen2.5-0.5b-shape', QWEN25_05B_SHAPE],
    ] as const
  ).flatMap(([name, shape]) =>
    (['q4', 'q4f16', 'q8'] as const).map((dtype): BundledModel => ({
      manifest: { id: `${name}-mb-${dtype}`, task: 'chat', dtype },
      version: 1,
      build: (ctx) => buildModelBuilderBenchLm(ctx, { shape, dtype }),
    })),
  ),
  {
    // SmolLM2-135M's layers, a 32,768-position window and the Qwen3 tokenizer: Claude Code's first
    // turn (~18.7k Qwen3 tokens) at its real length (scripts/bench/agent-prompt.ts).
    manifest: { id: 'smollm2-135m-shape-32k-q8', task: 'chat', dtype: 'q8' },
    version: 1,
    build: (ctx) => buildBenchLmQwen3Tokenizer(ctx, SMOLLM2_135M_SHAPE_32K, true),
  },
];

export interface EnsureOptions {
  modelsDir: string;
  /** Which set to build (default: the bundled models). */
  models?: BundledModel[];
  log?: (line: string) => void;
  /** Rebuild even when an up-to-date folder exists. */
  force?: boolean;
}

/** Builds each bundled model that is absent or out of date; returns the ids it built. */
export function ensureBundledModels(options: EnsureOptions): string[] {
  const log = options.log ?? ((line) => process.stderr.write(line + '\n'));
  const built: string[] = [];
  fs.mkdirSync(options.modelsDir, { recursive: true });
  for (const model of options.models ?? BUNDLED_MODELS) {
    const id = model.manifest.id;
    const dir = path.join(options.modelsDir, id);
    if (!options.force && readBundledVersion(dir) === model.version) continue;
    const tmp = path.join(options.modelsDir, `.building-${id}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { recursive: true });
    const started = Date.now();
    let step = 0;
    log(`[models] building ${id} (bundled model, version ${model.version})`);
    model.build({ dir: tmp, progress: (m) => log(`[models] ${id} ${++step}. ${m}`) });
    const bundled: BundledStamp = { version: model.version };
    writeJson(path.join(tmp, 'manifest.json'), { ...model.manifest, bundled });
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(tmp, dir);
    log(`[models] built ${id} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    built.push(id);
  }
  return built;
}

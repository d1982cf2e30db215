/**
 * The GGUF chat model of the test suite: the bundled chat model's weights (models/tiny-qwen3-random)
 * as a GGUF file with the real Qwen3 tokenizer and chat template in its metadata (./chat-gguf.ts),
 * so every chat test runs on llama.cpp too, offline. Built once into its own models folder and
 * rebuilt when the bundled model's version changes (its stamp is the manifest's `bundled` field, as
 * for the bundled models).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readBundledVersion } from '../../../src/models/bundled-versions.js';
import { buildChatGguf } from './chat-gguf.js';
import { buildRerankGguf } from './rerank-gguf.js';

export const TEST_GGUF_MODEL = 'tiny-qwen3-gguf';
/** The file's name gives its quantization, as published GGUF files do (the model answers to `tiny-qwen3-gguf:F32` too). */
export const TEST_GGUF_FILE = `${TEST_GGUF_MODEL}-F32.gguf`;
/** The same weights as an embedding model (mean pooling, no chat template): llama.cpp's embeddings. */
export const TEST_GGUF_EMBED_MODEL = 'tiny-qwen3-embed-gguf';
/** A GGUF cross-encoder (BERT, pooling type rank; ./rerank-gguf.ts), in the embedding model's folder of models. */
export const TEST_GGUF_RERANK_MODEL = 'tiny-bert-rerank-gguf';
const SOURCE = 'tiny-qwen3-random';
/** Bump when this builder's output changes (the folders carry it beside the source's version, and are rebuilt when either differs). */
const BUILD = 4;

function builtBy(dir: string): number | undefined {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { ggufBuild?: number }).ggufBuild;
  } catch {
    return undefined;
  }
}

/**
 * Builds `<modelsDir>/tiny-qwen3-gguf/` and `<embedModelsDir>/tiny-qwen3-embed-gguf/` from
 * `<bundledDir>/tiny-qwen3-random`, and `<embedModelsDir>/tiny-bert-rerank-gguf/`, unless they are current.
 */
export function ensureTestGguf(options: { bundledDir: string; modelsDir: string; embedModelsDir: string; log?: (line: string) => void }): void {
  const source = path.join(options.bundledDir, SOURCE);
  const version = readBundledVersion(source);
  if (version === undefined) throw new Error(`${source} is not built (npm run build:models)`);
  for (const [id, embedding, modelsDir] of [[TEST_GGUF_MODEL, false, options.modelsDir], [TEST_GGUF_EMBED_MODEL, true, options.embedModelsDir]] as const) {
    const dir = path.join(modelsDir, id);
    const file = `${id}-F32.gguf`;
    if (readBundledVersion(dir) === version && builtBy(dir) === BUILD && fs.existsSync(path.join(dir, file))) continue;
    const started = Date.now();
    fs.mkdirSync(modelsDir, { recursive: true });
    const tmp = path.join(modelsDir, `.building-${id}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { recursive: true });
    buildChatGguf({ modelDir: source, out: path.join(tmp, file), pre: 'qwen2', embedding });
    // The chat model states no context: it is served the GGUF's trained 32,768 tokens, as a
    // downloaded GGUF is (its KV is 256 bytes a token: 8 x 32k is 64 MiB, within any default KV
    // budget). The embedding model's input is one pass, its context capped unless the manifest says more.
    const context = embedding ? { contextLength: 32_768 } : {};
    fs.writeFileSync(path.join(tmp, 'manifest.json'), JSON.stringify({ ...context, bundled: { version }, ggufBuild: BUILD }, null, 2) + '\n');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(tmp, dir);
    options.log?.(`[models] built ${id} (GGUF of ${SOURCE}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  const rerankDir = path.join(options.embedModelsDir, TEST_GGUF_RERANK_MODEL);
  if (builtBy(rerankDir) !== BUILD || !fs.existsSync(path.join(rerankDir, `${TEST_GGUF_RERANK_MODEL}-F32.gguf`))) {
    const tmp = path.join(options.embedModelsDir, `.building-${TEST_GGUF_RERANK_MODEL}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    buildRerankGguf(tmp, `${TEST_GGUF_RERANK_MODEL}-F32`);
    fs.writeFileSync(path.join(tmp, 'manifest.json'), JSON.stringify({ ggufBuild: BUILD }, null, 2) + '\n');
    fs.rmSync(rerankDir, { recursive: true, force: true });
    fs.renameSync(tmp, rerankDir);
    options.log?.(`[models] built ${TEST_GGUF_RERANK_MODEL} (a GGUF cross-encoder)`);
  }
}

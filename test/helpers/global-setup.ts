import { ensureBundledModels } from '../../scripts/builders/bundled/index.js';
import { ensureTestGguf } from '../../scripts/builders/gguf/test-model.js';
import fs from 'node:fs';
import path from 'node:path';
import { EMBED_MODEL, GGUF_EMBED_MODELS_DIR, GGUF_MODELS_DIR, MODELS_DIR, RERANK_MODEL } from './paths.js';

export default function setup(): void {
  ensureBundledModels({ modelsDir: MODELS_DIR });
  ensureTestGguf({ bundledDir: MODELS_DIR, modelsDir: GGUF_MODELS_DIR, embedModelsDir: GGUF_EMBED_MODELS_DIR, log: (line) => process.stderr.write(line + '\n') });
  for (const id of [EMBED_MODEL, RERANK_MODEL]) {
    const linked = path.join(GGUF_MODELS_DIR, id);
    if (!fs.existsSync(linked)) fs.symlinkSync(path.join(MODELS_DIR, id), linked);
  }
}

import { ensureBundledModels } from '../../scripts/builders/bundled/index.js';
import { ensureTestGguf } from '../../scripts/builders/gguf/test-model.js';
import fs from 'node:fs';
import path from 'node:path';
import { EMBED_MODEL, GGUF_EMBED_MODELS_DIR, GGUF_MODELS_DIR, MODELS_DIR } from './paths.js';

export default function setup(): void {
  ensureBundledModels({ modelsDir: MODELS_DIR });
  ensureTestGguf({ bundledDir: MODELS_DIR, modelsDir: GGUF_MODELS_DIR, embedModelsDir: GGUF_EMBED_MODELS_DIR, log: (line) => process.stderr.write(line + '\n') });
  const embed = path.join(GGUF_MODELS_DIR, EMBED_MODEL);
  if (!fs.existsSync(embed)) fs.symlinkSync(path.join(MODELS_DIR, EMBED_MODEL), embed);
}

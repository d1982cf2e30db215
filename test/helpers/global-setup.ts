import { ensureBundledModels } from '../../scripts/builders/bundled/index.js';
import { ensureTestGguf } from '../../scripts/builders/gguf/test-model.js';
import { GGUF_MODELS_DIR, MODELS_DIR } from './paths.js';

export default function setup(): void {
  ensureBundledModels({ modelsDir: MODELS_DIR });
  ensureTestGguf({ bundledDir: MODELS_DIR, modelsDir: GGUF_MODELS_DIR, log: (line) => process.stderr.write(line + '\n') });
}

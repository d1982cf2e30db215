import { ensureBundledModels } from '../../scripts/builders/bundled/index.js';
import { MODELS_DIR } from './paths.js';

export default function setup(): void {
  ensureBundledModels({ modelsDir: MODELS_DIR });
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MODELS_DIR, SERVED_MODELS_DIR } from './paths.js';

/**
 * A models folder holding one variant of a served model (a bundled one, or the GGUF test model): its files linked, with some JSON files
 * replaced. Returns the folder; the caller removes it.
 */
export function modelVariant(sourceId: string, variantId: string, replace: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${variantId}-`));
  const source = path.join(SERVED_MODELS_DIR, sourceId);
  const target = path.join(dir, variantId);
  fs.mkdirSync(target);
  for (const entry of fs.readdirSync(source)) {
    // manifest.json carries the bundled id; a variant is known by its folder name.
    if (entry === 'manifest.json' || entry in replace) continue;
    fs.symlinkSync(path.join(source, entry), path.join(target, entry));
  }
  for (const [file, content] of Object.entries(replace)) fs.writeFileSync(path.join(target, file), JSON.stringify(content));
  return dir;
}

export function readModelJson(sourceId: string, file: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(MODELS_DIR, sourceId, file), 'utf8'));
}

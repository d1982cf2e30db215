// Runs before `npm test`: installs node-llama-cpp (llama.cpp's prebuilt CPU binary, for the GGUF test
// and the long-context benchmark) when it is missing. It is not in package.json because the npm
// registry this project installs from lacks some of its optional platform packages, and `npm ci`
// refuses a lock that lists them; `npm install --no-save` tolerates the missing optional ones.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';

try {
  createRequire(import.meta.url).resolve('node-llama-cpp');
} catch {
  process.stderr.write('[pretest] installing node-llama-cpp@3.22.1 (not saved to package.json)\n');
  execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', 'node-llama-cpp@3.22.1'], { stdio: 'inherit' });
}

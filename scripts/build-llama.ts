/**
 * Builds node-llama-cpp's llama.cpp for this machine from the source it ships
 * (node_modules/node-llama-cpp/llama/gitRelease.bundle: no network), with cmake and a C++ compiler.
 * node-llama-cpp then loads this build before its prebuilt binaries (the server's start-up line says
 * `llama.cpp (built here)`). Why: the prebuilt CPU binaries are built for a family of instruction
 * sets and without OpenMP; built here they get this CPU's (GGML_NATIVE) and OpenMP, as a llama-server
 * built from source does. Measured on a 2-core AMD EPYC (AVX512, VNNI), a Qwen2.5-0.5B-shaped F32
 * GGUF, node-llama-cpp alone: a 2k-token prefill 16.2 s -> 12.3 s, eight streams 10.4 -> 14.7 tok/s
 * (bench/results/llama-server-quick-05b-*.md has the server's figures). About 10 minutes on 2 idle
 * cores.
 *
 *   npm run build:llama                  (the CPU build)
 *   npm run build:llama -- --gpu cuda    (a CUDA build, where the toolkit is installed; vulkan likewise)
 *   npm run build:llama -- --remove      (back to the prebuilt binaries)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { NODE_LLAMA_CPP_ROOT } from './node-llama-cpp-root.js';

const { values } = parseArgs({ options: { gpu: { type: 'string', default: 'false' }, remove: { type: 'boolean', default: false } } });
const root = NODE_LLAMA_CPP_ROOT;
const cli = path.join(root, 'dist', 'cli', 'cli.js');
const run = (args: string[]) => {
  const result = spawnSync(process.execPath, [cli, ...args], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

if (values.remove) {
  fs.rmSync(path.join(root, 'llama', 'localBuilds'), { recursive: true, force: true });
  fs.rmSync(path.join(root, 'llama', 'lastBuild.json'), { force: true });
  process.stderr.write('removed the local llama.cpp build: node-llama-cpp loads its prebuilt binaries\n');
} else {
  const started = Date.now();
  // `source download` clones the shipped bundle (it goes to GitHub only when there is none) and builds.
  run(['source', 'download', '--gpu', values.gpu!, '--noUsageExample']);
  process.stderr.write(`built llama.cpp for this machine in ${((Date.now() - started) / 60_000).toFixed(1)} min\n`);
}

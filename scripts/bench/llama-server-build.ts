/**
 * llama-server built from the llama.cpp source node-llama-cpp ships (its `llama/gitRelease.bundle`,
 * the very commit its prebuilt binaries come from), for the peer benchmark (./llama-server.ts).
 *
 * Built once per commit into a cache outside the checkout (`$XDG_CACHE_HOME` or ~/.cache, under
 * local-inference-server/llama-server-<commit>), with cmake and the C++ compiler on PATH: a Release
 * build of the llama-server target alone, for this CPU (GGML_NATIVE, llama.cpp's default: the
 * kernels this machine's instruction sets allow, as node-llama-cpp's prebuilt variant for it does),
 * no curl, no OpenSSL, no web UI download. It takes several minutes on two cores and runs under
 * `nice`. No cmake or no compiler: the caller gets the reason and skips llama-server.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface LlamaServerBuild {
  binary: string;
  /** The llama.cpp commit built (the bundle's head). */
  commit: string;
  /** The build as the results name it: commit, ggml version, the flags that matter. */
  describe: string;
}

const BUNDLE = path.resolve('node_modules/node-llama-cpp/llama/gitRelease.bundle');
const CMAKE_FLAGS = [
  '-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF', '-DLLAMA_USE_PREBUILT_UI=OFF', '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_APP=OFF', '-DBUILD_SHARED_LIBS=OFF',
];

const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).status === 0;

/** The cached build of llama-server, building it first when absent; a string: why there is none. */
export function ensureLlamaServer(log: (line: string) => void = (l) => process.stderr.write(l + '\n')): LlamaServerBuild | string {
  if (!fs.existsSync(BUNDLE)) return `no llama.cpp source bundle at ${BUNDLE}`;
  const heads = spawnSync('git', ['bundle', 'list-heads', BUNDLE], { encoding: 'utf8' });
  const commit = /^([0-9a-f]{40}) HEAD$/m.exec(heads.stdout ?? '')?.[1];
  if (!commit) return `git could not read ${BUNDLE}: ${heads.stderr || heads.error}`;
  const root = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'local-inference-server', `llama-server-${commit.slice(0, 12)}`);
  const binary = path.join(root, 'build', 'bin', 'llama-server');
  const describe = () => {
    const ggml = /ggml version: (\S+)/.exec(readOr(path.join(root, 'configure.log')))?.[1] ?? 'unknown';
    return `llama.cpp ${commit.slice(0, 7)} (node-llama-cpp's bundle; ggml ${ggml}), llama-server built here: Release, GGML_NATIVE (this CPU's instruction sets), static`;
  };
  if (fs.existsSync(binary)) return { binary, commit, describe: describe() };
  const missing = ['cmake', 'c++', 'cc', 'git'].filter((c) => !has(c));
  if (missing.length) return `llama-server not built: ${missing.join(', ')} not on PATH (it needs cmake and a C/C++ compiler)`;
  fs.mkdirSync(root, { recursive: true });
  const run = (args: string[], logFile: string) => {
    log(`llama-server: ${args.join(' ')} (log: ${path.join(root, logFile)})`);
    const out = fs.openSync(path.join(root, logFile), 'w');
    try {
      const result = spawnSync('nice', ['-n', '10', ...args], { cwd: root, stdio: ['ignore', out, out] });
      if (result.status !== 0) throw new Error(`${args[0]} failed (${result.status ?? result.signal}): see ${path.join(root, logFile)}`);
    } finally {
      fs.closeSync(out);
    }
  };
  if (!fs.existsSync(path.join(root, 'src', 'CMakeLists.txt'))) run(['git', 'clone', '--quiet', BUNDLE, 'src'], 'clone.log');
  run(['cmake', '-S', 'src', '-B', 'build', ...CMAKE_FLAGS], 'configure.log');
  run(['cmake', '--build', 'build', '--target', 'llama-server', '-j2'], 'build.log');
  return { binary, commit, describe: describe() };
}

const readOr = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');

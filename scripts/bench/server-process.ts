/**
 * Starts the real server (src/main.ts) as a child process for benchmarks, so load generation in
 * the bench process does not share an event loop with the server.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

export interface ServerProcess {
  url: string;
  pid: number;
  /** Everything the server has written to stderr so far (its log at the level asked for). */
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * What the checkout's start script (package.json: `cross-env VAR=value ... node --flag ... script`)
 * sets: its environment (glibc's malloc), Node's flags (V8's young generation) and the script (see
 * docs/configuration.md, Memory). Read from the script, so that a benchmark runs what `npm start` runs.
 */
export function startScript(root: string): { env: Record<string, string>; flags: string[]; script: string } {
  const start = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = start.split(/\s+/).filter((w) => w !== 'cross-env');
  const node = words.indexOf('node');
  if (node < 0) throw new Error(`the start script does not run node: ${start}`);
  const env = Object.fromEntries(words.slice(0, node).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  const rest = words.slice(node + 1);
  return { env, flags: rest.filter((w) => w.startsWith('--')), script: rest.find((w) => !w.startsWith('--'))! };
}

/**
 * How to run the server of the checkout at `root`: compiled, as `npm start` does (built first, then
 * the start script's node command in its environment), or the TypeScript source under tsx.
 */
export function serverCommand(root: string, compiled: boolean): { argv: string[]; env: Record<string, string> } {
  if (!compiled) return { argv: ['--import', 'tsx', path.join(root, 'src/main.ts')], env: {} };
  // Built once per checkout and process: every server a benchmark starts runs the same build (and a
  // benchmark starting dozens of servers does not spend minutes in tsc).
  if (!built.has(root)) {
    const build = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
    if (build.status !== 0) throw new Error('tsc -p tsconfig.build.json failed');
    built.add(root);
  }
  const { env, flags, script } = startScript(root);
  return { argv: [...flags, path.join(root, script)], env };
}

const built = new Set<string>();

/**
 * `preloadAll`: every model loaded before the server listens (default), so no measurement includes a load.
 * `compiled`: run the compiled server as `npm start` does (built first, `node dist/src/main.js`, its environment)
 * instead of the TypeScript source under tsx, whose loader costs every worker thread about 100 MiB.
 * `root`: the checkout whose server runs (default: this one), e.g. an older commit's worktree.
 */
export function startServerProcess(args: string[], env: Record<string, string> = {}, { preloadAll = true, compiled = false, root = process.cwd() } = {}): Promise<ServerProcess> {
  const preload = preloadAll ? ['--preload', '*'] : [];
  const server = serverCommand(root, compiled);
  const child: ChildProcess = spawn(process.execPath, [...server.argv, '--port', '0', '--log-level', 'warn', ...preload, ...args], {
    cwd: root,
    env: { ...process.env, ...server.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        resolve({
          url: match[1]!,
          pid: child.pid!,
          stderr: () => stderr,
          stop: () =>
            new Promise((done) => {
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${stderr}`)));
  });
}

/** One streamed chat request's timing: request to first text delta, then decode rate over the rest. */
export interface StreamRun {
  ttftMs: number;
  decodeTps: number;
  /** Anthropic's input_tokens: the prompt's tokens less those read from a cache. */
  inputTokens: number;
  /** cache_read_input_tokens: prompt tokens the server reused instead of evaluating (the prompt has inputTokens + these). */
  cachedTokens?: number;
  totalMs: number;
}

/**
 * Streams one greedy Messages request of `maxTokens` output tokens and times it; rejects when the
 * server produced another number of tokens (an early end would inflate the decode rate).
 */
export function streamOnce(url: string, model: string, content: string, maxTokens: number, agent: http.Agent): Promise<StreamRun> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model, max_tokens: maxTokens, temperature: 0, stream: true, messages: [{ role: 'user', content }] });
    const started = performance.now();
    let first = NaN;
    let text = '';
    const req = http.request(`${url}/v1/messages`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (Number.isNaN(first) && chunk.includes('content_block_delta')) first = performance.now() - started;
        text += chunk;
      });
      res.on('end', () => {
        const total = performance.now() - started;
        const output = Number([...text.matchAll(/"output_tokens":(\d+)/g)].at(-1)?.[1]);
        const input = Number(/"input_tokens":(\d+)/.exec(text)?.[1]);
        const cached = Number(/"cache_read_input_tokens":(\d+)/.exec(text)?.[1] ?? 0);
        if (output !== maxTokens) return reject(new Error(`expected ${maxTokens} output tokens, got ${output}: ${text.slice(-300)}`));
        resolve({ ttftMs: first, decodeTps: (output - 1) / ((total - first) / 1000), inputTokens: input, cachedTokens: cached, totalMs: total });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The server under test, as a child process (src/main.ts on the bundled models), for the fuzzer,
 * the slow-client check and the soak benchmark: the load generator never shares an event loop with
 * the server, and a crash shows as an exit instead of taking the test runner down.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serverCommand } from '../bench/server-process.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ChildServer {
  url: string;
  port: number;
  pid: number;
  child: ChildProcess;
  /** Everything the server wrote to stderr (its log) so far. */
  stderr(): string;
  alive(): boolean;
  stop(): Promise<void>;
}

export interface ChildServerOptions {
  args?: string[];
  env?: Record<string, string>;
  /** Give up if the server has not said "listening" by then. */
  startTimeoutMs?: number;
  /** Run the compiled server as `npm start` does (scripts/bench/server-process.ts serverCommand); default: src/main.ts under tsx. */
  compiled?: boolean;
}

/** Starts the server on a free loopback port and resolves once it listens. */
export function startChildServer(options: ChildServerOptions = {}): Promise<ChildServer> {
  const { args = [], env = {}, startTimeoutMs = 120_000, compiled = false } = options;
  const server = serverCommand(ROOT, compiled);
  const child = spawn(
    process.execPath,
    [...server.argv, '--models-dir', path.join(ROOT, 'models'), '--host', '127.0.0.1', '--port', '0', '--log-level', 'warn', '--preload', '*', ...args],
    { cwd: ROOT, env: { ...process.env, ...server.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  let exited = false;
  let listening = false;
  child.once('exit', () => (exited = true));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not listen within ${startTimeoutMs} ms:\n${log}`));
    }, startTimeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.length > 4_000_000) log = log.slice(-2_000_000);
      const match = /listening on (http:\/\/\S+)/.exec(log);
      if (match && !listening) {
        listening = true;
        clearTimeout(timer);
        const url = match[1]!;
        resolve({
          url,
          port: Number(new URL(url).port),
          pid: child.pid!,
          child,
          stderr: () => log,
          alive: () => !exited,
          stop: () =>
            new Promise<void>((done) => {
              if (exited) return done();
              const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
              child.once('exit', () => {
                clearTimeout(kill);
                done();
              });
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
}

/**
 * The configuration settings the server accepts: the environment variables its usage text lists
 * (src/config.ts usage(), what `--help` prints). Lets a check skip, with a reason, when a setting it
 * needs does not exist yet.
 */
export async function serverSettings(): Promise<Set<string>> {
  const { usage } = await import('../../src/config.js');
  return new Set(usage().match(/\b[A-Z][A-Z0-9_]{2,}\b/g) ?? []);
}

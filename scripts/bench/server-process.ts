/**
 * Starts the real server (src/main.ts) as a child process for benchmarks, so load generation in
 * the bench process does not share an event loop with the server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface ServerProcess {
  url: string;
  pid: number;
  /** Everything the server has written to stderr so far (its log at the level asked for). */
  stderr(): string;
  stop(): Promise<void>;
}

/** `preloadAll`: every model loaded before the server listens (default), so no measurement includes a load. */
export function startServerProcess(args: string[], env: Record<string, string> = {}, { preloadAll = true } = {}): Promise<ServerProcess> {
  const preload = preloadAll ? ['--preload', '*'] : [];
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.resolve('src/main.ts'), '--port', '0', '--log-level', 'warn', ...preload, ...args], {
    env: { ...process.env, ...env },
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

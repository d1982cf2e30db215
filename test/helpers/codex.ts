/**
 * The Codex CLI (@openai/codex, pinned as a devDependency) run offline against a listening server:
 * a Codex home whose config.toml names the server as a custom model provider (`wire_api =
 * "responses"`), a recording proxy in front of the server that keeps every exchange, and the CLI
 * itself with a hard timeout. Used by test/clients/codex.test.ts and the family agent tests.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

export interface Recorded {
  method: string;
  url: string;
  /** The request's body as Codex sent it. */
  sent: string;
  status: number;
  /** The response's body as the server answered it. */
  body: string;
}

export interface RecordingProxy {
  url: string;
  exchanges: Recorded[];
  close(): void;
}

/**
 * A proxy that forwards to the server and records each exchange (request line, status, response
 * body). `target` as a function: read per request (a server restarted on another port).
 */
export async function recordingProxy(target: string | (() => string)): Promise<RecordingProxy> {
  const exchanges: Recorded[] = [];
  const proxy = http.createServer((req, res) => {
    const upstream = new URL(typeof target === 'string' ? target : target());
    let sent = '';
    req.on('data', (chunk: Buffer) => (sent += chunk.toString('utf8')));
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      let body = '';
      answer.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
        res.write(chunk);
      });
      answer.on('end', () => {
        exchanges.push({ method: req.method ?? '', url: req.url ?? '', sent, status: answer.statusCode ?? 0, body });
        res.end();
      });
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, exchanges, close: () => proxy.close() };
}

/** The exchanges that were not answered 200, as one line each (an empty list when all were). */
export const failedExchanges = (exchanges: readonly Recorded[]) =>
  exchanges.filter((e) => e.status !== 200).map((e) => `${e.method} ${e.url} ${e.status} ${e.body.slice(0, 300)}`);

function codexBinary(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
}

export interface CodexDirs {
  home: string;
  cwd: string;
  /** The API key Codex sends (LOCAL_API_KEY, named by the provider's env_key). */
  key: string;
}

/**
 * A Codex home whose config.toml names `baseURL` (a server or a proxy in front of one) as its
 * provider and `model` as its model, and an empty working directory; `extra`: more top-level settings.
 */
export function codexHome(options: { model: string; baseURL: string; key: string; extra?: string[] }): CodexDirs {
  const made = { home: fs.mkdtempSync(path.join(os.tmpdir(), 'codex-home-')), cwd: fs.mkdtempSync(path.join(os.tmpdir(), 'codex-cwd-')), key: options.key };
  fs.mkdirSync(path.join(made.home, '.codex'));
  fs.writeFileSync(path.join(made.home, '.codex', 'config.toml'), [
    `model = "${options.model}"`,
    'model_provider = "local"',
    ...(options.extra ?? []),
    '',
    '[model_providers.local]',
    'name = "local"',
    `base_url = "${options.baseURL}/v1"`,
    'env_key = "LOCAL_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n'));
  return made;
}

export const removeCodexHome = (dirs: CodexDirs | undefined) => {
  for (const dir of [dirs?.home, dirs?.cwd]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
};

/** Runs `codex ARGS` with its own home in its own working directory; killed after `timeoutMs`. */
export async function runCodex(args: string[], dirs: CodexDirs, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [codexBinary(), ...args], {
    cwd: dirs.cwd,
    env: { PATH: process.env.PATH, HOME: dirs.home, CODEX_HOME: path.join(dirs.home, '.codex'), LOCAL_API_KEY: dirs.key, NO_COLOR: '1', RUST_LOG: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/**
 * The Codex CLI (@openai/codex, pinned as a devDependency) against a listening server, offline,
 * through a custom model provider (`wire_api = "responses"`): `codex exec` completes a turn, and
 * `codex exec resume --last` completes a second one that reads the first from the prompt cache.
 * Every request Codex sends goes through a recording proxy in front of the server, which shows each
 * was answered 200. The model's turns are written for the test (test hooks: the sampler is made to
 * pick these tokens, then end of sequence), so Codex sees complete turns whatever the random weights.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'codex-test-key';
const FIRST_REPLY = 'Hi from the local model.';
const SECOND_REPLY = 'Still here, second turn.';
const CODEX_TIMEOUT_MS = 90_000;

const SUMMARY = 'Summary: the user gave numbered tasks; each was noted; nothing is left to do.';
const TASK_REPLY = 'Task noted.';

const lastUserText = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  const text = lastUserText(request);
  if (text.includes('say hi again')) return SECOND_REPLY;
  if (text.includes('say hi')) return FIRST_REPLY;
  // Codex's own compaction prompt (0.169, a custom provider compacts through an ordinary turn).
  if (text.includes('CONTEXT CHECKPOINT COMPACTION')) return SUMMARY;
  if (/^task \d+$/.test(text.trim())) return TASK_REPLY;
  return undefined;
};

interface Recorded {
  method: string;
  url: string;
  /** The request's body as Codex sent it. */
  sent: string;
  status: number;
  /** The response's body as the server answered it. */
  body: string;
}

/** A proxy that forwards to the server and records each exchange (request line, status, response body). */
async function recordingProxy(target: string): Promise<{ url: string; exchanges: Recorded[]; close: () => void }> {
  const exchanges: Recorded[] = [];
  const upstream = new URL(target);
  const proxy = http.createServer((req, res) => {
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

function codexBinary(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
}

/** Runs `codex` with its own home (config.toml naming the server as its provider) in `cwd`. */
async function codex(args: string[], dirs: { home: string; cwd: string }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [codexBinary(), ...args], {
    cwd: dirs.cwd,
    env: { PATH: process.env.PATH, HOME: dirs.home, CODEX_HOME: path.join(dirs.home, '.codex'), LOCAL_API_KEY: KEY, NO_COLOR: '1', RUST_LOG: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), CODEX_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** The usage of the response a stream completed with. */
function completedUsage(body: string): { input_tokens: number; input_tokens_details: { cached_tokens: number } } | undefined {
  const done = body.split('\n\n').find((frame) => frame.startsWith('event: response.completed'));
  if (!done) return undefined;
  return (JSON.parse(done.slice(done.indexOf('data: ') + 6)) as { response: { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } } }).response.usage;
}

let server: RealServer;
let proxy: Awaited<ReturnType<typeof recordingProxy>>;
let dirs: { home: string; cwd: string };

/** A Codex home whose config.toml names the server (through the proxy) as its provider; `extra`: more top-level settings. */
function codexHome(extra: string[] = []): { home: string; cwd: string } {
  const made = { home: fs.mkdtempSync(path.join(os.tmpdir(), 'codex-home-')), cwd: fs.mkdtempSync(path.join(os.tmpdir(), 'codex-cwd-')) };
  fs.mkdirSync(path.join(made.home, '.codex'));
  fs.writeFileSync(path.join(made.home, '.codex', 'config.toml'), [
    `model = "${CHAT_MODEL}"`,
    'model_provider = "local"',
    ...extra,
    '',
    '[model_providers.local]',
    'name = "local"',
    `base_url = "${proxy.url}/v1"`,
    'env_key = "LOCAL_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n'));
  return made;
}
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL], script });
  proxy = await recordingProxy(server.url);
  dirs = codexHome();
});
afterAll(() => {
  proxy?.close();
  server?.close();
  for (const dir of [dirs?.home, dirs?.cwd]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('Codex CLI (responses wire API, custom provider, offline)', () => {
  it('codex exec completes a turn, and codex exec resume --last a second one that reads the first from the prompt cache', async () => {
    const first = await codex(['exec', '--skip-git-repo-check', 'say hi'], dirs);
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    expect(first.stdout + first.stderr).toContain(FIRST_REPLY);
    const firstTurn = proxy.exchanges.filter((e) => e.url === '/v1/responses');
    expect(firstTurn.length).toBeGreaterThan(0);

    const second = await codex(['exec', '--skip-git-repo-check', 'resume', '--last', 'say hi again'], dirs);
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    expect(second.stdout + second.stderr).toContain(SECOND_REPLY);

    // Every request Codex sent was answered 200.
    expect(proxy.exchanges.filter((e) => e.status !== 200).map((e) => `${e.method} ${e.url} ${e.status} ${e.body.slice(0, 300)}`)).toEqual([]);
    const turns = proxy.exchanges.filter((e) => e.url === '/v1/responses').map((e) => completedUsage(e.body));
    expect(turns.every((usage) => usage !== undefined)).toBe(true);
    const last = turns.at(-1)!;
    // The second turn resends the first (Codex stores nothing server-side): its prefix was cached.
    expect(last.input_tokens).toBeGreaterThan(turns[0]!.input_tokens);
    expect(last.input_tokens_details.cached_tokens).toBeGreaterThan(0);
  }, 2 * CODEX_TIMEOUT_MS);

  it('a conversation past a small window compacts (Codex summarises through an ordinary turn) and goes on', async () => {
    // Codex's own prompt and tools are a few thousand tokens: past 3000, it compacts before the next turn.
    const small = codexHome(['model_context_window = 9000', 'model_auto_compact_token_limit = 3000']);
    const before = proxy.exchanges.length;
    try {
      const runs = [];
      runs.push(await codex(['exec', '--skip-git-repo-check', 'task 1'], small));
      for (const n of [2, 3]) runs.push(await codex(['exec', '--skip-git-repo-check', 'resume', '--last', `task ${n}`], small));
      for (const run of runs) expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(runs.slice(1).some((run) => /context compacted/i.test(run.stdout + run.stderr))).toBe(true);
      const exchanges = proxy.exchanges.slice(before);
      expect(exchanges.filter((e) => e.status !== 200).map((e) => `${e.method} ${e.url} ${e.status} ${e.body.slice(0, 300)}`)).toEqual([]);
      // The compaction turn answered the summary, and a later turn sent it back as its history.
      const compaction = exchanges.findIndex((e) => e.sent.includes('CONTEXT CHECKPOINT COMPACTION'));
      expect(compaction).toBeGreaterThanOrEqual(0);
      expect(exchanges[compaction]!.body).toContain(SUMMARY);
      expect(exchanges.slice(compaction + 1).some((e) => e.sent.includes(SUMMARY.slice(0, 40)))).toBe(true);
    } finally {
      for (const dir of [small.home, small.cwd]) fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 4 * CODEX_TIMEOUT_MS);
});

/**
 * Load on loopback against the real server process, bounded in time: under capacity every request
 * succeeds; beyond it the surplus is refused at once (529 for Messages, 429 for embeddings) while
 * the rest are served, nothing times out, and memory stays flat across repeated rounds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { median, percentile } from '../../scripts/bench/report.js';
import { CHAT_MODEL, ROOT, SERVED_MODELS_DIR } from '../helpers/paths.js';

const ROUND_MS = 2_000;
let child: ChildProcess;
let url: string;

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), '--models-dir', SERVED_MODELS_DIR, '--port', '0', '--log-level', 'warn', '--max-queue', '2', '--preload', '*'], { stdio: ['ignore', 'ignore', 'pipe'] });
  url = await new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
});
afterAll(() => child?.kill('SIGKILL'));

const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]);

async function round(clients: number, make: (i: number) => { path: string; body: object }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const results: Array<{ status: number; ms: number }> = [];
  const deadline = Date.now() + ROUND_MS;
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; Date.now() < deadline; i++) {
      const { path: p, body } = make(c * 1000 + i);
      const payload = JSON.stringify(body);
      const started = performance.now();
      const status = await new Promise<number>((resolve) => {
        const req = http.request(`${url}${p}`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'content-length': Buffer.byteLength(payload) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', () => resolve(-1));
        req.end(payload);
      });
      results.push({ status, ms: performance.now() - started });
    }
  }));
  agent.destroy();
  const by = (status: number) => results.filter((r) => r.status === status);
  const counts = Object.fromEntries([...new Set(results.map((r) => r.status))].map((s) => [s, by(s).length]));
  const p99 = Object.fromEntries(Object.keys(counts).map((s) => [s, Math.round(percentile(by(Number(s)).map((r) => r.ms), 99))]));
  console.log(`load: ${clients} clients, ${ROUND_MS} ms: counts ${JSON.stringify(counts)}, p99 ms ${JSON.stringify(p99)}, rss ${Math.round(rssKiB() / 1024)} MiB`);
  return { results, by };
}

const chat = (i: number) => ({ path: '/v1/messages', body: { model: CHAT_MODEL, max_tokens: 24, messages: [{ role: 'user', content: `question ${i}` }] } });
const embed = (i: number) => ({ path: '/v1/embeddings', body: { model: 'glove-sif-100d', input: Array.from({ length: 64 }, (_, k) => `sentence ${i} number ${k} about rivers and music`) } });

describe('load on loopback (server process, max queue 2)', () => {
  it('under capacity: every request succeeds', async () => {
    const { results, by } = await round(2, chat);
    // Correctness only: how many a round serves is a speed, and speed belongs to the benchmarks.
    expect(results.length).toBeGreaterThan(0);
    expect(by(200).length).toBe(results.length);
  });

  it('beyond capacity: only 200s and 529s; nothing times out; memory flat across rounds', async () => {
    const rss: number[] = [];
    for (let r = 0; r < 3; r++) {
      const { results } = await round(24, chat);
      expect(new Set(results.map((x) => x.status))).toEqual(new Set([200, 529]));
      rss.push(rssKiB());
    }
    // The second and third rounds do the same work as the first: resident memory must not keep growing.
    expect(rss[2]! / rss[0]!).toBeLessThan(1.25);
  });

  it('embeddings beyond capacity: only 200s and 429s', async () => {
    const { results } = await round(24, embed);
    expect(new Set(results.map((x) => x.status))).toEqual(new Set([200, 429]));
  });
});

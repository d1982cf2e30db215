/**
 * What the model lifecycle costs and gives back, on the real server process (src/main.ts) with
 * nothing preloaded: RSS with no model loaded; per model, the first request (which loads it) against
 * warm ones, the RSS a loaded model adds against its files' size, and the RSS given back when it
 * unloads (X-Model-Keep-Alive: 0). Runs alternate models so each load starts from the same state.
 *
 *   npm run bench:lifecycle [-- --runs 3]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBundledModels } from '../models/bundled/index.js';
import { median, writeResults } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const RUNS = Number(values.runs);
ensureBundledModels({ modelsDir: path.resolve('models') });

const MiB = 1024 * 1024;
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Subject {
  id: string;
  request: (server: ServerProcess, keepAlive: string) => Promise<Response>;
}
const json = (body: unknown, headers: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const SUBJECTS: Subject[] = [
  { id: 'glove-sif-100d', request: (s, k) => fetch(`${s.url}/v1/embeddings`, json({ model: 'glove-sif-100d', input: 'hello world' }, { 'x-model-keep-alive': k })) },
  {
    id: 'tiny-qwen3-random',
    request: (s, k) => fetch(`${s.url}/v1/messages`, json({ model: 'tiny-qwen3-random', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }, { 'anthropic-version': '2023-06-01', 'x-model-keep-alive': k })),
  },
];

async function timed(fn: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const res = await fn();
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`status ${res.status}`);
  return performance.now() - started;
}

/** The server's view of a model (GET /v1/models lifecycle fields). */
async function stateOf(server: ServerProcess, id: string): Promise<{ state: string; file_bytes: number }> {
  const { data } = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; state: string; file_bytes: number }> };
  return data.find((m) => m.id === id)!;
}

async function settledRss(pid: number): Promise<number> {
  // Let freed memory go back and the numbers settle.
  await sleep(1500);
  return rssOf(pid);
}

const server = await startServerProcess(['--keep-alive=-1', '--models-rescan-ms', '0'], {}, { preloadAll: false });
try {
  const idle = await settledRss(server.pid);
  const rows: Record<string, { cold: number[]; warm: number[]; added: number[]; returned: number[]; fileBytes: number }> = {};
  for (let run = 0; run < RUNS; run++) {
    for (const subject of SUBJECTS) {
      const row = (rows[subject.id] ??= { cold: [], warm: [], added: [], returned: [], fileBytes: (await stateOf(server, subject.id)).file_bytes });
      const before = await settledRss(server.pid);
      row.cold.push(await timed(() => subject.request(server, '-1')));
      const warm: number[] = [];
      for (let i = 0; i < 5; i++) warm.push(await timed(() => subject.request(server, i === 4 ? '0' : '-1')));
      row.warm.push(median(warm));
      const loaded = rssOf(server.pid);
      row.added.push(loaded - before);
      for (let i = 0; i < 100 && (await stateOf(server, subject.id)).state !== 'unloaded'; i++) await sleep(50);
      row.returned.push(loaded - (await settledRss(server.pid)));
    }
  }
  const final = await settledRss(server.pid);
  const table = Object.entries(rows).map(([id, r]) => [
    id, r.fileBytes / MiB, median(r.cold), median(r.warm), `${(median(r.cold) / median(r.warm)).toFixed(1)}x`,
    median(r.added) / MiB, `${(median(r.added) / r.fileBytes).toFixed(2)}x`, median(r.returned) / MiB,
  ]);
  writeResults('lifecycle', { runs: RUNS, idleRss: idle, finalRss: final, rows }, [
    {
      title: `First request (loads the model) against warm ones, and memory, median of ${RUNS} load/unload cycles`,
      columns: ['model', 'files (MiB)', 'cold request (ms)', 'warm request (ms)', 'cold / warm', 'RSS added by the load (MiB)', 'added / files', 'RSS given back by the unload (MiB)'],
      rows: table,
    },
    { title: 'Server RSS with no model loaded', columns: ['at start (MiB)', 'after the runs, all unloaded (MiB)'], rows: [[idle / MiB, final / MiB]] },
  ], [
    'Each model runs in one worker plus, for a chat model, one tokenizer worker (count_tokens never waits behind generations); the RSS a load adds is both. Goal (issue 20): a loaded model costs at most 1.3x its files plus under 60 MB per worker; the server with nothing loaded idles under 150 MB.',
  ]);
} finally {
  await server.stop();
}

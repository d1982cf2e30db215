/**
 * What the model lifecycle costs and gives back, on the real server process (src/main.ts) with
 * nothing preloaded: RSS with no model loaded; per model, the first request (which loads it) against
 * warm ones, the RSS a loaded model adds against its files' size, and the RSS given back when it
 * unloads (X-Model-Keep-Alive: 0). Runs alternate models so each load starts from the same state.
 * The server runs compiled, as `npm start` runs it (--tsx: the TypeScript source under tsx, as `npm run dev`).
 *
 *   npm run bench:lifecycle [-- --runs 3] [-- --tsx]
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBundledModels } from '../builders/bundled/index.js';
import { median, writeResults } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, tsx: { type: 'boolean', default: false } } });
const RUNS = Number(values.runs);
ensureBundledModels({ modelsDir: path.resolve('models') });

const MiB = 1024 * 1024;
/** Resident bytes, and the anonymous part (heaps, arenas, copies; the rest is mapped files: code, weights onnxruntime maps). */
function memOf(pid: number): { rss: number; anon: number } {
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kB = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0) * 1024;
  return { rss: kB('Rss'), anon: kB('Anonymous') };
}
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

async function settled(pid: number): Promise<{ rss: number; anon: number }> {
  // Let freed memory go back and the numbers settle.
  await sleep(1500);
  return memOf(pid);
}

const SERVER_ARGS = ['--keep-alive=-1', '--models-rescan-ms', '0'];
const compiled = !values.tsx;

/**
 * What a load adds to a server that has loaded nothing yet: in the cycles below, a load can reuse
 * memory the allocator kept from the previous model's, so it shows less there.
 */
const fresh: Record<string, { rss: number; anon: number }> = {};
for (const subject of SUBJECTS) {
  const first = await startServerProcess(SERVER_ARGS, {}, { preloadAll: false, compiled });
  try {
    const before = await settled(first.pid);
    for (let i = 0; i < 5; i++) await timed(() => subject.request(first, '-1'));
    const loaded = await settled(first.pid);
    fresh[subject.id] = { rss: loaded.rss - before.rss, anon: loaded.anon - before.anon };
  } finally {
    await first.stop();
  }
}

const server = await startServerProcess(SERVER_ARGS, {}, { preloadAll: false, compiled });
try {
  const idle = await settled(server.pid);
  const rows: Record<string, { cold: number[]; warm: number[]; added: number[]; addedAnon: number[]; returned: number[]; fileBytes: number }> = {};
  for (let run = 0; run < RUNS; run++) {
    for (const subject of SUBJECTS) {
      const row = (rows[subject.id] ??= { cold: [], warm: [], added: [], addedAnon: [], returned: [], fileBytes: (await stateOf(server, subject.id)).file_bytes });
      const before = await settled(server.pid);
      row.cold.push(await timed(() => subject.request(server, '-1')));
      const warm: number[] = [];
      for (let i = 0; i < 5; i++) warm.push(await timed(() => subject.request(server, i === 4 ? '0' : '-1')));
      row.warm.push(median(warm));
      const loaded = memOf(server.pid);
      row.added.push(loaded.rss - before.rss);
      row.addedAnon.push(loaded.anon - before.anon);
      for (let i = 0; i < 100 && (await stateOf(server, subject.id)).state !== 'unloaded'; i++) await sleep(50);
      row.returned.push(loaded.rss - (await settled(server.pid)).rss);
    }
  }
  const final = await settled(server.pid);
  const table = Object.entries(rows).map(([id, r]) => [
    id, r.fileBytes / MiB, median(r.cold), median(r.warm), `${(median(r.cold) / median(r.warm)).toFixed(1)}x`,
    fresh[id]!.rss / MiB, `${(fresh[id]!.rss / r.fileBytes).toFixed(2)}x`, fresh[id]!.anon / MiB,
    median(r.added) / MiB, median(r.returned) / MiB,
  ]);
  writeResults('lifecycle', { runs: RUNS, idleRss: idle.rss, idleAnon: idle.anon, finalRss: final.rss, finalAnon: final.anon, fresh, rows }, [
    {
      title: `First request (loads the model) against warm ones, and memory: a load in a fresh server, then the median of ${RUNS} load/unload cycles in one server`,
      columns: [
        'model', 'files (MiB)', 'cold request (ms)', 'warm request (ms)', 'cold / warm', 'RSS added by the load, fresh server (MiB)', 'added / files', 'of which anonymous (MiB)',
        'RSS added by a load in the cycles (MiB)', 'RSS given back by the unload (MiB)',
      ],
      rows: table,
    },
    {
      title: 'Server RSS with no model loaded',
      columns: ['at start (MiB)', 'anonymous', 'after the runs, all unloaded (MiB)', 'anonymous'],
      rows: [[idle.rss / MiB, idle.anon / MiB, final.rss / MiB, final.anon / MiB]],
    },
  ], [
    'Each model runs in one worker (a chat model\'s token-counting worker starts on its first count_tokens, which this bench does not send). Goal (issue 20): a loaded model costs at most 1.3x its files plus under 60 MB per worker; the server with nothing loaded idles under 150 MB.',
    values.tsx ? 'Server: the TypeScript source under tsx (`npm run dev`).' : 'Server: compiled, as `npm start` runs it (`node dist/src/main.js`).',
    'Anonymous memory is what the process itself holds (heaps, arenas, copies of weights); the rest of the RSS is mapped files (code, and weights onnxruntime maps from the model files: shared between workers and with the page cache, and reclaimable).',
  ]);
} finally {
  await server.stop();
}

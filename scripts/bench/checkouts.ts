/**
 * This checkout's server against another checkout's (an older commit's worktree), interleaved in one
 * run on the same models: what a change costs or gains end to end (HTTP, the chat layer, the worker,
 * the engine). Each round starts each server fresh (compiled, as `npm start` runs it), in alternating
 * order, and measures on the bundled chat model:
 * - one stream at a time: time to first token and decode tokens/s (medians of `--streams`);
 * - `--concurrent` streams at once: aggregate decode tokens/s.
 * Ratios are this checkout over the base, per round, then the median over rounds.
 *
 *   git worktree add /tmp/base <commit> && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   npm run bench:checkouts -- --base /tmp/base [--here /tmp/head] [--rounds 3 --streams 5 --concurrent 8 --tokens 128]
 *
 * Results: bench/results/checkouts.{json,md}, naming the CPU, its instruction sets and both commits.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { median, writeResults } from './report.js';
import { startServerProcess, streamOnce, type StreamRun } from './server-process.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    here: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    streams: { type: 'string', default: '5' },
    concurrent: { type: 'string', default: '8' },
    tokens: { type: 'string', default: '128' },
    model: { type: 'string', default: 'tiny-qwen3-random' },
  },
});
if (!values.base) throw new Error('--base DIR: the other checkout (a git worktree of the commit to compare against)');
/** This checkout, or another worktree standing for it (e.g. a clean one of HEAD while the tree has edits). */
const HERE = path.resolve(values.here ?? process.cwd());
const BASE = path.resolve(values.base);
const ROUNDS = Number(values.rounds);
const STREAMS = Number(values.streams);
const CONCURRENT = Number(values.concurrent);
const TOKENS = Number(values.tokens);
const MODEL = values.model;
/** A prompt on which the bundled model writes its whole output without an end token (checked: streamOnce rejects otherwise). */
const PROMPT = 'Tell me about rivers and the sea, please.';

interface Measure {
  ttftMs: number;
  decodeTps: number;
  aggregateTps: number;
}

async function measure(root: string): Promise<Measure> {
  const server = await startServerProcess(['--models-dir', path.resolve('models'), '--hf-cache', 'false'], { BUILD_BUNDLED_MODELS: 'false' }, { compiled: true, root });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENT });
  try {
    await streamOnce(server.url, MODEL, PROMPT, TOKENS, agent); // warm-up
    const single: StreamRun[] = [];
    for (let i = 0; i < STREAMS; i++) single.push(await streamOnce(server.url, MODEL, `${PROMPT} (${i})`, TOKENS, agent));
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => streamOnce(server.url, MODEL, `${PROMPT} [${i}]`, TOKENS, agent)));
    const seconds = (performance.now() - started) / 1000;
    return { ttftMs: median(single.map((r) => r.ttftMs)), decodeTps: median(single.map((r) => r.decodeTps)), aggregateTps: (CONCURRENT * TOKENS) / seconds };
  } finally {
    agent.destroy();
    await server.stop();
  }
}

const commitOf = (root: string) => execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();

const rounds: Array<{ here: Measure; base: Measure }> = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which goes first, so neither always runs on a cooler (or warmer) machine.
  const order = round % 2 === 0 ? ['base', 'here'] as const : ['here', 'base'] as const;
  const result: Partial<Record<'here' | 'base', Measure>> = {};
  for (const which of order) result[which] = await measure(which === 'here' ? HERE : BASE);
  rounds.push(result as { here: Measure; base: Measure });
  console.log(`round ${round + 1}: ${JSON.stringify(result)}`);
}
const ratio = (key: keyof Measure) => median(rounds.map((r) => r.here[key] / r.base[key]));
const med = (which: 'here' | 'base', key: keyof Measure) => median(rounds.map((r) => r[which][key]));
const commits = { here: commitOf(HERE), base: commitOf(BASE) };
writeResults('checkouts', { commits, model: MODEL, tokens: TOKENS, streams: STREAMS, concurrent: CONCURRENT, rounds }, [{
  title: `${commits.here} (this checkout) against ${commits.base}, ${MODEL}, ${TOKENS} output tokens, medians of ${ROUNDS} interleaved rounds`,
  columns: ['measure', commits.base, commits.here, `ratio ${commits.here} / ${commits.base}`],
  rows: [
    ['time to first token, one stream (ms; lower is better)', med('base', 'ttftMs'), med('here', 'ttftMs'), ratio('ttftMs')],
    ['decode, one stream (tok/s)', med('base', 'decodeTps'), med('here', 'decodeTps'), ratio('decodeTps')],
    [`decode, ${CONCURRENT} streams at once (aggregate tok/s)`, med('base', 'aggregateTps'), med('here', 'aggregateTps'), ratio('aggregateTps')],
  ],
}], ['Both servers compiled (npm start), started fresh for each measurement, on the same model folders; the prompt cache on as each ships it (each prompt differs, so it is a miss).']);
console.log(`ttft ${ratio('ttftMs').toFixed(3)}, decode ${ratio('decodeTps').toFixed(3)}, aggregate ${ratio('aggregateTps').toFixed(3)} (this checkout / base)`);

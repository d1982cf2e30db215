/**
 * Time of one sample() call on a Qwen-sized logits row (151,936 entries): the sampler as it was
 * (test/helpers/former-sampler.ts: insertion top-k up to k 256, else a full sort) against
 * src/engines/sampler.ts, in the same run, per plan. The row is normal noise times --scale (3: a nucleus of ~7,400 tokens at top_p 0.9;
 * 1: flatter, ~93,000). The sampler runs on the thread that decodes the whole batch, so its time is
 * added to every running generation's time per token.
 *
 *   npx tsx scripts/bench/sampler.ts [--runs 30 --scale 3]
 */
import { parseArgs } from 'node:util';
import { sample, type SamplingPlan } from '../../src/engines/sampler.js';
import { formerSample, seededRandom } from '../../test/helpers/former-sampler.js';
import { median, writeResults } from './report.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' }, scale: { type: 'string', default: '3' } } });
const RUNS = Number(values.runs);
const SCALE = Number(values.scale);
const VOCAB = 151_936;

const random = seededRandom(1);
const logits = Float32Array.from({ length: VOCAB }, () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()) * SCALE);
const base = { doSample: true, temperature: 1, topK: 0, topP: 1, random: seededRandom(2) };
const PLANS: Array<[string, SamplingPlan]> = [
  ['greedy', { ...base, doSample: false }],
  ['top_k 40', { ...base, topK: 40 }],
  ['top_k 0 (all)', base],
  ['top_k 1000', { ...base, topK: 1000 }],
  ['top_k 5000', { ...base, topK: 5000 }],
  ['top_p 0.9', { ...base, topP: 0.9 }],
  ['top_k 40, top_p 0.9', { ...base, topK: 40, topP: 0.9 }],
];

function time(fn: () => number): number {
  for (let i = 0; i < 3; i++) fn(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

const rows = PLANS.map(([name, plan]) => {
  const before = time(() => formerSample(logits, plan));
  const after = time(() => sample(logits, plan));
  return { plan: name, formerMs: before, newMs: after, speedup: before / after };
});
for (const r of rows) console.log(`${r.plan.padEnd(22)} former ${r.formerMs.toFixed(3).padStart(8)} ms   new ${r.newMs.toFixed(3).padStart(7)} ms   ${r.speedup.toFixed(1)}x`);
writeResults('sampler', { vocab: VOCAB, scale: SCALE, runs: RUNS, rows }, [
  { title: `sample() on a ${VOCAB}-wide row (normal x ${SCALE}), median of ${RUNS}`, columns: ['plan', 'former (ms)', 'new (ms)', 'speed-up'], rows: rows.map((r) => [r.plan, r.formerMs, r.newMs, `${r.speedup.toFixed(1)}x`]) },
]);

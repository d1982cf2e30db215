/**
 * Where a decoding step's time goes, per operator type, at a given context length (issue 18: "let
 * the profile choose"). Loads a chat model's graph as the server prepares it (src/engines/onnx/graph/
 * prepare-graph.ts: fused or model-builder attention, last-position logits, weights in place) in an
 * onnxruntime-node session with profiling on, and beside it its decoding-step graph, which reads the
 * cache in place (src/engines/onnx/graph/in-place-decode.ts; prefilled by the first); prefills `--context` tokens in chunks
 * the way the batch decoder does (append mode: the cache lives in JavaScript with room to grow),
 * then runs `--steps` one-token steps, alternating between the variants, and sums onnxruntime's
 * per-node times over those steps only.
 *
 *   npm run bench:profile-decode -- --model bench/models/smollm2-135m-shape-mb-q4 --context 8160
 *
 * Writes bench/results/profile-decode-<model>-<context>.md/.json: prefill time, wall and kernel time
 * per step, the costliest operator types, and how far the variants' logits differ.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { describeModel } from '../../src/models/registry.js';
import { prepareGraph } from '../../src/engines/onnx/graph/prepare-graph.js';
import { DTYPE_SUFFIX } from '../../src/models/manifest.js';
import { writeResults, type Table } from './report.js';
import { KvBatch } from '../../src/engines/onnx/decode/kv-batch.js';
import { halfToFloat, type CacheShape, type OrtTensor } from '../../src/engines/onnx/tensors.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    context: { type: 'string', default: '2048' },
    steps: { type: 'string', default: '16' },
    chunk: { type: 'string', default: '512' },
    threads: { type: 'string', default: '2' },
    /** Wall time only, profiling off: onnxruntime's profiler costs every node, so a graph of more nodes looks slower under it than it is. */
    'wall-only': { type: 'boolean', default: false },
    /** Other decoding-step graphs to compare, comma-separated, e.g. ones an earlier version wrote (kept beside the export: weights are referenced by relative path). */
    'extra-step': { type: 'string' },
  },
});
if (!values.model) throw new Error('--model DIR');
const CONTEXT = Number(values.context);
const STEPS = Number(values.steps);
const CHUNK = Number(values.chunk);

const info = describeModel(path.resolve(values.model), 1);
// The graph as the server prepares it, and its decoding-step graph (src/engines/onnx/graph/in-place-decode.ts),
// whose session takes the steps only: the served graph prefills its cache.
const prepared = prepareGraph(info, { lastLogits: true, fusedAttention: true });
console.log(prepared.notes.join('\n'));
const variants: Array<{ name: string; file: string; prefillWith?: number }> = [
  { name: 'GroupQueryAttention', file: prepared.modelFileName ? path.join(info.dir, 'onnx', `${prepared.modelFileName}${DTYPE_SUFFIX[info.dtype]}.onnx`) : path.join(info.dir, info.onnxFile) },
  ...(prepared.decodeStepFile ? [{ name: 'step graph (in place)', file: prepared.decodeStepFile, prefillWith: 0 }] : []),
  ...(values['extra-step']?.split(',') ?? []).map((file) => ({ name: path.basename(file), file: path.resolve(file), prefillWith: 0 })),
];
const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-decode-'));
const sessions = await Promise.all(variants.map((v, i) => ort.InferenceSession.create(v.file, {
  intraOpNumThreads: Number(values.threads),
  interOpNumThreads: 1,
  enableProfiling: !values['wall-only'],
  profileFilePrefix: path.join(profileDir, `v${i}`),
})));
const session = sessions[0]!;

const config = JSON.parse(fs.readFileSync(path.join(info.dir, 'config.json'), 'utf8')) as Record<string, number>;
const pastType = (session.inputMetadata as ReadonlyArray<{ name: string; type?: string }> | undefined)?.find((m) => m.name === 'past_key_values.0.key')?.type;
const shape: CacheShape = {
  layers: session.inputNames.filter((n) => /^past_key_values\.\d+\.key$/.test(n)).length,
  kvHeads: config.num_key_value_heads ?? config.num_attention_heads!,
  headDim: config.head_dim ?? config.hidden_size! / config.num_attention_heads!,
  dtype: pastType === 'float16' ? 'float16' : 'float32',
};
const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);
const caches = sessions.map(() => KvBatch.prefill(shape, 'append', CONTEXT + STEPS));

/** Each variant's logits of its last pass, to check that the variants compute the same. */
const lastLogits: Float32Array[] = [];
async function pass(v: number, ids: number[]): Promise<number> {
  const kv = caches[v]!;
  const start = kv.length;
  const feeds = {
    input_ids: i64(ids, [1, ids.length]),
    position_ids: i64(ids.map((_, i) => start + i), [1, ids.length]),
    attention_mask: kv.stepMask(ids.length),
    ...kv.pastFeeds(),
  } as Record<string, ort.Tensor>;
  const t0 = performance.now();
  const runner = ids.length > 1 && variants[v]!.prefillWith !== undefined ? variants[v]!.prefillWith! : v;
  runs[runner]!++;
  const out = (await sessions[runner]!.run(feeds, kv.fetches!)) as unknown as Record<string, OrtTensor>;
  const ms = performance.now() - t0;
  kv.advanceFrom(out, ids.length);
  lastLogits[v] = out.logits!.type === 'float16' ? halfToFloat(out.logits!.data as Uint16Array) : (out.logits!.data as Float32Array);
  return ms;
}

const vocab = config.vocab_size!;
const runs = sessions.map(() => 0);
const token = (i: number) => (i * 7919 + 13) % vocab;
const prefill: number[] = sessions.map(() => 0);
for (let at = 0; at < CONTEXT; at += CHUNK) {
  for (let v = 0; v < sessions.length; v++) prefill[v]! += await pass(v, Array.from({ length: Math.min(CHUNK, CONTEXT - at) }, (_, i) => token(at + i)));
}
const prefillCalls = [...runs];
// Steps alternate between the variants, so load on the shared machine falls on both alike.
const wall: number[][] = sessions.map(() => []);
for (let s = 0; s < STEPS; s++) for (let v = 0; v < sessions.length; v++) wall[v]!.push(await pass(v, [token(CONTEXT + s)]));
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;

type Event = { cat: string; name: string; dur: number; ts: number; args?: { op_name?: string } };
const perOp = sessions.map((session, v) => {
  if (values['wall-only']) return new Map<string, number>();
  session.endProfiling();
  const file = path.join(profileDir, fs.readdirSync(profileDir).find((f) => f.startsWith(`v${v}`) && f.endsWith('.json'))!);
  const events = JSON.parse(fs.readFileSync(file, 'utf8')) as Event[];
  // model_run events mark each run; node events from the first step's run on belong to steps.
  const firstStep = events.filter((e) => e.cat === 'Session' && e.name === 'model_run')[prefillCalls[v]!]!;
  const byOp = new Map<string, number>();
  for (const e of events) {
    if (e.cat !== 'Node' || e.ts < firstStep.ts || !e.name.endsWith('_kernel_time')) continue;
    byOp.set(e.args?.op_name ?? '?', (byOp.get(e.args?.op_name ?? '?') ?? 0) + e.dur / 1000 / STEPS);
  }
  return byOp;
});
const ops = [...new Set(perOp.flatMap((m) => [...m.keys()]))].sort((a, b) => Math.max(...perOp.map((m) => m.get(b) ?? 0)) - Math.max(...perOp.map((m) => m.get(a) ?? 0)));
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i]!)), 0);
const largest = Math.max(...lastLogits[0]!.map(Math.abs));
const table: Table = {
  title: `${path.basename(info.dir)}: context ${CONTEXT} (prefill in chunks of ${CHUNK}), ${STEPS} steps alternating, KV ${shape.dtype}, ${values.threads} threads${values['wall-only'] ? ', profiling off' : ''}; ms`,
  columns: ['', ...variants.map((v) => v.name)],
  rows: [
    ['prefill, all chunks', ...prefill],
    ['step, wall (median)', ...wall.map(median)],
    ...(values['wall-only'] ? [] : [['step, kernels', ...perOp.map((m) => [...m.values()].reduce((a, b) => a + b, 0))]]),
    ...ops.slice(0, 12).map((op) => [`step, ${op}`, ...perOp.map((m) => m.get(op) ?? 0)]),
  ],
};
const notes = variants.slice(1).map((v, i) => `${v.name}: the last step's logits differ from ${variants[0]!.name}'s by at most ${maxDiff(lastLogits[0]!, lastLogits[i + 1]!).toExponential(2)} (${(maxDiff(lastLogits[0]!, lastLogits[i + 1]!) / largest).toExponential(2)} of the largest logit).`);
writeResults(`profile-decode-${path.basename(info.dir)}-${CONTEXT}${values['wall-only'] ? '-wall' : ''}`, { context: CONTEXT, chunk: CHUNK, steps: STEPS, variants: variants.map((v) => v.name), prefill, wall, perOp: perOp.map((m) => Object.fromEntries(m)) }, [table], notes);
console.log(table.title);
for (const row of table.rows) console.log(row.map((c) => (typeof c === 'number' ? c.toFixed(2) : c)).join(' | '));
console.log(notes.join('\n'));
fs.rmSync(profileDir, { recursive: true, force: true });

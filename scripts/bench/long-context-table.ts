/**
 * Issue 18's one table, kept across runs: every `bench:longctx` run adds its rows (project /
 * llama.cpp ratios measured in that run, for each subject, engine variant and context) to
 * bench/results/long-context-table.json, replacing the rows of the same subject, variant and
 * context, and rewrites bench/results/long-context-table.md: the whole table (both shapes, every form,
 * every context of the issue), each row with the run it comes from, its date and its load, and the
 * cells no run has measured yet named as such. The whole table in one run takes several hours on
 * a 2-core machine; this way each run, of any part, lands in the same table.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describeMachine, RESULTS_DIR, type Machine } from './report.js';

export interface TableRow {
  subject: string;
  /** "project", or a compared configuration of it ("project, GroupQueryAttention decode"). */
  engine: string;
  llamaFile: string;
  /** Context tokens asked for, or e.g. "32 × 8 seq" for concurrent sequences. */
  context: string;
  /** The prompt's tokens where the model's window made them fewer than asked (8192 -> 8168). */
  tokens?: number;
  decodeRatio: number;
  bestDecodeRatio: number;
  ttftRatio?: number;
  /** The fastest first token over the fastest (the least disturbed runs, as bestDecodeRatio). */
  bestTtftRatio?: number;
  rssRatio?: number;
  projectTps: number;
  llamaTps: number;
  /** Best decode tok/s over the bandwidth bound measured in the run (one sequence): the project's, llama.cpp's. */
  boundFraction?: number;
  llamaBoundFraction?: number;
  /** The result file the row comes from, with its date and load average (1 min) at the start. */
  run: string;
  date: string;
  /** The commit the run measured (`+` when the work tree had changes). */
  commit: string;
  load: number;
  /** Load average (1 min) when the row's measurements ended: other work on the shared cores during them. */
  loadAfter?: number;
  /**
   * The machine the run measured on: CPU model, the instruction sets that matter (AVX2, AVX-512, VNNI,
   * AMX), GPU. Rows of runs before it was recorded take it from their run's result file where that
   * file is still the run's (its CPU model and memory; instruction sets and GPU not recorded then).
   */
  machine?: Machine;
}

const NAME = 'long-context-table';

/**
 * The checked-out commit, `+` when the work tree has changes (what a row was measured on); the
 * benchmarks' own results (bench/results, which every run rewrites) do not count.
 */
export function currentCommit(): string {
  const run = (args: string[]) => spawnSync('git', args, { encoding: 'utf8' }).stdout.trim();
  return `${run(['rev-parse', '--short', 'HEAD']) || 'unknown'}${run(['status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results']) ? '+' : ''}`;
}

/** Adds `rows` to the kept table (replacing the same subject, engine and context) and rewrites it. */
export function recordRows(rows: TableRow[], layout: { subjects: string[]; contexts: number[]; concurrency: number }): void {
  const file = path.join(RESULTS_DIR, `${NAME}.json`);
  const key = (r: TableRow) => `${r.subject}\u0000${r.engine}\u0000${r.context}`;
  const kept = new Map<string, TableRow>();
  if (fs.existsSync(file)) for (const row of JSON.parse(fs.readFileSync(file, 'utf8')).rows as TableRow[]) kept.set(key(row), row);
  for (const row of rows) kept.set(key(row), row);
  for (const row of kept.values()) row.machine ??= machineOfRun(row);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ benchmark: NAME, rows: [...kept.values()] }, null, 2) + '\n');

  const contexts = [...layout.contexts.map(String), ...(layout.concurrency > 1 ? [`${layout.contexts[0]} × ${layout.concurrency} seq`] : [])];
  const order = (r: TableRow) => [layout.subjects.indexOf(r.subject), contextOrder(r.context, contexts), r.engine === 'project' ? 0 : 1] as const;
  const sorted = [...kept.values()].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || a.engine.localeCompare(b.engine);
  });
  const missing = layout.subjects.flatMap((s) => contexts.filter((c) => !kept.has(`${s}\u0000project\u0000${c}`)).map((c) => `${s} at ${c}`));
  const f = (v: number | undefined) => (v === undefined ? '' : v.toFixed(2));
  const machines = machineLabels(sorted);
  const gguf = (subject: string) => /-gguf-/.test(subject);
  const md = [
    `# ${NAME}`,
    '',
    ...summary(kept, { ...layout, subjects: layout.subjects.filter((s) => !gguf(s)) }, machines, ONNX_GOALS),
    ...summary(kept, { ...layout, subjects: layout.subjects.filter(gguf) }, machines, GGUF_GOALS),
    '## Machines',
    '',
    'Each row names the machine its run measured on (CPU model, the instruction sets llama.cpp\'s and onnxruntime\'s kernels choose by, GPU: the benchmark runs both engines on the CPU):',
    '',
    ...[...new Set(machines.values())].map((label) => `- ${label}: ${[...machines].find(([, l]) => l === label)![0]}`),
    '',
    '## Every row',
    '',
    'Project / llama.cpp, each row measured in the run it names (same machine, same run, interleaved; see that run\'s file for its setup). Decode: higher is better; TTFT and peak RSS: lower is better. Bandwidth bound: the memory copy bandwidth measured in the run over the bytes one decoded token reads (weights but the embedding table, plus the KV cache at that context, each engine its own). Written by `npm run bench:longctx` (scripts/bench/long-context-table.ts), which adds each run\'s rows.',
    '',
    '| subject | context | engine | llama.cpp file | decode ratio (medians) | decode ratio (best runs) | project / llama.cpp tok/s | best / bandwidth bound (llama.cpp\'s) | TTFT ratio (best runs) | peak RSS ratio | machine | run · date · commit · load (at start → after the row) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...sorted.map((r) => `| ${r.subject} | ${r.context}${r.tokens ? ` (${r.tokens})` : ''} | ${r.engine} | ${r.llamaFile} | ${f(r.decodeRatio)} | ${f(r.bestDecodeRatio)} | ${r.projectTps.toFixed(1)} / ${r.llamaTps.toFixed(1)} | ${r.boundFraction === undefined ? '' : `${f(r.boundFraction)} (${f(r.llamaBoundFraction)})`} | ${f(r.ttftRatio)}${r.bestTtftRatio === undefined ? '' : ` (${f(r.bestTtftRatio)})`} | ${f(r.rssRatio)} | ${machineLabel(machines, r)} | ${r.run} · ${r.date.slice(0, 16).replace('T', ' ')} · ${r.commit} · ${r.load.toFixed(1)}${r.loadAfter === undefined ? '' : ` → ${r.loadAfter.toFixed(1)}`} |`),
    '',
    missing.length ? `Not measured yet: ${missing.join(', ')}.` : 'Every subject and context of the table has been measured.',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(RESULTS_DIR, `${NAME}.md`), md);
}

/** The goals of each summary: the ONNX engine against llama.cpp (issue 18), and the GGUF engine against llama.cpp on the same file (issue 29). */
interface Goals {
  title: string;
  intro: string;
  decode: string;
  sequences: string;
  bound: string;
  ttft: string;
  rss: string;
  /** The contexts whose TTFT the summary shows. */
  ttftFrom: number;
}

const ONNX_GOALS: Goals = {
  title: 'Summary: the project as configured, against llama.cpp',
  intro: 'The ONNX engine on the ONNX subjects against llama.cpp on the same weights converted to GGUF.',
  decode: '>= 1.0', sequences: '>= 1.0', bound: '>= 0.6', ttft: '<= 1.0', rss: '<= 1.2', ttftFrom: 512,
};

const GGUF_GOALS: Goals = {
  title: 'Summary: the server serving a GGUF, against llama.cpp on the same file',
  intro: 'The server on its llama.cpp engine (src/engines/llama/, over HTTP/SSE) against node-llama-cpp driving the same GGUF directly: what the server adds around the same kernels (scripts/bench/gguf-subject.ts).',
  decode: '>= 0.95', sequences: '>= 0.95', bound: 'no goal', ttft: '<= 1.05', rss: '<= 1.1', ttftFrom: 0,
};

/**
 * One line per subject: the project as configured (the `project` rows) against llama.cpp at every
 * context, each ratio from the run its row names; "–" where no run has measured it; the machines its
 * rows ran on.
 */
function summary(kept: Map<string, TableRow>, layout: { subjects: string[]; contexts: number[]; concurrency: number }, machines: Map<string, string>, goals: Goals): string[] {
  if (layout.subjects.length === 0) return [];
  const at = (subject: string, context: string) => kept.get(`${subject}\u0000project\u0000${context}`);
  const cells = (subject: string, contexts: readonly number[], value: (r: TableRow) => number | undefined, best?: (r: TableRow) => number | undefined) =>
    contexts.map((c) => {
      const v = at(subject, String(c));
      if (!v || value(v) === undefined) return '–';
      const b = best?.(v);
      return `${value(v)!.toFixed(2)}${b === undefined ? '' : ` (${b.toFixed(2)})`}`;
    }).join(' / ');
  const all = layout.contexts;
  const prompts = all.filter((c) => c >= goals.ttftFrom);
  const seq = `${all[0]} × ${layout.concurrency} seq`;
  const boundAt = all.includes(2048) ? 2048 : all.at(-1)!;
  return [
    `## ${goals.title}`,
    '',
    `${goals.intro} Ratios project / llama.cpp, medians, each from the run of its row below (the goal in each header): decode at ${all.join(' / ')} tokens of context and with ${layout.concurrency} sequences at once; the best decode run over the bandwidth bound at ${boundAt} tokens (llama.cpp's own in brackets); time to first token for ${prompts.join(' / ')}-token prompts (the fastest over the fastest in brackets, where recorded: on shared cores a prefill of thousands of tokens is often disturbed); peak RSS. Machine: the machines its rows ran on (listed under Machines).`,
    '',
    `| subject | llama.cpp file | decode (${goals.decode}) at ${all.join(' / ')} | ${layout.concurrency} sequences at ${all[0]} (${goals.sequences}) | best / bound at ${boundAt} (${goals.bound}; llama.cpp's) | TTFT (${goals.ttft}) at ${prompts.join(' / ')} | peak RSS (${goals.rss}) at ${all.join(' / ')} | machine |`,
    '|---|---|---|---|---|---|---|---|',
    ...layout.subjects.map((subject) => {
      const rows = [...all.map((c) => at(subject, String(c))), at(subject, seq)].filter((r): r is TableRow => r !== undefined);
      const bound = at(subject, String(boundAt));
      const on = [...new Set(rows.map((r) => machineLabel(machines, r)))].join(', ') || '–';
      return `| ${subject} | ${rows[0]?.llamaFile ?? '–'} | ${cells(subject, all, (r) => r.decodeRatio)} | ${at(subject, seq)?.decodeRatio.toFixed(2) ?? '–'} | ${bound?.boundFraction === undefined ? '–' : `${bound.boundFraction.toFixed(2)} (${bound.llamaBoundFraction!.toFixed(2)})`} | ${cells(subject, prompts, (r) => r.ttftRatio, (r) => r.bestTtftRatio)} | ${cells(subject, all, (r) => r.rssRatio)} | ${on} |`;
    }),
    '',
  ];
}

/** Labels M1, M2, ... for the distinct machines of the rows, in the rows' order (key: the machine in one line). */
function machineLabels(rows: TableRow[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const row of rows) {
    const line = row.machine ? describeMachine(row.machine) : 'not recorded';
    if (!labels.has(line)) labels.set(line, `M${labels.size + 1}`);
  }
  return labels;
}

const machineLabel = (labels: Map<string, string>, row: TableRow) => labels.get(row.machine ? describeMachine(row.machine) : 'not recorded')!;

/**
 * A row's machine from its run's result file (bench/results/<run>.json) when that file is still the
 * run's: written within 12 hours after the row's date (a later run of the same name rewrites it).
 * Instruction sets and GPU only where the file recorded them.
 */
function machineOfRun(row: TableRow): Machine | undefined {
  const file = path.join(RESULTS_DIR, `${row.run}.json`);
  if (!fs.existsSync(file)) return undefined;
  try {
    const json = JSON.parse(fs.readFileSync(file, 'utf8')) as { date?: string; machine?: Machine };
    const after = Date.parse(json.date ?? '') - Date.parse(row.date);
    if (!json.machine || !(after >= 0 && after <= 12 * 3600_000)) return undefined;
    const { cpus, cpuModel, memoryGiB, cpuFlags, gpu } = json.machine;
    return { cpus, cpuModel, memoryGiB, ...(cpuFlags ? { cpuFlags } : {}), ...(gpu ? { gpu } : {}) };
  } catch {
    return undefined;
  }
}

function contextOrder(context: string, contexts: string[]): number {
  const at = contexts.indexOf(context);
  return at === -1 ? contexts.length + Number.parseInt(context, 10) : at;
}

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
import { RESULTS_DIR } from './report.js';

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
  const md = [
    `# ${NAME}`,
    '',
    ...summary(kept, layout),
    '## Every row',
    '',
    'Project / llama.cpp, each row measured in the run it names (same machine, same run, interleaved; see that run\'s file for its setup). Decode: higher is better; TTFT and peak RSS: lower is better. Bandwidth bound: the memory copy bandwidth measured in the run over the bytes one decoded token reads (weights but the embedding table, plus the KV cache at that context, each engine its own). Written by `npm run bench:longctx` (scripts/bench/long-context-table.ts), which adds each run\'s rows.',
    '',
    '| subject | context | engine | llama.cpp file | decode ratio (medians) | decode ratio (best runs) | project / llama.cpp tok/s | best / bandwidth bound (llama.cpp\'s) | TTFT ratio | peak RSS ratio | run · date · commit · load |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...sorted.map((r) => `| ${r.subject} | ${r.context}${r.tokens ? ` (${r.tokens})` : ''} | ${r.engine} | ${r.llamaFile} | ${f(r.decodeRatio)} | ${f(r.bestDecodeRatio)} | ${r.projectTps.toFixed(1)} / ${r.llamaTps.toFixed(1)} | ${r.boundFraction === undefined ? '' : `${f(r.boundFraction)} (${f(r.llamaBoundFraction)})`} | ${f(r.ttftRatio)} | ${f(r.rssRatio)} | ${r.run} · ${r.date.slice(0, 16).replace('T', ' ')} · ${r.commit} · ${r.load.toFixed(1)} |`),
    '',
    missing.length ? `Not measured yet: ${missing.join(', ')}.` : 'Every subject and context of the table has been measured.',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(RESULTS_DIR, `${NAME}.md`), md);
}

/**
 * One line per subject: the project as configured (the `project` rows) against llama.cpp at every
 * context, each ratio from the run its row names; "–" where no run has measured it.
 */
function summary(kept: Map<string, TableRow>, layout: { subjects: string[]; contexts: number[]; concurrency: number }): string[] {
  const at = (subject: string, context: string) => kept.get(`${subject}\u0000project\u0000${context}`);
  const cells = (subject: string, contexts: readonly number[], value: (r: TableRow) => number | undefined) =>
    contexts.map((c) => {
      const v = at(subject, String(c));
      return v && value(v) !== undefined ? value(v)!.toFixed(2) : '–';
    }).join(' / ');
  const all = layout.contexts;
  const prompts = all.filter((c) => c >= 512);
  const seq = `${all[0]} × ${layout.concurrency} seq`;
  const boundAt = all.includes(2048) ? 2048 : all.at(-1)!;
  return [
    '## Summary: the project as configured, against llama.cpp',
    '',
    `Ratios project / llama.cpp, medians, each from the run of its row below (the goal in each header): decode at ${all.join(' / ')} tokens of context and with ${layout.concurrency} sequences at once; the best decode run over the bandwidth bound at ${boundAt} tokens (llama.cpp's own in brackets); time to first token for ${prompts.join(' / ')}-token prompts; peak RSS.`,
    '',
    `| subject | llama.cpp file | decode (>= 1.0) at ${all.join(' / ')} | ${layout.concurrency} sequences at ${all[0]} (>= 1.0) | best / bound at ${boundAt} (>= 0.6; llama.cpp's) | TTFT (<= 1.0) at ${prompts.join(' / ')} | peak RSS (<= 1.2) at ${all.join(' / ')} |`,
    '|---|---|---|---|---|---|---|',
    ...layout.subjects.map((subject) => {
      const any = all.map((c) => at(subject, String(c))).find(Boolean) ?? at(subject, seq);
      const bound = at(subject, String(boundAt));
      return `| ${subject} | ${any?.llamaFile ?? '–'} | ${cells(subject, all, (r) => r.decodeRatio)} | ${at(subject, seq)?.decodeRatio.toFixed(2) ?? '–'} | ${bound?.boundFraction === undefined ? '–' : `${bound.boundFraction.toFixed(2)} (${bound.llamaBoundFraction!.toFixed(2)})`} | ${cells(subject, prompts, (r) => r.ttftRatio)} | ${cells(subject, all, (r) => r.rssRatio)} |`;
    }),
    '',
  ];
}

function contextOrder(context: string, contexts: string[]): number {
  const at = contexts.indexOf(context);
  return at === -1 ? contexts.length + Number.parseInt(context, 10) : at;
}

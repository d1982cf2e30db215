/**
 * Shared bench helpers: statistics and writing results as JSON plus a Markdown table under
 * bench/results/ (one file pair per benchmark, overwritten by each run).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const RESULTS_DIR = path.resolve('bench', 'results');

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: number[]) => percentile(values, 50);

/** The instruction sets that decide CPU inference speed (llama.cpp's and onnxruntime's kernels pick by them), from /proc/cpuinfo. */
export function cpuFlags(): string[] {
  let flags: Set<string>;
  try {
    flags = new Set((/^flags\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').split(/\s+/));
  } catch {
    return ['unknown (no /proc/cpuinfo)'];
  }
  const wanted: Array<[string, string]> = [['avx2', 'AVX2'], ['fma', 'FMA'], ['avx512f', 'AVX512F'], ['avx512bw', 'AVX512BW'], ['avx512_vnni', 'AVX512-VNNI'], ['avx_vnni', 'AVX-VNNI'], ['avx512_bf16', 'AVX512-BF16'], ['amx_tile', 'AMX'], ['amx_int8', 'AMX-INT8'], ['asimd', 'NEON']];
  return wanted.filter(([flag]) => flags.has(flag)).map(([, name]) => name);
}

export function machine() {
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', cpuFlags: cpuFlags(), gpu: 'none used', memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version };
}

export interface Table {
  title: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

const cell = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(v < 10 ? 3 : 1)) : v);

export function writeResults(name: string, data: unknown, tables: Table[], notes: string[] = []): void {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const json = { benchmark: name, date: new Date().toISOString(), machine: machine(), data };
  fs.writeFileSync(path.join(RESULTS_DIR, `${name}.json`), JSON.stringify(json, null, 2) + '\n');
  const md = [
    `# ${name}`,
    '',
    `${json.date} · ${json.machine.cpus} × ${json.machine.cpuModel} (${json.machine.cpuFlags.join(', ') || 'no AVX2'}) · GPU: ${json.machine.gpu} · ${json.machine.memoryGiB} GiB · Node ${json.machine.node}`,
    '',
    ...notes.flatMap((n) => [n, '']),
    ...tables.flatMap((t) => [
      `## ${t.title}`,
      '',
      `| ${t.columns.join(' | ')} |`,
      `|${t.columns.map(() => '---').join('|')}|`,
      ...t.rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
      '',
    ]),
  ].join('\n');
  fs.writeFileSync(path.join(RESULTS_DIR, `${name}.md`), md);
  process.stdout.write(md + '\n');
}

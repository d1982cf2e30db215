/**
 * Shared bench helpers: statistics and writing results as JSON plus a Markdown table under
 * bench/results/ (one file pair per benchmark, overwritten by each run).
 */
import { spawnSync } from 'node:child_process';
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

/**
 * The machine's GPUs by name, or 'none': NVIDIA's driver lists its cards under /proc/driver/nvidia
 * (nvidia-smi names them when present); other vendors' cards as their DRM devices' PCI vendor. The
 * benchmarks run on the CPU (llama.cpp with gpu: false, onnxruntime's CPU provider): a GPU named here
 * was present, not used.
 */
export function gpus(): string {
  const smi = spawnSync('nvidia-smi', ['--query-gpu=name,memory.total', '--format=csv,noheader'], { encoding: 'utf8', timeout: 5000 });
  if (smi.status === 0 && smi.stdout.trim()) return smi.stdout.trim().split('\n').map((l) => `NVIDIA ${l.trim().replace(/^NVIDIA /, '')}`).join('; ');
  const found: string[] = [];
  try {
    for (const card of fs.readdirSync('/proc/driver/nvidia/gpus')) {
      const model = /^Model:\s*(.*)$/m.exec(fs.readFileSync(`/proc/driver/nvidia/gpus/${card}/information`, 'utf8'))?.[1];
      found.push(model ? `NVIDIA ${model.replace(/^NVIDIA /, '')}` : 'NVIDIA GPU');
    }
  } catch {
    // no NVIDIA driver
  }
  if (found.length) return found.join('; ');
  const VENDORS: Record<string, string> = { '0x1002': 'AMD GPU', '0x8086': 'Intel GPU', '0x10de': 'NVIDIA GPU' };
  try {
    for (const card of fs.readdirSync('/sys/class/drm').filter((c) => /^card\d+$/.test(c))) {
      const vendor = fs.readFileSync(`/sys/class/drm/${card}/device/vendor`, 'utf8').trim();
      if (VENDORS[vendor]) found.push(VENDORS[vendor]!);
    }
  } catch {
    // no DRM devices
  }
  return found.length ? found.join('; ') : 'none';
}

export interface Machine {
  cpus: number;
  cpuModel: string;
  /** The instruction sets that matter (cpuFlags()); absent in results written before they were recorded. */
  cpuFlags?: string[];
  /** The GPUs present, or 'none'; absent in results written before it was recorded. */
  gpu?: string;
  memoryGiB: number;
  node?: string;
}

export function machine(): Machine & { cpuFlags: string[]; gpu: string; node: string } {
  const gpu = gpus();
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown', cpuFlags: cpuFlags(), gpu: gpu === 'none' ? 'none' : `${gpu} (present, not used: CPU benchmarks)`, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version };
}

/** A machine in one line: `2 × AMD EPYC (AVX2, FMA) · GPU: none · 24 GiB`. */
export function describeMachine(m: Machine): string {
  const flags = m.cpuFlags === undefined ? 'instruction sets not recorded' : m.cpuFlags.join(', ') || 'no AVX2';
  const gpu = m.gpu === undefined ? 'GPU not recorded' : `GPU: ${m.gpu}`;
  return `${m.cpus} × ${m.cpuModel} (${flags}) · ${gpu} · ${m.memoryGiB} GiB`;
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
    `${json.date} · ${describeMachine(json.machine)} · Node ${json.machine.node}`,
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

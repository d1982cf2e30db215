/**
 * Memory of a benchmarked process tree (Linux /proc): the server runs a GGUF model in a child process
 * of its own, so its figures sum the tree.
 */
import fs from 'node:fs';

/** The process's children (Linux /proc/PID/task/TID/children). */
export const childrenOf = (pid: number): number[] =>
  fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));

/**
 * Peak RSS of a process and every process under it, in MiB: the sum of their peaks (VmHWM), an upper
 * bound of the peak they held together. The server runs a GGUF model in a child process of its own.
 */
export const peakOf = (pid: number): number => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024 + childrenOf(pid).reduce((sum, child) => sum + peakOf(child), 0);
};

/**
 * Proportional set size of a process and every process under it, in MiB, now (smaps_rollup): pages
 * shared between them (Node's own code, a model file both map) count once, where summed peaks count
 * them in each process.
 */
export const pssOf = (pid: number): number =>
  Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))![1]) / 1024 + childrenOf(pid).reduce((sum, child) => sum + pssOf(child), 0);


/** Resident KiB of each file a process maps (smaps), by path. */
function residentFiles(pid: number): Map<string, number> {
  const files = new Map<string, number>();
  let file: string | undefined;
  for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (mapping) file = mapping[1]!.startsWith('/') ? mapping[1] : undefined;
    else if (file && line.startsWith('Rss:')) files.set(file, (files.get(file) ?? 0) + Number(/(\d+)/.exec(line)![1]));
  }
  return files;
}

/**
 * peakOf with the files a child maps that its tree's root maps too (Node's own binary, the C and C++
 * libraries) counted once: the same physical pages, which summed peaks count in every process. Read
 * now, after the run; a model file only the child maps stays counted.
 */
export const peakSharedOnceOf = (pid: number): number => {
  const root = residentFiles(pid);
  const twice = (child: number): number => {
    let kib = 0;
    for (const [file, rss] of residentFiles(child)) if (root.has(file)) kib += Math.min(rss, root.get(file)!);
    return kib + childrenOf(child).reduce((sum, c) => sum + twice(c), 0);
  };
  return peakOf(pid) - childrenOf(pid).reduce((sum, c) => sum + twice(c), 0) / 1024;
};

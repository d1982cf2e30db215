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


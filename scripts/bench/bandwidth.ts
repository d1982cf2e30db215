/** Memory copy bandwidth, measured in the benchmark's own run (the bound on decode speed). */
import { Worker } from 'node:worker_threads';

/**
 * Memory bandwidth: large copies (read + write) through TypedArray.set (memmove), by one thread and by
 * one thread per core at once (onnxruntime reads weights with every core); best of 8 rounds each.
 */
export async function measureBandwidth(threads: number): Promise<number> {
  const size = 256 * 2 ** 20;
  const copier = `
    const { parentPort } = require('node:worker_threads');
    const src = new Float64Array(${size / 8}).fill(1), dst = new Float64Array(${size / 8});
    parentPort.on('message', () => { const t = performance.now(); dst.set(src); parentPort.postMessage([t, performance.now()]); });
    parentPort.postMessage('ready');`;
  const workers = Array.from({ length: threads }, () => new Worker(copier, { eval: true }));
  const next = (w: Worker) => new Promise<any>((resolve) => w.once('message', resolve));
  await Promise.all(workers.map(next));
  let best = 0;
  for (let round = 0; round < 8; round++) {
    const spans: Array<[number, number]> = await Promise.all(workers.map((w) => (w.postMessage('go'), next(w))));
    const seconds = (Math.max(...spans.map((s) => s[1])) - Math.min(...spans.map((s) => s[0]))) / 1000;
    best = Math.max(best, (2 * size * threads) / seconds);
  }
  await Promise.all(workers.map((w) => w.terminate()));
  return best;
}


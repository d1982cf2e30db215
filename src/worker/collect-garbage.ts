/**
 * A full garbage collection, on demand, in this thread's isolate: run once a model has loaded, so
 * what the load left behind (the parsed tokenizer.json, the graph bytes, the young generation a
 * 10 MB JSON.parse grew) is returned now rather than at some later major GC, which an idle worker
 * may not run for a long time. Measured (server RSS after a model's load, tokenizer source dropped):
 * bundled chat model 442 -> 419 MiB, bundled GloVe embedder 399 -> 348 MiB; the GC takes tens of ms.
 *
 * `gc` is exposed the way jest's leak detector does it (the flag set at run time, the function taken
 * from a fresh context), since a worker cannot be started with --expose-gc.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

let gc: (() => void) | undefined;

export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  gc();
}

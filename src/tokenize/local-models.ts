/**
 * How transformers.js loads models here: from local folders only, offline, and without reading
 * each file twice.
 *
 * transformers.js 4.3 on Node reads every file it loads twice. Its `FileResponse`
 * (local files) opens `fs.createReadStream(path)` in its constructor and starts it flowing into a
 * web ReadableStream that nothing reads: `text()`, `json()` and `arrayBuffer()` use readFile, and
 * model files go to onnxruntime by path. So after `from_pretrained` returns, a libuv thread keeps
 * reading the whole model (2.5 GB for Qwen2.5-0.5B in fp32, weights in external data) into memory
 * that is only freed by a later GC: seconds of CPU and gigabytes of RSS that slow the first requests.
 *
 * Installed once per thread: a read stream asked for by FileResponse's constructor is an empty one;
 * every other caller gets the real thing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { env } from '@huggingface/transformers';

let installed = false;

/**
 * Points transformers.js at a folder of model folders, offline (no hub, no cache), with the
 * workaround above: how the workers load models, and how benchmarks load their in-process baselines.
 */
export function useLocalModels(folder: string): void {
  avoidEagerFileReads();
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.useFSCache = false;
  env.localModelPath = path.resolve(folder) + path.sep;
}

export function avoidEagerFileReads(): void {
  if (installed) return;
  installed = true;
  const real = fs.createReadStream;
  const patched = function (this: unknown, ...args: Parameters<typeof fs.createReadStream>) {
    // Line 0 is the message, line 1 this function, line 2 its caller ("new _FileResponse" in the bundled build).
    const caller = new Error().stack?.split('\n')[2] ?? '';
    if (/\bnew _*FileResponse \(.*@huggingface[\\/]transformers/.test(caller)) return Readable.from([]) as unknown as fs.ReadStream;
    return real.apply(fs, args);
  };
  fs.createReadStream = patched as typeof fs.createReadStream;
}

/**
 * The ONNX engine's prompt cache with a disk tier: a KvStore (./kv-store.ts) in front of the prefix
 * cache (./prefix-cache.ts) that writes the entries worth keeping to the disk store
 * (src/cache/disk-store.ts) and, when a prompt shares a longer prefix with a file than with anything
 * in memory, reads that file back into the prefix cache before the lookup, so the prefix is handed
 * out (and reported as cache reads) as any other hit. This is what survives an idle unload (the
 * worker's memory goes with its thread) and a restart.
 *
 * When: an entry is queued for writing as it is stored (write-behind, one write at a time, off the
 * decoding thread's hot path: the arrays are never written after they cross, so they are written as
 * they are, without a copy); a queued entry that a later one extends before its turn is dropped (a
 * conversation's files are one per turn that reached the disk, not one per stored sequence). The
 * pool asks a worker to `flush` before it closes (src/worker/entry.ts).
 *
 * The payload is the entry's 2 x layers KV arrays one after another; its header's `meta` names the
 * dtype and length of each, and a file whose arrays do not fit this model's shape is ignored.
 *
 * Contract: as KvStore's (worker thread, synchronous lookup and store); a read from disk blocks the
 * decoder for the time it takes, which a prefill of the same tokens would cost many times over
 * (measured on a shared AMD EPYC under load: 240 MiB, a 10k-token Qwen2.5-0.5B fp32 prefix, read and
 * checked in 4.3 s, of which the SHA-256 alone takes ~0.2 s on an idle core).
 */
import type { PromptDiskStore } from '../../../cache/disk-store.js';
import type { StateFile } from '../../../cache/state-file.js';
import type { CacheShape, KvArray } from '../tensors.js';
import type { KvPrefix, KvStore } from './kv-store.js';
import type { PrefixCache } from './prefix-cache.js';

interface Queued {
  tokens: readonly number[];
  exact: number;
  kv: readonly KvArray[];
}

export interface DiskTierStats {
  /** Files read back into memory. */
  reads: number;
  /** Files written. */
  writes: number;
}

export class PrefixDiskTier implements KvStore {
  private readonly queue: Queued[] = [];
  private writing: Promise<void> | undefined;
  private readonly counts: DiskTierStats = { reads: 0, writes: 0 };

  constructor(
    private readonly memory: PrefixCache,
    private readonly disk: PromptDiskStore,
    private readonly shape: CacheShape,
  ) {}

  stats(): DiskTierStats {
    return { ...this.counts };
  }

  lookup(tokens: readonly number[]): KvPrefix | undefined {
    const onDisk = this.disk.longest(tokens, tokens.length - 1);
    if (onDisk && onDisk.length > this.memory.reusable(tokens)) {
      const file = this.disk.read(onDisk.entry);
      const kv = file && this.arraysOf(file);
      if (file && kv && this.memory.adopt(Array.from(file.tokens), kv, file.exact)) this.counts.reads++;
    }
    return this.memory.lookup(tokens);
  }

  reusable(tokens: readonly number[]): number {
    return Math.max(this.memory.reusable(tokens), this.disk.longest(tokens, tokens.length - 1)?.length ?? 0);
  }

  /** In memory only: the sequence's own `store` at its end writes what is worth the disk. */
  share(tokens: readonly number[], readKv: (from?: number) => KvArray[], exact?: number): void {
    this.memory.store(tokens, readKv, exact);
  }

  store(tokens: readonly number[], readKv: (from?: number) => KvArray[], exact?: number): void {
    this.memory.store(tokens, readKv, exact);
    if (!this.disk.worthKeeping(tokens.length)) return;
    const held = this.memory.holding(tokens);
    if (!held) return;
    // A queued write this entry extends is superseded: only the longer one is worth the disk.
    const superseded = this.queue.findIndex((q) => q.tokens.length <= held.tokens.length && q.tokens.every((t, i) => t === held.tokens[i]));
    const item = { tokens: held.tokens, exact: held.exact, kv: held.kv };
    if (superseded >= 0) this.queue[superseded] = item;
    else this.queue.push(item);
    this.writing ??= this.drain();
  }

  /** Resolves once every queued entry is written (or has failed, logged). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      for (let item = this.queue.shift(); item; item = this.queue.shift()) {
        const payload = item.kv.map((a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
        const meta = { dtype: this.shape.dtype ?? 'float32', arrays: item.kv.length, length: item.kv[0]?.length ?? 0 };
        if (await this.disk.write({ header: { exact: item.exact, meta }, tokens: item.tokens, payload })) this.counts.writes++;
      }
    } finally {
      this.writing = undefined;
    }
  }

  /** The file's KV arrays (copies in arrays of their own), or undefined when they do not fit this model. */
  private arraysOf(file: StateFile): KvArray[] | undefined {
    const { layers, kvHeads, headDim } = this.shape;
    const dtype = this.shape.dtype ?? 'float32';
    const length = kvHeads * file.tokens.length * headDim;
    const meta = file.meta as { dtype?: string; arrays?: number; length?: number } | undefined;
    const width = dtype === 'float16' ? 2 : 4;
    if (meta?.dtype !== dtype || meta.arrays !== 2 * layers || meta.length !== length || file.payload.byteLength !== 2 * layers * length * width) return undefined;
    return Array.from({ length: 2 * layers }, (_, t) => {
      const out = dtype === 'float16' ? new Uint16Array(length) : new Float32Array(length);
      new Uint8Array(out.buffer).set(file.payload.subarray(t * length * width, (t + 1) * length * width));
      return out;
    });
  }
}

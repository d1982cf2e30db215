/**
 * The prompt cache on disk: prefixes worth keeping (at least `minTokens` long) written as files of
 * ./state-file.ts under `dir/<key folder>/`, read back when a prompt starts with one, within a byte
 * budget over the whole directory (every model and engine together), least recently used first out.
 *
 * - Writes are atomic: a temp file in the same folder, renamed into place; a reader sees a whole
 *   file or none. Not fsynced: a file cut short by a power loss fails its checksum and is dropped.
 * - A file that extends another of its key (the next turn of a conversation) replaces it.
 * - Recency is the file's modification time (a hit touches it), so several workers and processes
 *   sharing the directory keep one order without talking to each other.
 * - A file that is not ours, of another key, truncated or damaged is logged, removed and never handed
 *   on. A full disk (ENOSPC, EDQUOT) stops this store's writing, not the server; reads go on.
 * - The index of a key's files (their token ids, read from their headers) is read once and again
 *   whenever the folder changes (its mtime), so files written by another worker are found.
 *
 * Contract: one store per engine instance, on its thread. `longest` and `read` are synchronous (the
 * ONNX engine's KV store seam is); `write` is asynchronous and callers queue their writes one at a time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import type { LogFn } from '../core/log.js';
import { keyFolder, prefixFileName } from './cache-key.js';
import { decodeStateFile, DIGEST, readHeader, sameKey, stateFileBody, StateFileError, type CacheKey, type StateFile, type StateHeader } from './state-file.js';

export type DiskLog = LogFn;

export interface DiskStoreOptions {
  /** The cache directory (every key's folder lies in it). */
  dir: string;
  /** Most bytes of files in the whole directory; 0: the store writes nothing. */
  budgetBytes: number;
  /** Shorter prefixes are not written (cheap to prefill again). */
  minTokens: number;
  key: CacheKey;
  log: DiskLog;
  /** Writes a file's body and then its checksum to `file` (tests put a full disk here); default: fs. */
  writeFile?: (file: string, body: readonly Uint8Array[]) => Promise<void>;
}

export interface DiskEntry {
  file: string;
  tokens: Uint32Array;
  exact: number;
}

/** Leftover temp files (a worker ended mid-write) older than this are removed by the next eviction. */
const STALE_TEMP_MS = 10 * 60_000;
const FILE_SUFFIX = '.lspc';
const isFull = (error: unknown) => ['ENOSPC', 'EDQUOT'].includes((error as NodeJS.ErrnoException)?.code ?? '');

/**
 * Hashing a slice of this size takes ~8 ms at 1 GB/s: the decoding thread (which writes the ONNX
 * engine's files) gets its turn between slices instead of waiting for a whole file's hash.
 */
const SLICE_BYTES = 8 * 1024 * 1024;

/** Writes a file's body then its SHA-256 (./state-file.ts), hashing each slice as it goes out. */
async function writeChunks(file: string, body: readonly Uint8Array[]): Promise<void> {
  const handle = await fs.promises.open(file, 'wx');
  const hash = createHash('sha256');
  const write = async (bytes: Uint8Array) => {
    let at = 0;
    while (at < bytes.byteLength) at += (await handle.write(bytes, at, bytes.byteLength - at)).bytesWritten;
  };
  try {
    for (const chunk of body) {
      for (let at = 0; at < chunk.byteLength; at += SLICE_BYTES) {
        const slice = chunk.subarray(at, at + SLICE_BYTES);
        hash.update(slice);
        await write(slice);
      }
    }
    await write(hash.digest());
  } finally {
    await handle.close();
  }
}

export class PromptDiskStore {
  readonly folder: string;
  private index: DiskEntry[] = [];
  /** The folder's mtime when the index was read (another value: read it again). */
  private indexedAt = -1;
  private writing = true;
  private readonly writeFile: (file: string, body: readonly Uint8Array[]) => Promise<void>;

  constructor(private readonly options: DiskStoreOptions) {
    this.folder = path.join(options.dir, keyFolder(options.key));
    this.writeFile = options.writeFile ?? writeChunks;
  }

  /** A prefix of this many tokens is worth writing (long enough, and the store still writes). */
  worthKeeping(tokens: number): boolean {
    return this.writing && this.options.budgetBytes > 0 && tokens >= this.options.minTokens;
  }

  /** The file sharing the longest prefix with `tokens` within its exact part, at most `limit` tokens. */
  longest(tokens: readonly number[], limit: number): { entry: DiskEntry; length: number } | undefined {
    let best: { entry: DiskEntry; length: number } | undefined;
    for (const entry of this.entries()) {
      const n = Math.min(limit, entry.exact);
      let length = 0;
      while (length < n && entry.tokens[length] === tokens[length]) length++;
      if (length > (best?.length ?? 0)) best = { entry, length };
    }
    return best;
  }

  /** Whether a file holds exactly these tokens (a write of them would only touch it). */
  holds(tokens: readonly number[]): DiskEntry | undefined {
    return this.entries().find((e) => e.tokens.length === tokens.length && e.tokens.every((t, i) => t === tokens[i]));
  }

  /** The file, checked (./state-file.ts decodeStateFile), and marked used; a bad one is logged, removed and undefined. */
  read(entry: DiskEntry): StateFile | undefined {
    try {
      const file = decodeStateFile(fs.readFileSync(entry.file), this.options.key);
      if (file.tokens.length !== entry.tokens.length) throw new StateFileError('its tokens changed since it was indexed');
      this.touch(entry.file);
      return file;
    } catch (error) {
      this.discard(entry.file, error);
      return undefined;
    }
  }

  /**
   * Writes one prefix's state (atomically), first making room within the budget. False when it was
   * not written: too large for the budget, the store stopped writing, or an error (logged).
   */
  async write(file: { header: Omit<StateHeader, 'key'>; tokens: readonly number[]; payload: readonly Uint8Array[] }): Promise<boolean> {
    if (!this.worthKeeping(file.tokens.length)) return false;
    const held = this.holds(file.tokens);
    if (held && held.exact >= file.header.exact) {
      this.touch(held.file);
      return true;
    }
    const body = stateFileBody({ header: { ...file.header, key: this.options.key }, tokens: file.tokens, payload: file.payload });
    const bytes = body.reduce((n, c) => n + c.byteLength, DIGEST);
    if (bytes > this.options.budgetBytes) return false;
    const target = path.join(this.folder, prefixFileName(file.tokens));
    const temp = path.join(this.folder, `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      fs.mkdirSync(this.folder, { recursive: true });
      this.evict(this.options.budgetBytes - bytes);
      await this.writeFile(temp, body);
      fs.renameSync(temp, target);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      if (isFull(error)) {
        this.writing = false;
        this.options.log('warn', `prompt cache: the disk is full under ${this.options.dir}; no more prefixes are written by this worker`, error);
      } else {
        this.options.log('warn', `prompt cache: a prefix of ${file.tokens.length} tokens was not written`, error);
      }
      return false;
    }
    this.index = this.index.filter((e) => e.file !== target);
    this.index.push({ file: target, tokens: Uint32Array.from(file.tokens), exact: file.header.exact });
    this.dropCovered(file.tokens, file.header.exact);
    return true;
  }

  /**
   * Removes this key's files that the one just written covers (its tokens start with theirs, as far
   * as their exact part): a conversation keeps one file, its latest turn, not one per turn.
   */
  private dropCovered(tokens: readonly number[], exact: number): void {
    for (const entry of this.index) {
      const n = entry.tokens.length;
      if (n >= tokens.length || entry.exact > exact) continue;
      let i = 0;
      while (i < n && entry.tokens[i] === tokens[i]) i++;
      if (i === n) fs.rmSync(entry.file, { force: true });
    }
    this.index = this.index.filter((e) => fs.existsSync(e.file));
  }

  /** A path for an engine's own scratch file in this key's folder (removed by the caller; a stale one by a later eviction). */
  scratchFile(): string {
    fs.mkdirSync(this.folder, { recursive: true });
    return path.join(this.folder, `.scratch.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  }

  /** A file that passed our checks but that the engine refused: logged and removed as a bad one. */
  reject(entry: DiskEntry, error: unknown): void {
    this.discard(entry.file, error);
  }

  /** Removes the least recently used files of the whole directory until at most `room` bytes remain. */
  private evict(room: number): void {
    const files: Array<{ file: string; bytes: number; used: number }> = [];
    for (const folder of safeList(this.options.dir)) {
      const at = path.join(this.options.dir, folder);
      for (const name of safeList(at)) {
        const file = path.join(at, name);
        const s = safeStat(file);
        if (!s?.isFile()) continue;
        if (name.endsWith('.tmp')) {
          if (Date.now() - s.mtimeMs > STALE_TEMP_MS) fs.rmSync(file, { force: true });
          continue;
        }
        if (name.endsWith(FILE_SUFFIX)) files.push({ file, bytes: s.size, used: s.mtimeMs });
      }
    }
    let total = files.reduce((n, f) => n + f.bytes, 0);
    for (const f of files.sort((a, b) => a.used - b.used)) {
      if (total <= room) break;
      fs.rmSync(f.file, { force: true });
      total -= f.bytes;
      this.index = this.index.filter((e) => e.file !== f.file);
    }
  }

  /** The key's files, read again when the folder changed since. */
  private entries(): DiskEntry[] {
    const mtime = safeStat(this.folder)?.mtimeMs ?? 0;
    if (mtime === this.indexedAt) return this.index;
    this.indexedAt = mtime;
    this.index = [];
    for (const name of safeList(this.folder)) {
      if (!name.endsWith(FILE_SUFFIX)) continue;
      const file = path.join(this.folder, name);
      try {
        const { header, tokens } = readHeader(readHead(file));
        if (!sameKey(header.key, this.options.key)) throw new StateFileError(`another key (${JSON.stringify(header.key)})`);
        this.index.push({ file, tokens, exact: header.exact });
      } catch (error) {
        this.discard(file, error);
      }
    }
    return this.index;
  }

  private discard(file: string, error: unknown): void {
    this.options.log('warn', `prompt cache: ${path.basename(file)} ignored and removed: ${(error as Error)?.message ?? error}`, error instanceof StateFileError ? undefined : error);
    fs.rmSync(file, { force: true });
    this.index = this.index.filter((e) => e.file !== file);
  }

  private touch(file: string): void {
    const now = new Date();
    try {
      fs.utimesSync(file, now, now);
    } catch {
      // Removed meanwhile (evicted by another worker): its use is simply not recorded.
    }
  }
}

/** The first bytes of a file: enough for its header and token ids (read in two steps: the header says how many). */
function readHead(file: string): Uint8Array {
  const fd = fs.openSync(file, 'r');
  try {
    const fixed = Buffer.alloc(16);
    fs.readSync(fd, fixed, 0, 16, 0);
    const headerLength = fixed.readUInt32LE(12);
    const size = fs.fstatSync(fd).size;
    const first = Buffer.alloc(Math.min(size, 16 + headerLength));
    fs.readSync(fd, first, 0, first.length, 0);
    // The token count is in the header; read up to the ids' end (a malformed header throws in readHeader).
    let n = 0;
    try {
      n = Number((JSON.parse(first.toString('utf8', 16)) as { tokens?: number }).tokens) || 0;
    } catch {
      return first;
    }
    const head = Buffer.alloc(Math.min(size, 16 + headerLength + 4 * n + 8));
    fs.readSync(fd, head, 0, head.length, 0);
    return head;
  } finally {
    fs.closeSync(fd);
  }
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

function safeStat(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

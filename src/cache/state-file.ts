/**
 * The format of one prompt-cache file on disk: a prefix's token ids and an engine's state for them
 * (the ONNX engine's KV arrays, or llama.cpp's sequence state file), wrapped in our own header and
 * closed by a checksum over everything before it. Nothing read from disk reaches an engine before
 * `decodeStateFile` has checked the magic, the format version, the key (model signature, engine
 * and its version, the variant: KV layout and settings that change the state's bytes), the lengths
 * and the checksum: node-llama-cpp's `loadStateFromFile` trusts its input and may crash its process
 * on a foreign or damaged file (issue 40).
 *
 * Layout (little-endian):
 *
 *   0        8   magic "LISPCACH"
 *   8        4   format version (FORMAT_VERSION)
 *   12       4   H: bytes of the header JSON (space-padded so the token ids start 8-aligned)
 *   16       H   header JSON: { key, tokens: n, exact, payloadBytes, meta }
 *   16+H     4n  token ids, uint32
 *   ...      P   payload (the engine's state), starting at an 8-byte boundary
 *   end-32   32  SHA-256 of every byte before it
 *
 * SHA-256 rather than a CRC: it runs at ~1 GB/s (measured on an AMD EPYC: 224 ms for 256 MiB, a
 * CRC32 123 ms), next to a prefill of minutes that a hit saves, and it tells a foreign file from ours
 * without doubt.
 */
import { createHash } from 'node:crypto';

export const MAGIC = Buffer.from('LISPCACH', 'latin1');
/** Changes when the layout above does: a file of another version is foreign (ignored and removed). */
export const FORMAT_VERSION = 1;
const FIXED = 16;
/** Bytes of the closing checksum. */
export const DIGEST = 32;

/** What a file must match to be used: the same model, engine, engine version and variant. */
export interface CacheKey {
  /** `onnx` or `llama`. */
  engine: string;
  /** onnxruntime-node's or node-llama-cpp's version: a state is not carried across versions. */
  engineVersion: string;
  /** A hash of the model's signature (src/models/signature.ts: its files' sizes and times). */
  model: string;
  /** What else changes the state's bytes: KV shape and type, the settings that alter the graph or context. */
  variant: string;
}

export interface StateHeader {
  key: CacheKey;
  /** Leading tokens whose state is what a cold prefill computes (the most a lookup may hand out). */
  exact: number;
  /** Engine-specific description of the payload (array lengths, dtype), checked by its reader. */
  meta?: Record<string, unknown>;
}

export interface StateFile extends StateHeader {
  tokens: Uint32Array;
  payload: Uint8Array;
}

/** A file that is not ours, not this key's, or damaged: why, for the log. */
export class StateFileError extends Error {}

const align8 = (n: number) => (n + 7) & ~7;

/** What a file holds before its checksum: header, token ids, payload, as chunks (the payload is not copied). */
export function stateFileBody(file: { header: StateHeader; tokens: readonly number[]; payload: readonly Uint8Array[] }): Uint8Array[] {
  const payloadBytes = file.payload.reduce((n, p) => n + p.byteLength, 0);
  const json = JSON.stringify({ ...file.header, tokens: file.tokens.length, payloadBytes });
  // Padded with spaces (still JSON) so the token ids, and the payload after them, are 8-aligned.
  const headerLength = align8(FIXED + Buffer.byteLength(json)) - FIXED;
  const head = Buffer.alloc(FIXED + headerLength, 0x20);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(FORMAT_VERSION, 8);
  head.writeUInt32LE(headerLength, 12);
  head.write(json, FIXED, 'utf8');
  const ids = Uint32Array.from(file.tokens);
  const idBytes = new Uint8Array(ids.buffer, 0, ids.byteLength);
  const pad = new Uint8Array(align8(idBytes.byteLength) - idBytes.byteLength);
  return [head, idBytes, pad, ...file.payload];
}

/** The whole file: its body then the SHA-256 of it (a writer of large files hashes as it writes instead: ../cache/disk-store.ts). */
export function encodeStateFile(file: { header: StateHeader; tokens: readonly number[]; payload: readonly Uint8Array[] }): Uint8Array[] {
  const body = stateFileBody(file);
  const hash = createHash('sha256');
  for (const chunk of body) hash.update(chunk);
  return [...body, hash.digest()];
}

/** The header alone (no checksum check): what an index of a cache directory reads of each file. */
export function readHeader(bytes: Uint8Array): { header: StateHeader; tokens: Uint32Array; payloadOffset: number; payloadBytes: number; total: number } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < FIXED || !buf.subarray(0, 8).equals(MAGIC)) throw new StateFileError('not a prompt-cache file (magic)');
  const version = buf.readUInt32LE(8);
  if (version !== FORMAT_VERSION) throw new StateFileError(`format version ${version}, not ${FORMAT_VERSION}`);
  const headerLength = buf.readUInt32LE(12);
  if (FIXED + headerLength > buf.length) throw new StateFileError('truncated header');
  let parsed: { key?: CacheKey; tokens?: unknown; exact?: unknown; payloadBytes?: unknown; meta?: Record<string, unknown> };
  try {
    parsed = JSON.parse(buf.toString('utf8', FIXED, FIXED + headerLength)) as typeof parsed;
  } catch {
    throw new StateFileError('unreadable header');
  }
  const { key, tokens: n, exact, payloadBytes, meta } = parsed;
  const count = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  if (!key || typeof key !== 'object' || !count(n) || !count(exact) || !count(payloadBytes) || exact > n) throw new StateFileError('malformed header');
  const idsAt = FIXED + headerLength;
  const payloadOffset = align8(idsAt + 4 * n);
  if (payloadOffset > buf.length) throw new StateFileError('truncated token ids');
  // A copy: the ids outlive the bytes read (an index keeps them, the bytes go).
  const tokens = new Uint32Array(n);
  tokens.set(new Uint32Array(buf.buffer.slice(buf.byteOffset + idsAt, buf.byteOffset + idsAt + 4 * n)));
  return { header: { key, exact, ...(meta ? { meta } : {}) }, tokens, payloadOffset, payloadBytes, total: payloadOffset + payloadBytes + DIGEST };
}

export const sameKey = (a: CacheKey, b: CacheKey) => a.engine === b.engine && a.engineVersion === b.engineVersion && a.model === b.model && a.variant === b.variant;

/**
 * A whole file, checked: ours, of this format version and of `key`, as long as its header says,
 * and its checksum right. Throws StateFileError otherwise. The payload is a view into `bytes`.
 */
export function decodeStateFile(bytes: Uint8Array, key: CacheKey): StateFile {
  const { header, tokens, payloadOffset, payloadBytes, total } = readHeader(bytes);
  if (!sameKey(header.key, key)) throw new StateFileError(`another key (${JSON.stringify(header.key)})`);
  if (bytes.byteLength !== total) throw new StateFileError(`${bytes.byteLength} bytes where the header says ${total}`);
  const body = bytes.subarray(0, total - DIGEST);
  const digest = createHash('sha256').update(body).digest();
  if (!digest.equals(bytes.subarray(total - DIGEST))) throw new StateFileError('checksum mismatch');
  return { ...header, tokens, payload: bytes.subarray(payloadOffset, payloadOffset + payloadBytes) };
}

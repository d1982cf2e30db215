/**
 * GGUF files as the model scanner and the tokenizer see them: the header's metadata, read
 * synchronously (the scan is), and the names llama.cpp's tools give files (split parts
 * `name-00001-of-00003.gguf`, the quantization in the name, `mmproj` projectors).
 *
 * Format (ggml/docs/gguf.md): magic "GGUF", u32 version (2 or 3), u64 tensor count, u64 metadata
 * count, then each metadata entry as a string key, a u32 value type and the value; strings are a
 * u64 length and UTF-8 bytes; arrays a u32 element type, a u64 count and the elements. All
 * little-endian. Tensor infos and data follow; they are not read here.
 */
import fs from 'node:fs';
import path from 'node:path';

export type GgufScalar = number | bigint | boolean | string;
export type GgufMetadataValue = GgufScalar | GgufScalar[];
export type GgufMetadata = Map<string, GgufMetadataValue>;

const enum T { U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 }
const SIZE: Partial<Record<T, number>> = { [T.U8]: 1, [T.I8]: 1, [T.U16]: 2, [T.I16]: 2, [T.U32]: 4, [T.I32]: 4, [T.F32]: 4, [T.BOOL]: 1, [T.U64]: 8, [T.I64]: 8, [T.F64]: 8 };

/** Reads a file forward through a window (metadata can run to tens of MB: a 256k-token vocabulary). */
class Reader {
  private buffer = Buffer.alloc(1 << 20);
  private start = 0; // file offset of buffer[0]
  private end = 0; // bytes valid in buffer
  private at = 0; // file offset of the cursor

  constructor(private readonly fd: number, private readonly file: string) {}

  private need(n: number): number {
    const offset = this.at - this.start;
    if (offset + n <= this.end) return offset;
    if (n > this.buffer.length) this.buffer = Buffer.alloc(Math.max(n, this.buffer.length * 2));
    this.start = this.at;
    this.end = fs.readSync(this.fd, this.buffer, 0, this.buffer.length, this.at);
    if (this.end < n) throw new Error(`${path.basename(this.file)}: the GGUF header ends early (a download that has not finished?)`);
    return 0;
  }

  bytes(n: number): Buffer {
    const offset = this.need(n);
    this.at += n;
    return this.buffer.subarray(offset, offset + n);
  }

  skip(n: number): void {
    this.at += n;
  }

  u32 = () => this.bytes(4).readUInt32LE(0);
  /** Two halves, no BigInt: skipping a vocabulary reads one length per token (151,669 for Qwen3's). */
  u64(): number {
    const b = this.bytes(8);
    const high = b.readUInt32LE(4);
    if (high > 0x1fffff) throw new Error(`${path.basename(this.file)}: a length of ${b.readBigUInt64LE(0)} in the GGUF header`);
    return high * 2 ** 32 + b.readUInt32LE(0);
  }
  string = () => this.bytes(this.u64()).toString('utf8');

  scalar(type: T): GgufScalar {
    switch (type) {
      case T.U8: return this.bytes(1).readUInt8(0);
      case T.I8: return this.bytes(1).readInt8(0);
      case T.U16: return this.bytes(2).readUInt16LE(0);
      case T.I16: return this.bytes(2).readInt16LE(0);
      case T.U32: return this.u32();
      case T.I32: return this.bytes(4).readInt32LE(0);
      case T.F32: return this.bytes(4).readFloatLE(0);
      case T.BOOL: return this.bytes(1).readUInt8(0) !== 0;
      case T.STRING: return this.string();
      case T.U64: { const v = this.bytes(8).readBigUInt64LE(0); return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v; }
      case T.I64: { const v = this.bytes(8).readBigInt64LE(0); return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v; }
      case T.F64: return this.bytes(8).readDoubleLE(0);
      default: throw new Error(`${path.basename(this.file)}: unknown GGUF value type ${type}`);
    }
  }
}

export interface ReadGgufOptions {
  /** Arrays longer than this are skipped, not read (the scanner wants no vocabulary); default: all read. */
  maxArray?: number;
}

/**
 * The scanner's reads (long arrays skipped, so small), by file, with the size and modification time
 * they were read at. The models folder is scanned again every few seconds (MODELS_RESCAN_MS) on the
 * server's event loop, where walking past a 151k-token vocabulary took 200 ms or more each time on
 * 2 loaded cores: every stream stalled that long (issue 41).
 */
const scannerReads = new Map<string, { stamp: string; metadata: GgufMetadata }>();

/** The metadata of a GGUF file (the first part of a split model holds it all). */
export function readGgufMetadata(file: string, options: ReadGgufOptions = {}): GgufMetadata {
  if (options.maxArray === undefined) return readMetadata(file, options);
  const stat = fs.statSync(file);
  const stamp = `${options.maxArray}/${stat.size}/${stat.mtimeMs}/${stat.ino}`;
  const known = scannerReads.get(file);
  // A copy: the caller may add to its map.
  if (known?.stamp === stamp) return new Map(known.metadata);
  const metadata = readMetadata(file, options);
  scannerReads.set(file, { stamp, metadata });
  return new Map(metadata);
}

function readMetadata(file: string, options: ReadGgufOptions): GgufMetadata {
  const fd = fs.openSync(file, 'r');
  try {
    const r = new Reader(fd, file);
    if (r.bytes(4).toString('latin1') !== 'GGUF') throw new Error(`${path.basename(file)} is not a GGUF file`);
    const version = r.u32();
    if (version < 2 || version > 3) throw new Error(`${path.basename(file)}: GGUF version ${version} (2 and 3 are read)`);
    r.u64(); // tensors
    const count = r.u64();
    const metadata: GgufMetadata = new Map();
    for (let i = 0; i < count; i++) {
      const key = r.string();
      const type = r.u32() as T;
      if (type !== T.ARRAY) {
        metadata.set(key, r.scalar(type));
        continue;
      }
      const itemType = r.u32() as T;
      const length = r.u64();
      if (options.maxArray !== undefined && length > options.maxArray) {
        const size = SIZE[itemType];
        if (size !== undefined) r.skip(size * length);
        else if (itemType === T.STRING) for (let j = 0; j < length; j++) r.skip(r.u64());
        else throw new Error(`${path.basename(file)}: ${key} is an array of arrays`);
        continue;
      }
      const values: GgufScalar[] = new Array(length);
      for (let j = 0; j < length; j++) values[j] = r.scalar(itemType);
      metadata.set(key, values);
    }
    return metadata;
  } finally {
    fs.closeSync(fd);
  }
}

/** A metadata value of the expected kind, or undefined. */
export const ggufString = (m: GgufMetadata, key: string) => (typeof m.get(key) === 'string' ? (m.get(key) as string) : undefined);
export const ggufNumber = (m: GgufMetadata, key: string) => (typeof m.get(key) === 'number' ? (m.get(key) as number) : undefined);

const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;

/** One GGUF model among files: its first (or only) file and every part of it. */
export interface GgufModelFiles {
  /** The name without `.gguf` and without the split suffix. */
  stem: string;
  /** Absolute paths, in order; the first holds the metadata. */
  parts: string[];
  /** Parts the split name promises that are not there (a download that has not finished). */
  missing: string[];
}

/**
 * The GGUF models in a folder's file names: single files, and split parts grouped under their first.
 * Multimodal projectors (`mmproj*`) are not models of their own and are left out.
 */
export function groupGgufFiles(dir: string, names: string[]): GgufModelFiles[] {
  const models = new Map<string, GgufModelFiles>();
  for (const name of [...names].sort()) {
    if (!/\.gguf$/i.test(name) || /^mmproj/i.test(name)) continue;
    const split = SPLIT.exec(name);
    if (!split) {
      models.set(name, { stem: name.replace(/\.gguf$/i, ''), parts: [path.join(dir, name)], missing: [] });
      continue;
    }
    const [, stem, , total] = split as unknown as [string, string, string, string];
    if (!models.has(`split:${stem}`)) {
      const parts = Array.from({ length: Number(total) }, (_, i) => `${stem}-${String(i + 1).padStart(5, '0')}-of-${total}.gguf`);
      const present = new Set(names);
      models.set(`split:${stem}`, { stem, parts: parts.map((p) => path.join(dir, p)), missing: parts.filter((p) => !present.has(p)) });
    }
  }
  return [...models.values()];
}

/** llama.cpp's quantization names as they appear in file names (Q4_K_M, IQ4_XS, F16, BF16, ...). */
const QUANT = /(?:^|[-_.])((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|F16|F32|BF16|MXFP4(?:_MOE)?))(?=$|[-_.])/i;

/** The quantization named in a GGUF file's stem, upper-cased; undefined when it names none. */
export function quantOf(stem: string): string | undefined {
  return QUANT.exec(stem)?.[1]?.toUpperCase();
}

/**
 * Tokenizers the server rebuilds from GGUF metadata alone (src/tokenize/gguf-tokenizer.ts): byte-level
 * BPE (`tokenizer.ggml.model` gpt2) with any pre-tokenizer name llama.cpp loads (llama-vocab.cpp; the
 * rules are src/tokenize/gguf-pre-tokenizers.ts, keyed by these names), and `gpt2`, which the server
 * took before. Others need the model's tokenizer.json beside the file.
 */
export const GGUF_PRE_TOKENIZERS = [
  'default', 'gpt2', 'llama3', 'llama-v3', 'llama-bpe', 'falcon3', 'falcon-h1', 'pixtral',
  'midm-2.0', 'lfm2', 'jina-v5-nano', 'deepseek-llm', 'deepseek-coder', 'deepseek-v3',
  'hunyuan-dense', 'joyai-llm', 'youtu', 'falcon', 'mpt', 'starcoder', 'gpt-2', 'phi-2', 'jina-es',
  'jina-de', 'gigachat', 'jina-v2-es', 'jina-v2-de', 'a.x-4.0', 'mellum', 'modern-bert',
  'jina-v1-en', 'jina-v2-code', 'roberta-bpe', 'exaone4', 'olmo', 'jais', 'trillion',
  'granite-docling', 'jais-2', 'gemma4', 'granite-embed-multi-311m', 'sarvam-moe', 'refact',
  'command-r', 'smollm', 'codeshell', 'exaone', 'minerva-7b', 'mellum2', 'qwen2',
  'deepseek-r1-qwen', 'kormo', 'f2llmv2', 'megrez', 'stablelm2', 'hunyuan', 'solar-open', 'grok-2',
  'qwen35', 'dbrx', 'smaug-bpe', 'glm4', 'chatglm-bpe', 'poro-chat', 'bloom', 'gpt3-finnish',
  'viking', 'tekken', 'chameleon', 'gpt-4o', 'llama4', 'kanana2', 'talkie', 'minimax-m2',
  'granite-embed-multi-97m', 'tiny_aya', 'cohere2moe', 'superbpe', 'bailingmoe', 'bailingmoe2',
  'llada-moe', 'seed-coder', 'kimi-k2', 'afmoe', 'laguna', 'exaone-moe', 'minicpm5',
] as const;
export type GgufPreTokenizer = (typeof GGUF_PRE_TOKENIZERS)[number];

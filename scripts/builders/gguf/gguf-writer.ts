/**
 * A small GGUF (version 3) writer, so a benchmark can give llama.cpp the same weights as an ONNX
 * subject. Layout (ggml `docs/gguf.md`, gguf-py `constants.py`): magic "GGUF", u32 version, u64
 * tensor count, u64 key-value count, the key-values, the tensor infos (name, u32 dims, u64 sizes
 * innermost first, u32 ggml type, u64 offset into the data section), zero padding to the alignment,
 * then the tensor data, each tensor aligned.
 *
 * Quantization follows ggml's reference code (`ggml-quants.c`): Q8_0 is blocks of 32 values along
 * the innermost axis, an fp16 scale max|x|/127 then 32 int8; Q4_0 is an fp16 scale d = m/-8 (m the
 * value of largest magnitude, sign kept) then 16 bytes, byte j holding values j (low nibble) and
 * j+16 (high nibble) as round-to-nearest x/d + 8, clamped to 15.
 */
import fs from 'node:fs';

export const GGML_TYPE = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 } as const;
export type GgmlType = keyof typeof GGML_TYPE;

/** general.file_type (llama_ftype): what most tensors are. */
export const FILE_TYPE: Record<GgmlType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };

const ALIGNMENT = 32;
const VALUE = { UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9, UINT64: 10 } as const;

export type GgufValue =
  | { type: 'u32'; value: number }
  | { type: 'i32'; value: number }
  | { type: 'f32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: string[] }
  | { type: 'i32s'; value: ArrayLike<number> }
  | { type: 'f32s'; value: ArrayLike<number> };

export interface GgufTensor {
  name: string;
  /** Sizes outermost first, as in numpy/PyTorch ([rows, columns]); written innermost first. */
  shape: number[];
  type: GgmlType;
  /** Row-major float32 values; quantized as `type` asks when written. */
  data: Float32Array;
}

/** Float32 to IEEE half bits, round to nearest even (the scales of Q8_0 and Q4_0 blocks). */
export function toHalf(value: number): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  f[0] = value;
  const x = u[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half++;
  e = half >>> 10;
  return sign | half;
}

export function fromHalf(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Q8_0 blocks of `data` (its length a multiple of 32). */
export function quantizeQ8_0(data: Float32Array): Uint8Array {
  const blocks = data.length / 32;
  const out = new Uint8Array(blocks * 34);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(data[b * 32 + j]!));
    const d = amax / 127;
    const id = d ? 1 / d : 0;
    view.setUint16(b * 34, toHalf(d), true);
    for (let j = 0; j < 32; j++) view.setInt8(b * 34 + 2 + j, Math.round(data[b * 32 + j]! * id));
  }
  return out;
}

/** Q4_0 blocks of `data` (its length a multiple of 32). */
export function quantizeQ4_0(data: Float32Array): Uint8Array {
  const blocks = data.length / 32;
  const out = new Uint8Array(blocks * 18);
  const view = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = data[b * 32 + j]!;
      if (Math.abs(v) > amax) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = max / -8;
    const id = d ? 1 / d : 0;
    view.setUint16(b * 18, toHalf(d), true);
    for (let j = 0; j < 16; j++) {
      const lo = Math.min(15, Math.trunc(data[b * 32 + j]! * id + 8.5));
      const hi = Math.min(15, Math.trunc(data[b * 32 + j + 16]! * id + 8.5));
      out[b * 18 + 2 + j] = lo | (hi << 4);
    }
  }
  return out;
}

function encodeData(tensor: GgufTensor): Uint8Array {
  const inner = tensor.shape.at(-1)!;
  if (tensor.type !== 'F32' && inner % 32 !== 0) throw new Error(`${tensor.name}: innermost size ${inner} is not a multiple of 32 for ${tensor.type}`);
  switch (tensor.type) {
    case 'F32':
      return new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
    case 'F16': {
      const out = new Uint16Array(tensor.data.length);
      for (let i = 0; i < out.length; i++) out[i] = toHalf(tensor.data[i]!);
      return new Uint8Array(out.buffer);
    }
    case 'Q8_0':
      return quantizeQ8_0(tensor.data);
    case 'Q4_0':
      return quantizeQ4_0(tensor.data);
  }
}

/** Bytes of a tensor of `count` values stored as `type`. */
export function tensorBytes(type: GgmlType, count: number): number {
  return { F32: count * 4, F16: count * 2, Q8_0: (count / 32) * 34, Q4_0: (count / 32) * 18 }[type];
}

class Bytes {
  private parts: Uint8Array[] = [];
  size = 0;
  push(part: Uint8Array): void {
    this.parts.push(part);
    this.size += part.byteLength;
  }
  u32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, v, true);
    this.push(b);
  }
  i32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    this.push(b);
  }
  f32(v: number): void {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.push(b);
  }
  u64(v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
    this.push(b);
  }
  string(s: string): void {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.byteLength);
    this.push(bytes);
  }
  joined(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  }
}

function writeValue(out: Bytes, v: GgufValue): void {
  switch (v.type) {
    case 'u32': out.u32(VALUE.UINT32); out.u32(v.value); break;
    case 'i32': out.u32(VALUE.INT32); out.i32(v.value); break;
    case 'f32': out.u32(VALUE.FLOAT32); out.f32(v.value); break;
    case 'bool': out.u32(VALUE.BOOL); out.push(Uint8Array.of(v.value ? 1 : 0)); break;
    case 'string': out.u32(VALUE.STRING); out.string(v.value); break;
    case 'strings':
      out.u32(VALUE.ARRAY); out.u32(VALUE.STRING); out.u64(v.value.length);
      for (const s of v.value) out.string(s);
      break;
    case 'i32s':
      out.u32(VALUE.ARRAY); out.u32(VALUE.INT32); out.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) out.i32(v.value[i]!);
      break;
    case 'f32s':
      out.u32(VALUE.ARRAY); out.u32(VALUE.FLOAT32); out.u64(v.value.length);
      for (let i = 0; i < v.value.length; i++) out.f32(v.value[i]!);
      break;
  }
}

/**
 * Writes a GGUF file. Tensors are produced one at a time by `tensors` (a generator, so a large
 * model is never held quantized all at once): the header needs every tensor's name, shape and type
 * first, given in `infos` in the same order.
 */
export function writeGguf(file: string, metadata: Record<string, GgufValue>, infos: Array<Omit<GgufTensor, 'data'>>, tensors: Iterable<GgufTensor>): void {
  const head = new Bytes();
  head.push(new TextEncoder().encode('GGUF'));
  head.u32(3);
  head.u64(infos.length);
  const kv = { ...metadata, 'general.alignment': { type: 'u32', value: ALIGNMENT } as GgufValue };
  head.u64(Object.keys(kv).length);
  for (const [key, value] of Object.entries(kv)) {
    head.string(key);
    writeValue(head, value);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of infos) {
    head.string(t.name);
    head.u32(t.shape.length);
    for (const d of [...t.shape].reverse()) head.u64(d);
    head.u32(GGML_TYPE[t.type]);
    head.u64(offset);
    offsets.push(offset);
    offset += tensorBytes(t.type, t.shape.reduce((a, b) => a * b, 1));
    offset = Math.ceil(offset / ALIGNMENT) * ALIGNMENT;
  }
  const pad = (n: number) => new Uint8Array((ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT);
  const fd = fs.openSync(file, 'w');
  try {
    const header = head.joined();
    fs.writeSync(fd, header);
    fs.writeSync(fd, pad(header.byteLength));
    let written = 0;
    let index = 0;
    for (const tensor of tensors) {
      const info = infos[index];
      if (!info || info.name !== tensor.name || info.type !== tensor.type || info.shape.join() !== tensor.shape.join()) {
        throw new Error(`tensor ${index} (${tensor.name}) does not match its announced info`);
      }
      if (written !== offsets[index]) throw new Error(`tensor ${tensor.name} at ${written}, announced at ${offsets[index]}`);
      const data = encodeData(tensor);
      fs.writeSync(fd, data);
      const padding = pad(data.byteLength);
      fs.writeSync(fd, padding);
      written += data.byteLength + padding.byteLength;
      index++;
    }
    if (index !== infos.length) throw new Error(`${index} tensors written, ${infos.length} announced`);
  } finally {
    fs.closeSync(fd);
  }
}

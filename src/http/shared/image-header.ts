/**
 * What an image's first bytes say: its format (the magic number, whatever a client declared) and its
 * size in pixels (from the header: PNG's IHDR, JPEG's SOF segment, WebP's VP8 / VP8L / VP8X chunk,
 * GIF's logical screen). Nothing is decoded, so a decompression bomb — a few KB declaring a huge
 * canvas — is measured and refused before any decoder allocates for it.
 */
import type { ImageMediaType } from '../../core/types.js';

export type ImageHeader = { mediaType: ImageMediaType; width: number; height: number };

/** The format the bytes start with, or undefined for none of the four. */
export function sniffImage(bytes: Uint8Array): ImageMediaType | undefined {
  const at = (offset: number, ...values: number[]) => values.every((v, i) => bytes[offset + i] === v);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (at(0, 0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return 'image/webp';
  return undefined;
}

/**
 * The format and size, or why they cannot be read: not one of the four formats, or a header cut
 * short or malformed (the reason is a phrase for a client's error message).
 */
export function readImageHeader(bytes: Uint8Array): ImageHeader | { problem: string } {
  const mediaType = sniffImage(bytes);
  if (!mediaType) return { problem: 'the data is not a PNG, JPEG, WebP or GIF image (its first bytes match none of them)' };
  const size = SIZE_READERS[mediaType](bytes);
  if (!size) return { problem: `the ${FORMAT_NAMES[mediaType]} header is cut short or malformed: its width and height cannot be read` };
  if (size.width === 0 || size.height === 0) return { problem: `the ${FORMAT_NAMES[mediaType]} header declares an empty image (${size.width}x${size.height})` };
  return { mediaType, ...size };
}

export const FORMAT_NAMES: Record<ImageMediaType, string> = { 'image/png': 'PNG', 'image/jpeg': 'JPEG', 'image/webp': 'WebP', 'image/gif': 'GIF' };

type Size = { width: number; height: number } | undefined;

const ascii = (bytes: Uint8Array, offset: number, length: number) =>
  offset + length > bytes.length ? '' : String.fromCharCode(...bytes.subarray(offset, offset + length));
const u16be = (b: Uint8Array, o: number) => (b[o]! << 8) | b[o + 1]!;
const u16le = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8);
const u24le = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16);
const u32be = (b: Uint8Array, o: number) => ((b[o]! << 24) >>> 0) + ((b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!);

const SIZE_READERS: Record<ImageMediaType, (bytes: Uint8Array) => Size> = {
  // The signature, then the IHDR chunk first: length, "IHDR", width, height (big-endian).
  'image/png': (b) => (b.length >= 24 && ascii(b, 12, 4) === 'IHDR' ? { width: u32be(b, 16), height: u32be(b, 20) } : undefined),
  // The logical screen: every frame is drawn on it, so it bounds the first frame too.
  'image/gif': (b) => (b.length >= 10 ? { width: u16le(b, 6), height: u16le(b, 8) } : undefined),
  'image/jpeg': jpegSize,
  'image/webp': webpSize,
};

/**
 * JPEG: the segments after SOI in order until a start-of-frame marker (C0..CF, except DHT C4, JPG C8
 * and DAC CC), whose body is precision, height, width. A scan (DA) before any frame, or the end of
 * the bytes, means no size.
 */
function jpegSize(b: Uint8Array): Size {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    // Markers without a length: TEM, RST0..7, SOI, EOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined;
    const length = u16be(b, i + 2);
    if (length < 2) return undefined;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return i + 9 <= b.length ? { height: u16be(b, i + 5), width: u16be(b, i + 7) } : undefined;
    }
    i += 2 + length;
  }
  return undefined;
}

/** WebP: RIFF, then the first chunk: lossy VP8 (its key frame's header), lossless VP8L, or extended VP8X (the canvas). */
function webpSize(b: Uint8Array): Size {
  if (b.length < 30) return undefined;
  switch (ascii(b, 12, 4)) {
    case 'VP8 ':
      // Frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height (2 bits of scale above).
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
      return { width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
    case 'VP8L': {
      if (b[20] !== 0x2f) return undefined;
      const bits = (b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24)) >>> 0;
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case 'VP8X':
      return { width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
    default:
      return undefined;
  }
}

/** Image headers read from bytes alone: the format by magic number, the size from each format's header. */
import { describe, expect, it } from 'vitest';
import { readImageHeader, sniffImage } from '../../src/http/shared/image-header.js';
import { isPrivateAddress } from '../../src/http/shared/image-fetch.js';
import { bytesOf, IMAGES, pngBomb, TRUNCATED_PNG, webpExtended } from '../../scripts/fuzz/images.js';

describe('image headers', () => {
  it.each([
    ['png', 'image/png'],
    ['jpeg', 'image/jpeg'],
    ['webpLossy', 'image/webp'],
    ['webpLossless', 'image/webp'],
    ['gif', 'image/gif'],
  ] as const)('%s written by sharp: its format and its 3x2 size', (name, mediaType) => {
    expect(readImageHeader(bytesOf(IMAGES[name]))).toEqual({ mediaType, width: 3, height: 2 });
  });

  it('an extended WebP (VP8X) gives its canvas', () => {
    expect(readImageHeader(webpExtended(5000, 7))).toEqual({ mediaType: 'image/webp', width: 5000, height: 7 });
  });

  it('a bomb: the declared size, read without decoding', () => {
    expect(readImageHeader(bytesOf(pngBomb(100_000, 90_000)))).toEqual({ mediaType: 'image/png', width: 100_000, height: 90_000 });
  });

  it('a JPEG whose segments end before its frame header has no size', () => {
    const jpeg = bytesOf(IMAGES.jpeg);
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(sof).toBeGreaterThan(2);
    expect(readImageHeader(jpeg.subarray(0, sof + 6))).toEqual({ problem: expect.stringContaining('JPEG header is cut short') });
  });

  it('cut short, empty or unknown: a reason, never a throw', () => {
    expect(readImageHeader(bytesOf(TRUNCATED_PNG))).toEqual({ problem: expect.stringContaining('PNG header is cut short') });
    expect(readImageHeader(bytesOf(pngBomb(0, 5)))).toEqual({ problem: expect.stringContaining('empty image (0x5)') });
    expect(readImageHeader(Buffer.from('hello world'))).toEqual({ problem: expect.stringContaining('not a PNG, JPEG, WebP or GIF') });
    expect(sniffImage(new Uint8Array(0))).toBeUndefined();
    for (let n = 0; n < 40; n++) expect(() => readImageHeader(bytesOf(IMAGES.webpLossy).subarray(0, n))).not.toThrow();
  });
});

describe('private addresses (image URL fetching)', () => {
  it.each(['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe'])('%s is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe('ChatImage across the protocols', () => {
  it('survives the structured clone of worker_threads and the v8 serialisation of the process protocol as it is', async () => {
    const { serialize, deserialize } = await import('node:v8');
    const message = { role: 'user' as const, content: 'look', images: [{ mediaType: 'image/png' as const, bytes: new Uint8Array(bytesOf(IMAGES.png)), width: 3, height: 2, hash: 'ab', offset: 4, lowResolution: true }] };
    for (const copy of [structuredClone(message), deserialize(serialize(message))]) {
      expect(copy).toEqual(message);
      expect(copy.images[0].bytes).toBeInstanceOf(Uint8Array);
    }
  });
});

/**
 * Tiny images for the image-input tests: each a 3x2 image written by sharp (the encoder
 * @huggingface/transformers decodes with), base64, and hostile variants built from them.
 */
export const IMAGES = {
  png: 'iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEElEQVQImWM4wcUFQQxwFgA4GAUp6mv7BgAAAABJRU5ErkJggg==',
  jpeg: '/9j/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUfGhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBDAQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAACAAMDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAf/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFQEBAQAAAAAAAAAAAAAAAAAABgf/xAAUEQEAAAAAAAAAAAAAAAAAAAAA/9oADAMBAAIRAxEAPwCXADS2v//Z',
  webpLossy: 'UklGRjwAAABXRUJQVlA4IDAAAADQAQCdASoDAAIAAUAmJaACdLoB+AADsAD+9hNf/izkYjs83/4E78Cd+BO/8AAAAAA=',
  webpLossless: 'UklGRh4AAABXRUJQVlA4TBEAAAAvAkAAAAdQhSJXof+BiOh/AAA=',
  gif: 'R0lGODlhAwACAIAAAExpccgKCiH5BAUAAAAALAAAAAADAAIAAAICjF8AOw==',
} as const;

export const bytesOf = (base64: string) => Buffer.from(base64, 'base64');

/** The PNG with its IHDR declaring width x height: a few bytes claiming a huge canvas (a decompression bomb). */
export function pngBomb(width = 100_000, height = 100_000): string {
  const bytes = bytesOf(IMAGES.png);
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes.toString('base64');
}

/** The PNG cut after its signature and part of IHDR: no size can be read. */
export const TRUNCATED_PNG = bytesOf(IMAGES.png).subarray(0, 18).toString('base64');

/** A WebP with an extended (VP8X) header declaring width x height, and no image data after it. */
export function webpExtended(width: number, height: number): Buffer {
  const b = Buffer.alloc(30);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(22, 4);
  b.write('WEBPVP8X', 8, 'latin1');
  b.writeUInt32LE(10, 16);
  b.writeUIntLE(width - 1, 24, 3);
  b.writeUIntLE(height - 1, 27, 3);
  return b;
}

export const dataUrl = (base64: string, mediaType = 'image/png') => `data:${mediaType};base64,${base64}`;

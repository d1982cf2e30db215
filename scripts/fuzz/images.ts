/**
 * Tiny images for the image-input tests and the fuzzer: each a 3x2 image written by sharp (the encoder
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

/** The chat dialects, by the fuzzer's endpoint names, and their routes. */
export type ImageDialect = 'messages' | 'chat' | 'responses';
export const IMAGE_ROUTES: Record<ImageDialect, string> = { messages: '/v1/messages', chat: '/v1/chat/completions', responses: '/v1/responses' };

/** An image as a request names it: base64 with its declared media type (a data URL outside Anthropic), or a URL. */
export type WireImage = { base64: string; mediaType?: string } | { url: string };

/**
 * A request of `dialect` whose last turn is "look" then `images`: in a user turn, or (`inToolResult`)
 * in the result of a tool call (Anthropic's tool_result, Responses' function_call_output; chat
 * completions has no image in tool messages, so there they stay in the user turn).
 */
export function imageBody(dialect: ImageDialect, model: string, images: WireImage[], inToolResult = false): Record<string, unknown> {
  const urlOf = (s: WireImage) => ('url' in s ? s.url : dataUrl(s.base64, s.mediaType ?? 'image/png'));
  if (dialect === 'messages') {
    const blocks = images.map((s) => ({ type: 'image', source: 'url' in s ? { type: 'url', url: s.url } : { type: 'base64', media_type: s.mediaType ?? 'image/png', data: s.base64 } }));
    const content = [{ type: 'text', text: 'look' }, ...blocks];
    const messages = inToolResult
      ? [{ role: 'user', content: 'go' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content }] }]
      : [{ role: 'user', content }];
    return { model, max_tokens: 5, messages };
  }
  if (dialect === 'chat') {
    return { model, max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...images.map((s) => ({ type: 'image_url', image_url: { url: urlOf(s) } }))] }] };
  }
  const content = [{ type: 'input_text', text: 'look' }, ...images.map((s) => ({ type: 'input_image', image_url: urlOf(s) }))];
  const input = inToolResult
    ? [{ role: 'user', content: 'go' }, { type: 'function_call', call_id: 'c1', name: 'shot', arguments: '{}' }, { type: 'function_call_output', call_id: 'c1', output: content }]
    : [{ role: 'user', content }];
  return { model, max_output_tokens: 5, input };
}

/**
 * Images every server must refuse with a 400 in the dialect's envelope: well-formed ones (no model
 * takes images yet), and each way an image can be wrong. `wellFormed`: refused only because the model
 * takes no image.
 */
export function hostileImages(): Array<{ label: string; images: WireImage[]; wellFormed: boolean }> {
  const formats = Object.entries(IMAGES).map(([name, base64]) => ({
    label: `a valid ${name}`,
    images: [{ base64, mediaType: name.startsWith('webp') ? 'image/webp' : `image/${name}` }],
    wellFormed: true,
  }));
  const png = (base64: string, mediaType = 'image/png') => [{ base64, mediaType }];
  return [
    ...formats,
    { label: 'bad base64', images: png('iVBOR*w0K!'), wellFormed: false },
    { label: 'base64 of no image format', images: png(Buffer.from('hello, world').toString('base64')), wellFormed: false },
    { label: 'a PNG declared as JPEG', images: png(IMAGES.png, 'image/jpeg'), wellFormed: false },
    { label: 'a media type not accepted (image/bmp)', images: png(IMAGES.png, 'image/bmp'), wellFormed: false },
    { label: 'a truncated PNG header', images: png(TRUNCATED_PNG), wellFormed: false },
    { label: 'a JPEG cut before its frame header', images: png(bytesOf(IMAGES.jpeg).subarray(0, 30).toString('base64'), 'image/jpeg'), wellFormed: false },
    { label: 'empty data', images: png(''), wellFormed: false },
    { label: 'a PNG bomb (100000x100000 in 90 bytes)', images: png(pngBomb()), wellFormed: false },
    { label: 'a WebP bomb (VP8X 16777216x16777216)', images: png(webpExtended(2 ** 24, 2 ** 24).toString('base64'), 'image/webp'), wellFormed: false },
    { label: '101 images', images: Array.from({ length: 101 }, () => ({ base64: IMAGES.gif, mediaType: 'image/gif' })), wellFormed: false },
    { label: 'a URL (fetching off)', images: [{ url: 'https://example.com/cat.png' }], wellFormed: false },
    { label: 'a link-local URL (fetching off)', images: [{ url: 'http://169.254.169.254/latest/meta-data' }], wellFormed: false },
    { label: 'a file: URL', images: [{ url: 'file:///etc/passwd' }], wellFormed: false },
  ];
}

/**
 * The settings of image input at the edge: how large an image may be (bytes, and pixels as its
 * header declares them), how many one request may carry, and whether image URLs are fetched and
 * where from. Declared once here with their defaults; the configuration schema (src/config.ts) takes
 * these fields as they are, and buildApp hands them to every chat dialect.
 */
import { z } from 'zod';
import { bool } from '../../core/engine-settings.js';

export const imageSettingsSchema = z.object({
  /** Anthropic's own limit per image; base64 adds a third, so the body limit bounds it too. */
  imageMaxBytes: z.coerce.number().int().min(1024).default(5 * 1024 * 1024)
    .describe('Largest image in bytes (decoded from base64, or fetched); larger is a 400'),
  /**
   * Checked against the size the header declares, before anything decodes it: a few KB can declare a
   * canvas whose decoded pixels take gigabytes (a decompression bomb). 8000 x 8000 is Anthropic's
   * largest side; 40 M pixels decode to 160 MB of RGBA.
   */
  imageMaxPixels: z.coerce.number().int().min(1).default(40_000_000)
    .describe('Most pixels (width x height, as the image header declares them) an image may have; more is a 400, refused before decoding'),
  /** Anthropic's API takes up to 100 images per request. */
  imagesPerRequest: z.coerce.number().int().min(0).max(10_000).default(100)
    .describe('Most images one request may carry; more is a 400'),
  /** Off, a request that names an image by URL is a 400 that says to send it as base64 or set this. */
  imageUrlFetch: bool.default(false)
    .describe('Fetch images that requests name by http(s) URL (off: send images as base64 / data URLs)'),
  /** The server would otherwise fetch, on a client's word, from the network it sits in. */
  imageUrlPrivate: bool.default(false)
    .describe('Also fetch image URLs whose address is private, loopback or link-local (refused before connecting otherwise)'),
  imageUrlTimeoutMs: z.coerce.number().int().min(100).default(10_000)
    .describe('Time limit of one image URL fetch in ms, redirects included'),
});

export type ImageSettings = z.infer<typeof imageSettingsSchema>;

export const IMAGE_DEFAULTS: ImageSettings = imageSettingsSchema.parse({});

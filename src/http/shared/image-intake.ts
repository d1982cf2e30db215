/**
 * Image input at the edge, for every chat dialect: each image block or part a converter meets
 * becomes a core ChatImage here, checked from its bytes — the format its magic number says against
 * the one declared, its size from the header against the pixel limit (before anything decodes it),
 * its bytes and the request's count against theirs — and each failure is a 400 naming the block
 * (`at`, in the dialect's own path words). One intake serves one request:
 *
 * 1. the converter calls `take` for each image (synchronously: base64 and data URLs are checked at
 *    once; a URL is refused unless fetching is on, else queued and its ChatImage filled in later),
 * 2. the plugin awaits `admit(model)`: the queued URLs fetched and checked, then — no model takes
 *    images yet — a request holding any is refused here, before the inference service, naming the
 *    model and why (issue 42; the vision engine is next).
 */
import { createHash } from 'node:crypto';
import { clip } from '../../core/errors.js';
import { NO_IMAGE_INPUT, type ModelDescription } from '../../core/model.js';
import { IMAGE_MEDIA_TYPES, type ChatImage, type ImageMediaType } from '../../core/types.js';
import { HttpError, invalidRequest } from './errors.js';
import { fetchImage, ImageFetchError } from './image-fetch.js';
import { FORMAT_NAMES, readImageHeader } from './image-header.js';
import { IMAGE_DEFAULTS, type ImageSettings } from './image-settings.js';

/** An image as a dialect names it: base64 data with the media type the client declared, or a URL (a data URL included). */
export type ImageSource = { kind: 'base64'; data: string; mediaType?: string } | { kind: 'url'; url: string };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*?);base64,/i;

export class ImageIntake {
  private readonly taken: Array<{ at: string; image: ChatImage }> = [];
  private readonly pending: Array<{ at: string; url: string; image: ChatImage }> = [];

  constructor(private readonly settings: ImageSettings = IMAGE_DEFAULTS) {}

  /**
   * The image `at` names, checked (a URL's once `settle` has fetched it); throws the 400 that says
   * what is wrong. `view`: how the client asked it be seen (a dialect's `detail` in core terms).
   */
  take(source: ImageSource, at: string, view: Pick<ChatImage, 'lowResolution'> = {}): ChatImage {
    if (this.taken.length >= this.settings.imagesPerRequest) {
      throw invalidRequest(`${at}: more than ${this.settings.imagesPerRequest} images in one request; send at most ${this.settings.imagesPerRequest} (the server's --images-per-request)`, at);
    }
    const image = source.kind === 'base64' ? this.fromBase64(source.data, source.mediaType, at) : this.fromUrl(source.url, at);
    if (view.lowResolution) image.lowResolution = true;
    this.taken.push({ at, image });
    return image;
  }

  /** The request carries images. */
  get any(): boolean {
    return this.taken.length > 0;
  }

  /** After conversion, before the inference service: URLs fetched and checked, then the model's refusal. */
  async admit(model: ModelDescription | undefined): Promise<void> {
    if (!this.any) return;
    await this.settle();
    this.refuseUnlessTaken(model);
  }

  /** Fetches and checks every image named by URL (each failure a 400 naming its block). */
  async settle(): Promise<void> {
    const fetching = this.pending.splice(0);
    await Promise.all(
      fetching.map(async ({ at, url, image }) => {
        let bytes: Uint8Array;
        try {
          bytes = await fetchImage(url, { allowPrivate: this.settings.imageUrlPrivate, maxBytes: this.settings.imageMaxBytes, timeoutMs: this.settings.imageUrlTimeoutMs });
        } catch (error) {
          const reason = error instanceof ImageFetchError ? error.message : 'the fetch failed';
          throw invalidRequest(`${at}: the image at \`${clip(url, 200)}\` could not be fetched: ${reason}`, at);
        }
        Object.assign(image, this.checked(bytes, undefined, at));
      }),
    );
  }

  /**
   * A request with images, to a model that takes none, is refused naming the model and why. An
   * unknown model, or one for another task, is left to the inference service to refuse as it does.
   */
  refuseUnlessTaken(model: ModelDescription | undefined): void {
    const first = this.taken[0];
    if (!first || !model || model.task !== 'chat' || model.imageInput) return;
    throw new HttpError('unsupported_feature', `${first.at}: ${clip(model.id)} takes no image input (${NO_IMAGE_INPUT[model.engine]}); send text only, or choose a model whose capabilities.image_input is supported (GET /v1/models)`, first.at);
  }

  private fromBase64(data: string, declared: string | undefined, at: string): ChatImage {
    // Measured before decoding: 4 characters carry 3 bytes.
    const size = Math.floor((data.length * 3) / 4);
    if (size > this.settings.imageMaxBytes + 2) throw tooLarge(at, size, this.settings.imageMaxBytes);
    if (data.length % 4 !== 0 || !BASE64.test(data)) throw invalidRequest(`${at}: the image data is not valid base64`, at);
    return this.checked(Buffer.from(data, 'base64'), declared, at);
  }

  private fromUrl(url: string, at: string): ChatImage {
    const data = DATA_URL.exec(url.slice(0, 256));
    if (data) return this.fromBase64(url.slice(data[0].length), data[1]!.toLowerCase(), at);
    if (/^data:/i.test(url)) throw invalidRequest(`${at}: a data URL must be base64 (data:image/png;base64,...)`, at);
    // Not echoed: whatever else it is (file:, a path), nothing here reads it.
    if (!/^https?:\/\//i.test(url)) throw invalidRequest(`${at}: the image URL must be http(s) or a base64 data URL (data:image/png;base64,...)`, at);
    if (!this.settings.imageUrlFetch) {
      throw new HttpError('unsupported_feature', `${at}: image URLs are not fetched by this server; send the image as base64 (a data URL), or start the server with --image-url-fetch (IMAGE_URL_FETCH=true)`, at);
    }
    // Filled in by settle(); nothing reads it before.
    const image: ChatImage = { mediaType: 'image/png', bytes: new Uint8Array(0), width: 0, height: 0, hash: '', offset: 0 };
    this.pending.push({ at, url, image });
    return image;
  }

  private checked(bytes: Uint8Array, declared: string | undefined, at: string): ChatImage {
    if (bytes.length > this.settings.imageMaxBytes) throw tooLarge(at, bytes.length, this.settings.imageMaxBytes);
    if (declared !== undefined && !(IMAGE_MEDIA_TYPES as readonly string[]).includes(declared)) {
      throw invalidRequest(`${at}: the media type \`${clip(declared, 64)}\` is not accepted; send ${IMAGE_MEDIA_TYPES.join(', ')}`, at);
    }
    const header = readImageHeader(bytes);
    if ('problem' in header) throw invalidRequest(`${at}: ${header.problem}`, at);
    if (declared !== undefined && declared !== header.mediaType) {
      throw invalidRequest(`${at}: the image data is ${FORMAT_NAMES[header.mediaType]} but its media type says ${declared}; send the type of the data`, at);
    }
    const pixels = header.width * header.height;
    if (pixels > this.settings.imageMaxPixels) {
      throw invalidRequest(`${at}: the image is ${header.width}x${header.height} (${pixels} pixels), over the ${this.settings.imageMaxPixels} pixels accepted (--image-max-pixels); it was refused before decoding`, at);
    }
    // A copy of its own: a small Buffer is a view of a shared pool, all of which structured clone would copy.
    return { mediaType: header.mediaType as ImageMediaType, bytes: new Uint8Array(bytes), width: header.width, height: header.height, hash: createHash('sha256').update(bytes).digest('hex'), offset: 0 };
  }
}

const tooLarge = (at: string, size: number, limit: number) =>
  invalidRequest(`${at}: the image is ${size} bytes, over the ${limit} accepted (--image-max-bytes)`, at);

/**
 * A turn's content as converters build it: text in order, each image placed at the text before it
 * (ChatImage.offset). `text` and `images` are what the core message carries.
 */
export class TurnContent {
  text = '';
  readonly images: ChatImage[] = [];

  add(text: string): void {
    this.text += text;
  }

  image(image: ChatImage): void {
    image.offset = this.text.length;
    this.images.push(image);
  }

  /**
   * A message's content in order: a string is its text; each part of a list (at `at(j)`, the path
   * as the dialect writes it) is read by `image` where `isImage` says so, else by `text`.
   */
  static of<P>(content: string | readonly P[], read: { at: (j: number) => string; isImage: (part: P) => boolean; image: (part: P, at: string) => ChatImage; text: (part: P, at: string) => string }): TurnContent {
    const turn = new TurnContent();
    if (typeof content === 'string') turn.add(content);
    else content.forEach((part, j) => (read.isImage(part) ? turn.image(read.image(part, read.at(j))) : turn.add(read.text(part, read.at(j)))));
    return turn;
  }

  /** `images` for a core message: absent when there are none, so a text-only turn is as before. */
  get imagesField(): { images?: ChatImage[] } {
    return this.images.length > 0 ? { images: this.images } : {};
  }
}

/** Images of a turn appended after `shift` characters of text (two turns merged into one). */
export function shiftImages(images: ChatImage[] | undefined, shift: number): ChatImage[] {
  return (images ?? []).map((image) => Object.assign(image, { offset: image.offset + shift }));
}

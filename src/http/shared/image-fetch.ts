/**
 * Fetches an image a request names by URL (http or https), for the operator who allowed it
 * (`--image-url-fetch`). A request must not turn the server into a client of the operator's own
 * network: unless `--image-url-private` is set, an address in a private, loopback, link-local,
 * shared, multicast or reserved range is refused before any connection — the address checked is the
 * one the socket connects to (DNS answers are checked in the lookup the socket uses, so a name that
 * resolves to 127.0.0.1 is refused too, and a second lookup cannot swap the address). Redirects are
 * followed a few times, each hop checked the same way. Bytes and time are bounded.
 */
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import net from 'node:net';

export interface ImageFetchSettings {
  /** Addresses in private, loopback and link-local ranges may be fetched. */
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
}

/** Why a fetch failed, as a phrase for a client's error message. */
export class ImageFetchError extends Error {}

const MAX_REDIRECTS = 3;

/** IANA's special-purpose ranges: nothing a public image lives at. */
const PRIVATE = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(address, prefix, 'ipv4');
for (const [address, prefix] of [['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  PRIVATE.addSubnet(address, prefix, 'ipv6');
}

/** The address is in a private, loopback, link-local or other special-purpose range (IPv4-mapped IPv6 as its IPv4). */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  if (mapped) return PRIVATE.check(mapped, 'ipv4');
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The body of `url`, at most `maxBytes`, within `timeoutMs` overall (redirects included). */
export async function fetchImage(url: string, settings: ImageFetchSettings): Promise<Uint8Array> {
  const signal = AbortSignal.timeout(settings.timeoutMs);
  let target = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const result = await get(target, settings, signal);
    if ('bytes' in result) return result.bytes;
    target = result.redirect;
  }
  throw new ImageFetchError(`more than ${MAX_REDIRECTS} redirects`);
}

function get(url: string, settings: ImageFetchSettings, signal: AbortSignal): Promise<{ bytes: Uint8Array } | { redirect: string }> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ImageFetchError('not a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ImageFetchError(`the scheme \`${parsed.protocol}\` is not fetched (http and https are)`);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  // A literal address never reaches the lookup below: checked here.
  if (net.isIP(host) && !settings.allowPrivate && isPrivateAddress(host)) throw privateRefusal(host);
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as dns.LookupAddress[];
      if (list.length === 0) return callback(new ImageFetchError(`the name ${hostname} has no address`) as NodeJS.ErrnoException, '', 0);
      const refused = settings.allowPrivate ? undefined : list.find((a) => isPrivateAddress(a.address));
      if (refused) return callback(privateRefusal(refused.address) as NodeJS.ErrnoException, '', 0);
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
  const client = parsed.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => reject(error instanceof ImageFetchError ? error : new ImageFetchError(signal.aborted ? 'timed out' : `the fetch failed (${(error as Error).message})`));
    const request = client.get(parsed, { lookup, signal, headers: { accept: 'image/png, image/jpeg, image/webp, image/gif' } }, (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400 && response.headers.location) {
        response.resume();
        // Parsed here, inside an event handler, where a throw would not reach any caller.
        const next = URL.canParse(response.headers.location, parsed) ? new URL(response.headers.location, parsed).toString() : undefined;
        return next ? resolve({ redirect: next }) : fail(new ImageFetchError('the server redirected to an invalid URL'));
      }
      if (status !== 200) {
        response.resume();
        return fail(new ImageFetchError(`the server answered ${status}`));
      }
      const declared = Number(response.headers['content-length']);
      if (declared > settings.maxBytes) {
        response.destroy();
        return fail(tooLarge(settings.maxBytes));
      }
      const chunks: Buffer[] = [];
      let length = 0;
      response.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (length > settings.maxBytes) {
          response.destroy();
          fail(tooLarge(settings.maxBytes));
        } else chunks.push(chunk);
      });
      response.on('end', () => resolve({ bytes: new Uint8Array(Buffer.concat(chunks)) }));
      response.on('error', fail);
    });
    request.on('error', fail);
  });
}

const privateRefusal = (address: string) =>
  new ImageFetchError(`its address ${address} is in a private, loopback or link-local range, which is not fetched unless the server is started with --image-url-private`);
const tooLarge = (limit: number) => new ImageFetchError(`the image is larger than ${limit} bytes (--image-max-bytes)`);

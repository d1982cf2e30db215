/**
 * A stand-in for the Hugging Face hub on loopback: serves a folder under /{repo}/resolve/{rev}/{path}
 * like huggingface.co does (large files by redirect to a CDN path, with X-Linked-Size and a sha256
 * X-Linked-Etag; small files with a git-style ETag), honours Range requests, and can cut a transfer
 * short or corrupt a file on purpose.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

const LFS_THRESHOLD = 10_000;

export interface HubServer {
  url: string;
  /** Every request: method, url, range header. */
  requests: Array<{ url: string; range?: string }>;
  /** Files whose next transfer stops after this many bytes (the connection is destroyed). */
  cutAfter: Map<string, number>;
  /** Files served with one byte flipped while announcing the true checksum. */
  corrupt: Set<string>;
  close(): Promise<void>;
}

export async function startHubServer(repo: string, folder: string): Promise<HubServer> {
  const requests: HubServer['requests'] = [];
  const cutAfter = new Map<string, number>();
  const corrupt = new Set<string>();
  const prefix = `/${repo}/resolve/main/`;

  const server = http.createServer((req, res) => {
    requests.push({ url: req.url!, range: req.headers.range });
    const cdn = /^\/cdn\/(.+)$/.exec(req.url!);
    const rel = cdn ? decodeURIComponent(cdn[1]!) : req.url!.startsWith(prefix) ? decodeURIComponent(req.url!.slice(prefix.length)) : null;
    const file = rel ? path.join(folder, rel) : null;
    if (!rel || !file || rel.includes('..') || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return;
    }
    let content = fs.readFileSync(file);
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (!cdn && content.length > LFS_THRESHOLD) {
      res.writeHead(302, { location: `/cdn/${encodeURIComponent(rel)}`, 'x-linked-size': String(content.length), 'x-linked-etag': `"${sha256}"` }).end();
      return;
    }
    if (corrupt.has(rel)) {
      content = Buffer.from(content);
      content[content.length >> 1]! ^= 0xff;
    }
    let start = 0;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range) start = Number(range[1]);
    const body = content.subarray(start);
    const headers: http.OutgoingHttpHeaders = {
      'content-length': body.length,
      etag: content.length > LFS_THRESHOLD ? `"${sha256}"` : `"${createHash('sha1').update(content).digest('hex')}"`,
      'accept-ranges': 'bytes',
    };
    if (range) headers['content-range'] = `bytes ${start}-${content.length - 1}/${content.length}`;
    res.writeHead(range ? 206 : 200, headers);
    const cut = cutAfter.get(rel);
    if (cut !== undefined) {
      cutAfter.delete(rel);
      res.write(body.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    cutAfter,
    corrupt,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/**
 * The playground page (issue 31): hand-written static files in src/web (no build step, nothing
 * fetched at run time), read once at start-up and served with a strict Content-Security-Policy.
 * `/` gives the page to a browser (app.ts negotiates on Accept); `/playground` always does; the
 * assets live under `/web/`. The page talks to the public API like any client.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Where the files are. tsc does not copy .html/.js/.css, so the compiled module
 * (dist/src/web/plugin.js) reads them from the source folder it was built from (src/web).
 */
const HERE = path.dirname(fileURLToPath(import.meta.url));
const CANDIDATES = [HERE, path.resolve(HERE, '..', '..', '..', 'src', 'web')];
export const WEB_DIR = CANDIDATES.find((dir) => fs.existsSync(path.join(dir, 'index.html'))) ?? HERE;

/**
 * No inline script or style, nothing from another origin; the page may only call this server.
 * Images may also be data: URLs: the thumbnails of images a person attached (read from their own
 * files, never fetched; an image runs no script).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "object-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};
/** Every script, style sheet and icon of the folder: the page's ES modules import each other by name (no build step). */
const isAsset = (name: string) => ['.js', '.css', '.svg'].includes(path.extname(name));

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function asset(body: Buffer, name: string): Asset {
  return { body, type: TYPES[path.extname(name)] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

/**
 * The files, read once. The page names each asset with its content hash (`?v=`), so an asset can be
 * cached for a year and a new build is still picked up; the page itself is revalidated every time.
 * The modules app.js imports are named without a hash (an import names a file): they are revalidated
 * (their ETag) on each load instead.
 */
function loadAssets(dir: string): { page: Asset; docs: Asset; assets: Map<string, Asset> } {
  const assets = new Map<string, Asset>();
  for (const name of fs.readdirSync(dir).filter(isAsset).sort()) assets.set(name, asset(fs.readFileSync(path.join(dir, name)), name));
  const pageOf = (file: string) => {
    let html = fs.readFileSync(path.join(dir, file), 'utf8');
    for (const [name, a] of assets) html = html.replaceAll(`"/web/${name}"`, `"/web/${name}?v=${a.etag.slice(1, 13)}"`);
    return asset(Buffer.from(html, 'utf8'), file);
  };
  // docs.html: the API reference page, which reads /openapi.json.
  return { page: pageOf('index.html'), docs: pageOf('docs.html'), assets };
}

let loaded: ReturnType<typeof loadAssets> | undefined;
const files = () => (loaded ??= loadAssets(WEB_DIR));

function send(request: FastifyRequest, reply: FastifyReply, a: Asset, cacheControl: string) {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('cache-control', cacheControl);
  reply.header('etag', a.etag);
  if (request.headers['if-none-match'] === a.etag) return reply.status(304).send();
  return reply.type(a.type).send(a.body);
}

/** A browser asking for a page: its Accept names text/html (API clients send JSON or nothing). */
export function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === 'string' && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

/** The page; the answer varies with Accept at `/`, so caches keep the page and the JSON apart. */
export function sendPage(request: FastifyRequest, reply: FastifyReply) {
  reply.header('vary', 'Accept');
  return send(request, reply, files().page, 'no-cache');
}

export const webPlugin: FastifyPluginAsync = async (app) => {
  files(); // a missing file fails at start-up, not on the first browser visit
  app.get('/playground', async (request, reply) => send(request, reply, files().page, 'no-cache'));
  app.get('/docs', async (request, reply) => send(request, reply, files().docs, 'no-cache'));
  app.get<{ Params: { name: string }; Querystring: { v?: string } }>('/web/:name', async (request, reply) => {
    const a = files().assets.get(request.params.name);
    if (!a) return reply.callNotFound();
    const current = typeof request.query.v === 'string' && request.query.v === a.etag.slice(1, 13);
    return send(request, reply, a, current ? 'public, max-age=31536000, immutable' : 'no-cache');
  });
};

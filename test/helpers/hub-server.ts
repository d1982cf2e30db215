/**
 * A stand-in for the Hugging Face hub on loopback, serving one repository from a folder with what
 * `@huggingface/hub` calls (read in its source: lib/model-info.ts, list-files.ts,
 * file-download-info.ts, utils/WebBlob.ts):
 *
 *   GET /api/models/{repo}/revision/{rev}            model info with `sha`, the commit (modelInfo)
 *   GET /api/models/{repo}/tree/{rev}[/{path}]        the file list: path, size, git oid, lfs {oid: sha256, size}
 *                                                     (listFiles; ?recursive=true; paged with a Link header)
 *   POST /api/models/{repo}/paths-info/{rev}          the same entries for the paths asked, with lastCommit
 *                                                     (pathsInfo, which downloadFileToCacheDir calls)
 *   GET /{repo}/resolve/{rev}/{path}                  the file (downloadFile): large files by a redirect to
 *                                                     a CDN path, with X-Linked-Size and a sha256 X-Linked-Etag;
 *                                                     small files directly with a git-style ETag; X-Repo-Commit;
 *                                                     Range requests (`bytes=a-b`, `bytes=a-`) answered 206
 *
 * `{rev}` is `main` or the commit. Unknown repositories, revisions and files get the hub's 404s
 * (JSON with X-Error-Code). It can cut a transfer short or corrupt a file on purpose.
 * writeGgufRepo lays out a GGUF repository for it to serve.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { listFiles } from '../../src/models/hub/checksums.js';
import { writeGguf } from '../../scripts/builders/gguf/gguf-writer.js';
import { commitOf, gitBlobSha1, LFS_THRESHOLD } from './hf-cache-fixture.js';

/** Tree entries per page: small, so listing crosses a page boundary as on the real hub. */
const TREE_PAGE = 4;

export interface HubServer {
  url: string;
  /** The commit `main` points at. */
  commit: string;
  /** Every request: url, range header. */
  requests: Array<{ url: string; range?: string }>;
  /** Files whose next transfer of more than this many bytes stops after them (the connection is destroyed). */
  cutAfter: Map<string, number>;
  /** Files served with one byte flipped while the tree announces the true hashes. */
  corrupt: Set<string>;
  close(): Promise<void>;
}

export async function startHubServer(repo: string, folder: string): Promise<HubServer> {
  const requests: HubServer['requests'] = [];
  const cutAfter = new Map<string, number>();
  const corrupt = new Set<string>();
  const files = listFiles(folder);
  const commit = commitOf(folder, files);
  const revisions = new Set(['main', commit]);

  const notFound = (res: http.ServerResponse, code: string, message: string) =>
    res.writeHead(404, { 'content-type': 'application/json', 'x-error-code': code }).end(JSON.stringify({ error: message }));

  const treeEntries = (prefix: string, recursive: boolean) => {
    const entries: object[] = [];
    const dirs = new Set<string>();
    for (const rel of files) {
      if (prefix && !rel.startsWith(`${prefix}/`)) continue;
      const rest = prefix ? rel.slice(prefix.length + 1) : rel;
      if (!recursive && rest.includes('/')) {
        dirs.add(prefix ? `${prefix}/${rest.split('/')[0]}` : rest.split('/')[0]!);
        continue;
      }
      const content = fs.readFileSync(path.join(folder, rel));
      if (content.length > LFS_THRESHOLD) {
        const sha256 = createHash('sha256').update(content).digest('hex');
        const pointer = Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${content.length}\n`);
        entries.push({ type: 'file', oid: gitBlobSha1(pointer), size: content.length, path: rel, lfs: { oid: sha256, size: content.length, pointerSize: pointer.length } });
      } else {
        entries.push({ type: 'file', oid: gitBlobSha1(content), size: content.length, path: rel });
      }
      if (recursive) for (let d = path.posix.dirname(rel); d !== '.' && d !== prefix; d = path.posix.dirname(d)) dirs.add(d);
    }
    return [...[...dirs].sort().map((d) => ({ type: 'directory', oid: createHash('sha1').update(d).digest('hex'), size: 0, path: d })), ...entries];
  };

  const server = http.createServer((req, res) => {
    if (req.method === 'POST') {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ url: req.url! });
        const prefix = `/api/models/${repo}/paths-info/`;
        if (!req.url!.startsWith(prefix)) return notFound(res, 'RepoNotFound', 'Repository not found');
        if (!revisions.has(decodeURIComponent(req.url!.slice(prefix.length)))) return notFound(res, 'RevisionNotFound', 'Invalid rev id');
        const asked = JSON.parse(body) as { paths: string[]; expand?: boolean };
        const entries = treeEntries('', true).filter((e) => asked.paths.includes((e as { path: string }).path));
        const lastCommit = { id: commit, title: 'stand-in commit', date: '2026-01-01T00:00:00.000Z' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(asked.expand ? entries.map((e) => ({ ...e, lastCommit })) : entries));
      });
      return;
    }
    requests.push({ url: req.url!, range: req.headers.range });
    const url = new URL(req.url!, 'http://hub');
    const apiPrefix = `/api/models/${repo}/`;
    if (url.pathname.startsWith('/api/models/')) {
      if (!url.pathname.startsWith(apiPrefix)) return notFound(res, 'RepoNotFound', 'Repository not found');
      const [kind, rev, ...rest] = url.pathname.slice(apiPrefix.length).split('/');
      if (!revisions.has(decodeURIComponent(rev ?? ''))) return notFound(res, 'RevisionNotFound', `Invalid rev id: ${rev}`);
      if (kind === 'revision') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
          _id: 'stand-in', id: repo, sha: commit, private: false, gated: false, downloads: 0, likes: 0, lastModified: '2026-01-01T00:00:00.000Z',
          siblings: files.map((rfilename) => ({ rfilename })),
        }));
        return;
      }
      if (kind === 'tree') {
        const all = treeEntries(rest.map(decodeURIComponent).join('/'), url.searchParams.get('recursive') === 'true');
        const cursor = Number(url.searchParams.get('cursor') ?? 0);
        const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
        if (cursor + TREE_PAGE < all.length) {
          const next = new URL(url.href.replace('http://hub', `http://${req.headers.host}`));
          next.searchParams.set('cursor', String(cursor + TREE_PAGE));
          headers.link = `<${next.href}>; rel="next"`;
        }
        res.writeHead(200, headers).end(JSON.stringify(all.slice(cursor, cursor + TREE_PAGE)));
        return;
      }
      return notFound(res, 'EntryNotFound', 'Not found');
    }

    const cdn = /^\/cdn\/(.+)$/.exec(url.pathname);
    const resolvePrefix = `/${repo}/resolve/`;
    const resolve = url.pathname.startsWith(resolvePrefix) ? /^([^/]+)\/(.+)$/.exec(url.pathname.slice(resolvePrefix.length)) : null;
    if (!cdn && !resolve) return notFound(res, 'RepoNotFound', 'Repository not found');
    if (resolve && !revisions.has(decodeURIComponent(resolve[1]!))) return notFound(res, 'RevisionNotFound', 'Invalid rev id');
    const rel = decodeURIComponent(cdn ? cdn[1]! : resolve![2]!);
    if (rel.includes('..') || !files.includes(rel)) return notFound(res, 'EntryNotFound', 'Entry not found');
    let content = fs.readFileSync(path.join(folder, rel));
    const sha256 = createHash('sha256').update(content).digest('hex');
    if (!cdn && content.length > LFS_THRESHOLD) {
      res.writeHead(302, { location: `/cdn/${encodeURIComponent(rel)}`, 'x-linked-size': String(content.length), 'x-linked-etag': `"${sha256}"`, 'x-repo-commit': commit }).end();
      return;
    }
    if (corrupt.has(rel)) {
      content = Buffer.from(content);
      content[content.length >> 1]! ^= 0xff;
    }
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] ? Math.min(Number(range[2]), content.length - 1) : content.length - 1;
    const body = content.subarray(start, end + 1);
    const headers: http.OutgoingHttpHeaders = {
      'content-length': body.length,
      'content-type': 'application/octet-stream',
      etag: content.length > LFS_THRESHOLD ? `"${sha256}"` : `"${gitBlobSha1(content)}"`,
      'accept-ranges': 'bytes',
      'x-repo-commit': commit,
    };
    if (range) headers['content-range'] = `bytes ${start}-${end}/${content.length}`;
    res.writeHead(range ? 206 : 200, headers);
    const cut = cutAfter.get(rel);
    if (cut !== undefined && body.length > cut) {
      cutAfter.delete(rel);
      res.write(body.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    commit,
    requests,
    cutAfter,
    corrupt,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** The files of the repository writeGgufRepo lays out, by quantization (repository paths). */
export const GGUF_REPO_FILES = {
  Q4_K_M: ['tiny-Q4_K_M.gguf'],
  // Split, in a folder named after its quantization, as the repositories of large models keep them.
  Q8_0: ['Q8_0/tiny-Q8_0-00001-of-00002.gguf', 'Q8_0/tiny-Q8_0-00002-of-00002.gguf'],
  // A multimodal projector: no model of its own, never pulled.
  projector: ['mmproj-tiny-F16.gguf'],
} as const;

/**
 * A GGUF repository as llama.cpp's tools publish one (GGUF_REPO_FILES and a README), in `folder`.
 * The files hold only the metadata the scanner reads (no tensors): a llama chat model whose tokenizer
 * the server rebuilds from metadata, padded past LFS_THRESHOLD so the hub lists them as LFS files
 * with a sha256. A second split part is any bytes: only the first part's header is read.
 */
export function writeGgufRepo(folder: string): void {
  const header = (name: string, file: string, architecture = 'llama') => {
    fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true });
    writeGguf(path.join(folder, file), {
      'general.architecture': { type: 'string', value: architecture },
      'general.name': { type: 'string', value: name },
      [`${architecture}.context_length`]: { type: 'u32', value: 512 },
      'tokenizer.ggml.model': { type: 'string', value: 'gpt2' },
      'tokenizer.ggml.pre': { type: 'string', value: 'qwen2' },
      'tokenizer.ggml.tokens': { type: 'strings', value: ['a', 'b', 'c'] },
      'tokenizer.chat_template': { type: 'string', value: '{% for m in messages %}{{ m.content }}{% endfor %}' },
      'general.description': { type: 'string', value: `${name} `.repeat(LFS_THRESHOLD / 4) },
    }, [], []);
  };
  header('tiny Q4_K_M', GGUF_REPO_FILES.Q4_K_M[0]);
  header('tiny Q8_0', GGUF_REPO_FILES.Q8_0[0]);
  fs.writeFileSync(path.join(folder, GGUF_REPO_FILES.Q8_0[1]), Buffer.alloc(2 * LFS_THRESHOLD, 0x5a));
  header('tiny projector', GGUF_REPO_FILES.projector[0], 'clip');
  fs.writeFileSync(path.join(folder, 'README.md'), '# tiny\n\nGGUF quantizations of a tiny model.\n');
}

/**
 * A repository on the hub at one commit, as `models pull` reads it (pull.ts for ONNX exports,
 * pull-gguf.ts for GGUF repositories), with the hub's own client (`@huggingface/hub`).
 *
 * The commit the revision points at is asked first (modelInfo), then the repository's file list at
 * that commit (listFiles: paths, sizes, the sha256 of every LFS file and the git sha1 of the others),
 * so no file is probed by a 404, every file comes from the same commit, and every file is checked
 * against the hash the hub lists. Each file is fetched with downloadFile into a Store's partial file
 * (pull-store.ts); a pull that was cut resumes from the partial file's length with a Range request
 * (the blob's slice), and a file whose hash is wrong is deleted and reported.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { downloadFile, HubApiError, listFiles, modelInfo, type ListFileEntry } from '@huggingface/hub';
import { HUB_REPO_PATTERN } from '../hf-cache.js';
import type { FileSum, FileSums } from './checksums.js';
import type { Dtype } from '../manifest.js';
import type { Expected, Store } from './pull-store.js';

export class PullError extends Error {}

/** A repository at one commit: what every file of a pull is fetched from and checked against. */
export interface HubRepo {
  /** `owner/name`. */
  repo: string;
  /** The revision asked for (a branch, tag or commit). */
  revision: string;
  /** `owner/name@revision`, for messages. */
  where: string;
  hub: { hubUrl: string; accessToken?: string };
  /** The commit the revision points at. */
  commit: string;
  /** Every file at that commit, by its path in the repository. */
  files: Map<string, ListFileEntry>;
}

/** Checks the repository's name and the token, asks the hub for the commit, then for the file list at that commit. */
export async function openRepo(o: { repo: string; revision: string; endpoint: string; token?: string }): Promise<HubRepo> {
  if (!/^[\w.-]+\/[\w.-]+$/.test(o.repo) || !HUB_REPO_PATTERN.test(o.repo)) {
    throw new PullError(`"${o.repo}" is not a repository name of the form owner/name`);
  }
  // @huggingface/hub refuses other tokens with a TypeError; say it in the user's words.
  if (o.token && !o.token.startsWith('hf_')) throw new PullError('HF_TOKEN must be a Hugging Face access token (hf_...)');
  const hub = { hubUrl: o.endpoint.replace(/\/$/, ''), ...(o.token ? { accessToken: o.token } : {}) };
  const where = `${o.repo}@${o.revision}`;
  const commit = await asked(where, hub.hubUrl, async () => (await modelInfo({ ...hub, name: o.repo, revision: o.revision, additionalFields: ['sha'] })).sha);
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) throw new PullError(`${where}: the hub did not name the commit (got ${JSON.stringify(commit)})`);
  const files = new Map<string, ListFileEntry>();
  await asked(where, hub.hubUrl, async () => {
    for await (const entry of listFiles({ ...hub, repo: o.repo, revision: commit, recursive: true })) if (entry.type === 'file') files.set(entry.path, entry);
  });
  return { repo: o.repo, revision: o.revision, where, hub, commit, files };
}

/** What the hub lists for one file (its size, and the hash to check it by), or undefined when the repository has no such file. */
export function expectedOf(repo: HubRepo, rel: string): Expected | undefined {
  const entry = repo.files.get(rel);
  if (!entry) return undefined;
  if (entry.lfs) return { rel, size: entry.lfs.size, hash: { kind: 'sha256', value: entry.lfs.oid } };
  if (!entry.oid) throw new PullError(`${repo.where}: the hub lists ${rel} without a hash`);
  return { rel, size: entry.size, hash: { kind: 'git-sha1', value: entry.oid } };
}

/** Runs a call to the hub and turns its failures into readable PullErrors. */
async function asked<T>(where: string, hubUrl: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof HubApiError) {
      if (error.statusCode === 404) throw new PullError(`${where}: no such repository or revision on ${hubUrl} (404: ${error.message})`);
      if (error.statusCode === 401 || error.statusCode === 403) throw new PullError(`${where}: access denied (${error.statusCode}); gated repositories need HF_TOKEN`);
      throw new PullError(`${where}: HTTP ${error.statusCode} from the hub (${error.message})`);
    }
    if (error instanceof PullError) throw error;
    throw new PullError(`cannot reach ${hubUrl}: ${(error as Error).message}${(error as { cause?: Error }).cause ? ` (${(error as { cause: Error }).cause.message})` : ''}`);
  }
}

export interface FetchOptions {
  repo: HubRepo;
  file: Expected;
  store: Store;
  /** Called as bytes arrive. */
  onProgress?: (file: string, received: number, total: number | null) => void;
}

/** Fetches one file (resuming a partial one), verifies its size and hash, moves it into place; returns its sums. */
export async function fetchFile(o: FetchOptions): Promise<FileSum> {
  const { file, store, repo } = o;
  const already = store.done(file);
  if (already) {
    o.onProgress?.(file.rel, file.size, file.size);
    return already;
  }
  const part = store.partOf(file);
  fs.mkdirSync(path.dirname(part), { recursive: true });
  let offset = fs.existsSync(part) ? fs.statSync(part).size : 0;
  if (offset > file.size) {
    fs.rmSync(part);
    offset = 0;
  }
  const sha256 = createHash('sha256');
  const git = file.hash.kind === 'git-sha1' ? createHash('sha1').update(`blob ${file.size}\0`) : undefined;
  const hashes: Hash[] = git ? [sha256, git] : [sha256];
  if (offset > 0) for await (const chunk of fs.createReadStream(part)) for (const h of hashes) h.update(chunk as Buffer);

  let received = offset;
  if (offset < file.size) {
    const blob = await asked(repo.where, repo.hub.hubUrl, () =>
      // xet off: the plain HTTP path, whose Range requests resume a cut transfer.
      downloadFile({ repo: repo.repo, path: file.rel, revision: repo.commit, hubUrl: repo.hub.hubUrl, accessToken: repo.hub.accessToken, xet: false }),
    );
    if (!blob) throw new PullError(`${repo.repo}@${repo.commit} lists ${file.rel} but does not serve it`);
    if (blob.size !== file.size) throw new PullError(`${file.rel}: the hub serves ${blob.size} bytes but lists ${file.size}`);
    const out = fs.createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' });
    try {
      // A slice from the offset is a Range request for the rest of the file.
      for await (const chunk of (offset > 0 ? blob.slice(offset) : blob).stream() as unknown as AsyncIterable<Uint8Array>) {
        for (const h of hashes) h.update(chunk);
        received += chunk.byteLength;
        if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
        o.onProgress?.(file.rel, received, file.size);
      }
    } catch (error) {
      throw new PullError(`${file.rel}: download interrupted after ${received} bytes (${(error as Error).message ?? error}); run the same pull again to resume`);
    } finally {
      await new Promise<void>((resolve) => out.end(resolve));
    }
  } else {
    o.onProgress?.(file.rel, received, file.size);
  }
  if (received !== file.size) throw new PullError(`${file.rel}: got ${received} of ${file.size} bytes; run the same pull again to resume`);
  const sum = { size: received, sha256: sha256.digest('hex') };
  const actual = file.hash.kind === 'sha256' ? sum.sha256 : git!.digest('hex');
  if (actual !== file.hash.value) {
    fs.rmSync(part, { force: true });
    throw new PullError(`${file.rel}: checksum mismatch (${file.hash.kind} ${actual}, the hub lists ${file.hash.value}); the partial file was removed, pull again`);
  }
  store.complete(file, sum);
  return sum;
}

/** Describes what a pull fetched as the scanner would; its failure, in the user's words, is the pull's. */
export function servable<T>(describe: () => T): T {
  try {
    return describe();
  } catch (error) {
    throw new PullError(`the files were fetched but the server could not serve them: ${(error as Error).message}`);
  }
}

export interface PullOptions {
  /** `owner/name`; for a GGUF repository also `owner/name:QUANT` (or `hf.co/owner/name:QUANT`, Ollama's spelling). */
  repo: string;
  revision: string;
  /** ONNX exports: the transformers.js dtype; default the export's own, else fp32. */
  dtype?: Dtype;
  /** GGUF repositories: the quantization to fetch (Q4_K_M, Q8_0, IQ4_XS, F16...; any case); the same as `owner/name:QUANT`. */
  quant?: string;
  /** Hub or mirror base URL (HF_ENDPOINT), e.g. https://huggingface.co */
  endpoint: string;
  modelsDir: string;
  /** Folder name / model id in models/; default: the repository name. Not with hfCacheDir (the id is then org/name). */
  id?: string;
  /** Write into this Hugging Face cache folder (its layout) instead of models/. */
  hfCacheDir?: string;
  /** Called as bytes arrive. */
  onProgress?: (file: string, received: number, total: number | null) => void;
  log?: (line: string) => void;
  /** Authorization for gated repos (HF_TOKEN). */
  token?: string;
}

export interface PullResult {
  /** The model id the server will serve it as: the folder name in models/, `org/name` from the cache (`…:<QUANT>` for one GGUF model of several). */
  id: string;
  /** Other names the server answers to for it (the only GGUF model of its folder: `<id>:<QUANT>`). */
  aliases: string[];
  /** The model folder (models/<id>) or the snapshot folder in the cache. */
  dir: string;
  /** The commit the files come from. */
  commit: string;
  files: FileSums;
}

/** Where a pull lands: `id` is the folder name in models/ (`target`), or `org/name` in the cache. */
export interface PullDestination {
  id: string;
  target: string;
  toCache: boolean;
}

/**
 * Writes a repository into a folder in the Hugging Face cache layout, the way huggingface_hub does:
 * file contents in blobs/ named by their hash (sha256 for large files, git's blob sha1 for small
 * ones), snapshots/<commit>/<path> as relative symlinks into blobs/, refs/<revision> holding the commit.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isDerivedFile } from '../../src/models/derived-files.js';
import { listFiles } from '../../src/models/hub/checksums.js';
import { repoFolderName } from '../../src/models/hf-cache.js';

/** Files above this size are LFS files on the hub (named by sha256 in blobs/); the hub's threshold is 10 MB, smaller here to cover both kinds. */
export const LFS_THRESHOLD = 10_000;

export function gitBlobSha1(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export function blobName(content: Buffer): string {
  return content.length > LFS_THRESHOLD ? createHash('sha256').update(content).digest('hex') : gitBlobSha1(content);
}

/** A commit hash for a set of files: the same files give the same commit. */
export function commitOf(folder: string, files: string[]): string {
  const hash = createHash('sha1');
  for (const rel of files) hash.update(`${rel}\0${blobName(fs.readFileSync(path.join(folder, rel)))}\0`);
  return hash.digest('hex');
}

export interface CachedRepo {
  repoDir: string;
  snapshotDir: string;
  commit: string;
}

/**
 * Puts the files of `source` (a model folder; derived files and manifest.json left out unless
 * `files` lists them) into `cacheDir` as repository `repo` at `revision`.
 */
export function writeCachedRepo(options: { cacheDir: string; repo: string; source: string; files?: string[]; revision?: string }): CachedRepo {
  const files = options.files ?? listFiles(options.source).filter((rel) => !isDerivedFile(rel) && rel !== 'manifest.json');
  const repoDir = path.join(options.cacheDir, repoFolderName(options.repo));
  const commit = commitOf(options.source, files);
  const snapshotDir = path.join(repoDir, 'snapshots', commit);
  fs.mkdirSync(path.join(repoDir, 'blobs'), { recursive: true });
  for (const rel of files) {
    const content = fs.readFileSync(path.join(options.source, rel));
    const blob = path.join(repoDir, 'blobs', blobName(content));
    if (!fs.existsSync(blob)) fs.writeFileSync(blob, content);
    const link = path.join(snapshotDir, rel);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.relative(path.dirname(link), blob), link);
  }
  fs.mkdirSync(path.join(repoDir, 'refs'), { recursive: true });
  fs.writeFileSync(path.join(repoDir, 'refs', options.revision ?? 'main'), commit);
  return { repoDir, snapshotDir, commit };
}

/**
 * Where `models pull` (pull.ts, pull-gguf.ts) keeps the files it fetches, one Store per layout: a
 * staging folder whose files become models/<id>, or the Hugging Face cache (blobs/, snapshots/<commit>/, refs/) as
 * huggingface_hub writes it. hub-repo.ts fetches and verifies; a Store says where the finished and
 * partial files are and lays out what the server reads once every file is in.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FileSum } from './checksums.js';

/** What the hub lists for one file: its size and the hash to check it by. */
export interface Expected {
  rel: string;
  size: number;
  /** sha256 of an LFS file, git blob sha1 of the others: also its blob name in the cache. */
  hash: { kind: 'sha256' | 'git-sha1'; value: string };
}

/** Where one layout keeps finished and partial files. */
export interface Store {
  /** Where a finished file is. */
  pathOf(file: Expected): string;
  /** Where its partial download goes. */
  partOf(file: Expected): string;
  /** A finished file already there (from an earlier run, or from another tool sharing the cache): its sums, else undefined. */
  done(file: Expected): FileSum | undefined;
  /** Moves a verified partial file into place. */
  complete(file: Expected, sum: FileSum): void;
  /**
   * Every file is in: lays out the folder the server reads (not yet visible to it); returns that
   * folder. `manifest`: written as the folder's manifest.json (models/ only; a GGUF pull writes none).
   */
  finish(o: { files: Expected[]; manifest?: object }): string;
  /** The cache only: points the revision's ref at the commit (the snapshot becomes the one served). */
  publish(revision: string): void;
}

export function folderStore(staging: string): Store {
  const sumFile = (file: Expected) => `${path.join(staging, file.rel)}.sum`;
  return {
    pathOf: (file) => path.join(staging, file.rel),
    partOf: (file) => `${path.join(staging, file.rel)}.part`,
    done: (file) => (fs.existsSync(path.join(staging, file.rel)) && fs.existsSync(sumFile(file)) ? (JSON.parse(fs.readFileSync(sumFile(file), 'utf8')) as FileSum) : undefined),
    complete(file, sum) {
      fs.renameSync(`${path.join(staging, file.rel)}.part`, path.join(staging, file.rel));
      fs.writeFileSync(sumFile(file), JSON.stringify(sum));
    },
    finish({ files, manifest }) {
      for (const file of files) fs.rmSync(sumFile(file), { force: true });
      if (manifest) fs.writeFileSync(path.join(staging, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
      return staging;
    },
    publish() {},
  };
}

export function cacheStore(repoDir: string, commit: string): Store {
  const blob = (file: Expected) => path.join(repoDir, 'blobs', file.hash.value);
  const snapshot = path.join(repoDir, 'snapshots', commit);
  return {
    pathOf: blob,
    partOf: (file) => `${blob(file)}.incomplete`,
    done(file) {
      // A blob is named by its hash: one that is there with the right size is that file (huggingface_hub trusts it too).
      if (!fs.existsSync(blob(file)) || fs.statSync(blob(file)).size !== file.size) return undefined;
      return { size: file.size, sha256: file.hash.kind === 'sha256' ? file.hash.value : createHash('sha256').update(fs.readFileSync(blob(file))).digest('hex') };
    },
    complete(file) {
      fs.renameSync(`${blob(file)}.incomplete`, blob(file));
    },
    finish({ files }) {
      for (const file of files) {
        const link = path.join(snapshot, file.rel);
        fs.mkdirSync(path.dirname(link), { recursive: true });
        const temp = `${link}.${process.pid}.link`;
        fs.rmSync(temp, { force: true });
        fs.symlinkSync(path.relative(path.dirname(link), blob(file)), temp);
        fs.renameSync(temp, link);
      }
      return snapshot;
    },
    publish(revision) {
      if (revision === commit) return; // pulled by commit: huggingface_hub writes no ref either
      const ref = path.join(repoDir, 'refs', revision);
      fs.mkdirSync(path.dirname(ref), { recursive: true });
      fs.writeFileSync(`${ref}.${process.pid}.tmp`, commit);
      fs.renameSync(`${ref}.${process.pid}.tmp`, ref);
    },
  };
}

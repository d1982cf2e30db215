/**
 * File checksums of a model folder: what `pull` records and what `pack`/`unpack` verify.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isDerivedFile } from '../derived-files.js';

export interface FileSum {
  size: number;
  sha256: string;
}

export type FileSums = Record<string, FileSum>;

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Every file below `dir` (following symlinks), as forward-slash relative paths, sorted; files the server derives are left out. */
export function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    const full = path.join(dir, rel);
    if (fs.statSync(full).isDirectory()) out.push(...listFiles(dir, rel));
    else if (!isDerivedFile(rel)) out.push(rel);
  }
  return out.sort();
}

export async function checksumFolder(dir: string, except: string[] = []): Promise<FileSums> {
  return checksumFiles(dir, listFiles(dir).filter((rel) => !except.includes(rel)));
}

/** Sums of some files of `dir` (forward-slash relative paths). */
export async function checksumFiles(dir: string, files: string[]): Promise<FileSums> {
  const sums: FileSums = {};
  for (const rel of files) sums[rel] = { size: fs.statSync(path.join(dir, rel)).size, sha256: await sha256File(path.join(dir, rel)) };
  return sums;
}

/** Compares a folder with recorded sums; returns one line per problem (empty when it matches). */
export async function verifyFolder(dir: string, sums: FileSums, except: string[] = []): Promise<string[]> {
  const problems: string[] = [];
  const present = new Set(listFiles(dir).filter((f) => !except.includes(f)));
  for (const [rel, expected] of Object.entries(sums)) {
    const full = path.join(dir, rel);
    if (!present.has(rel)) {
      problems.push(`${rel}: missing`);
      continue;
    }
    present.delete(rel);
    const size = fs.statSync(full).size;
    if (size !== expected.size) {
      problems.push(`${rel}: size ${size} bytes, expected ${expected.size}`);
      continue;
    }
    const actual = await sha256File(full);
    if (actual !== expected.sha256) problems.push(`${rel}: sha256 ${actual}, expected ${expected.sha256}`);
  }
  for (const extra of present) problems.push(`${extra}: not in the checksum list`);
  return problems;
}

export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

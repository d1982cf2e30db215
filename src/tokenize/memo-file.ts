/**
 * The prompt encoder's segments (./prompt-encoder.ts, ./segment-memo.ts) kept on disk beside a
 * model's prompt cache, so that the first turn after an unload or a restart does not tokenize the
 * whole conversation again: in a new worker, the chat turn's start on Claude Code's 18.7k-token
 * prompt took 280-480 ms, most of it that tokenization (docs/benchmarks.md, agent sessions on GGUF).
 *
 * One file per model signature, written when the model is released and read when it is loaded
 * (src/engines/llama/slot-disk.ts). It is checked before use: our format name, a SHA-256 of its
 * entries, and every token in the tokenizer's vocabulary; a file that fails is logged and ignored
 * (tokens taken from it are only ever a tokenizer's own output for the same text, so no check can
 * pass a wrong one short of a forged checksum, which needs write access to the cache folder).
 * Writes are atomic (a `.tmp` file renamed into place; the disk store removes stale temps). At most
 * the memo's own budget (MEMO_BYTES), outside the prompt cache's disk budget.
 *
 * Contract: worker thread; synchronous read at load, asynchronous write at release.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { LogFn } from '../core/log.js';
import { MEMO_BYTES, type PromptEncoder } from './prompt-encoder.js';

const FORMAT = 'segment-memo/1';

const digest = (entries: string) => createHash('sha256').update(entries).digest('hex');

/** Writes the encoder's segments to `file` (nothing when it has none, or more than the memo's budget). */
export async function writeMemoFile(file: string, encoder: PromptEncoder): Promise<void> {
  const entries = encoder.memoEntries();
  if (entries.length === 0) return;
  const body = JSON.stringify(entries);
  if (body.length > MEMO_BYTES) return;
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  try {
    await fs.promises.writeFile(temp, JSON.stringify({ format: FORMAT, sha256: digest(body), entries: body }));
    await fs.promises.rename(temp, file);
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
}

/** Reads `file` into the encoder's memo: the number of segments restored (0 when there is no file, or one that fails its checks, logged). */
export function readMemoFile(file: string, encoder: PromptEncoder, log: LogFn): number {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return 0; // none written yet
  }
  try {
    const parsed = JSON.parse(text) as { format?: unknown; sha256?: unknown; entries?: unknown };
    if (parsed.format !== FORMAT || typeof parsed.entries !== 'string') throw new Error('not a segment memo file');
    if (parsed.sha256 !== digest(parsed.entries)) throw new Error('its checksum does not match');
    const entries = JSON.parse(parsed.entries) as unknown;
    if (!Array.isArray(entries) || !entries.every((e) => Array.isArray(e) && e.length === 2)) throw new Error('its entries are not [segment, tokens] pairs');
    if (!encoder.restoreMemo(entries as Array<[unknown, unknown]>)) throw new Error("its tokens are not this tokenizer's");
    return entries.length;
  } catch (error) {
    log('warn', `prompt cache: the tokenizer's segment file ${file} is ignored`, error);
    return 0;
  }
}

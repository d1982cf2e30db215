/**
 * bench:agent-cache on a GGUF chat model (issue 40): a ten-turn Claude Code session whose first turn
 * is Claude Code's captured first request (~18.7k tokens on the Qwen3 template), each later turn the
 * whole conversation so far plus one exchange, as an agent resends it. Four servers of the same file,
 * with no manifest (the trained context, the default KV budget), one turn at a time each, in an
 * order that rotates every turn:
 * - cold: the prompt cache off (PROMPT_CACHE_BYTES=0, PROMPT_CACHE_DISK_BYTES=0): every turn prefills
 *   its whole prompt, the baseline;
 * - memory: the cache on, nothing in between: the turn reads the sequence the last turn left;
 * - unload: the cache on, the model unloaded after every turn (its sequences written to the disk
 *   cache as it goes) and loaded again before the next, so the turn reads its prefix from disk;
 * - restart: the cache on, the server stopped after every turn and started again on the same cache
 *   folder, so the turn reads its prefix from disk in a new process.
 * Time to first token (the first content block's event) excludes the unload, the load and the
 * restart themselves: they happen before the turn's request is sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ggufFolder } from './gguf-folder.js';
import { median } from './report.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

export const GGUF_MODES = ['cold', 'memory', 'unload', 'restart'] as const;
export type GgufMode = (typeof GGUF_MODES)[number];

export interface TurnResult { ms: number; inputTokens: number; cacheRead: number }
export type Send = (server: ServerProcess, body: Record<string, unknown>) => Promise<TurnResult>;

export interface GgufSessionOptions {
  /** A GGUF file; default: the test GGUF (Qwen3's tokenizer and template, 32,768 tokens trained). */
  gguf?: string;
  turns: number;
  runs: number;
  /** Claude Code's captured first request. */
  first: Record<string, unknown>;
  send: Send;
  log: (line: string) => void;
}

export interface GgufRow { run: number; turn: number; mode: GgufMode; ms: number; inputTokens: number; cacheRead: number }

/** The body of turn `turn` (1-based): the first request, then one exchange per turn since. */
function turnBody(first: Record<string, unknown>, model: string, session: string, turn: number): Record<string, unknown> {
  const messages = [...(first.messages as unknown[])];
  for (let t = 2; t <= turn; t++) {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Step ${t - 1} is done: the files are read and the plan is written down.` }] });
    messages.push({ role: 'user', content: [{ type: 'text', text: `Go on with step ${t}.` }] });
  }
  // Thinking off, so the one token asked for is not the forced `<think>` (which streams no text).
  return { ...first, model, messages, max_tokens: 1, stream: true, thinking: { type: 'disabled' }, system: [{ type: 'text', text: session }, ...(first.system as unknown[])] };
}

async function post(server: ServerProcess, route: string, body: unknown): Promise<void> {
  const res = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
}

export async function ggufSession(options: GgufSessionOptions): Promise<{ model: string; rows: GgufRow[] }> {
  // No manifest: the server reads the file's trained context.
  const { dir: modelsDir, model } = ggufFolder(options.gguf, 'bench-agent-cache-gguf');
  const cacheDirs = Object.fromEntries(GGUF_MODES.map((mode) => [mode, fs.mkdtempSync(path.join(os.tmpdir(), `bench-agent-cache-${mode}-`))])) as Record<GgufMode, string>;
  const envOf = (mode: GgufMode): Record<string, string> => ({
    PROMPT_CACHE_DIR: cacheDirs[mode],
    ...(mode === 'cold' ? { PROMPT_CACHE_BYTES: '0', PROMPT_CACHE_DISK_BYTES: '0' } : {}),
  });
  const start = (mode: GgufMode) => startServerProcess(['--models-dir', modelsDir], envOf(mode), { compiled: true });
  const servers = {} as Record<GgufMode, ServerProcess>;
  for (const mode of GGUF_MODES) servers[mode] = await start(mode);
  const rows: GgufRow[] = [];
  try {
    for (let run = 0; run < options.runs; run++) {
      // A fresh conversation each run, so its first turn is cold on every server (the disk too).
      const session = `Session ${run} ${Date.now()}.`;
      for (let turn = 1; turn <= options.turns; turn++) {
        const order = GGUF_MODES.map((_, i) => GGUF_MODES[(i + turn + run) % GGUF_MODES.length]!);
        for (const mode of order) {
          if (turn > 1 && mode === 'unload') {
            await post(servers.unload, '/models/unload', { model });
            await post(servers.unload, '/models/load', { model });
          }
          if (turn > 1 && mode === 'restart') {
            await servers.restart.stop();
            servers.restart = await start('restart');
          }
          const r = await options.send(servers[mode], turnBody(options.first, model, session, turn));
          rows.push({ run, turn, mode, ...r });
          options.log(`run ${run} turn ${turn} ${mode}: ${r.ms.toFixed(0)} ms, ${r.inputTokens} tokens, ${r.cacheRead} read from cache`);
        }
      }
    }
  } finally {
    await Promise.all(GGUF_MODES.map((mode) => servers[mode].stop()));
    for (const dir of [modelsDir, ...Object.values(cacheDirs)]) fs.rmSync(dir, { recursive: true, force: true });
  }
  return { model, rows };
}

/** Per turn: the prompt, then each mode's median TTFT, its cache reads and its ratio to cold. */
export function ggufTable(rows: GgufRow[], turns: number): Array<Array<string | number>> {
  const of = (turn: number, mode: GgufMode) => rows.filter((r) => r.turn === turn && r.mode === mode);
  const ms = (turn: number, mode: GgufMode) => median(of(turn, mode).map((r) => r.ms));
  return Array.from({ length: turns }, (_, i) => i + 1).map((turn) => {
    const cold = ms(turn, 'cold');
    return [
      turn,
      of(turn, 'cold').at(-1)!.inputTokens,
      cold.toFixed(0),
      ...GGUF_MODES.slice(1).flatMap((mode) => [ms(turn, mode).toFixed(0), of(turn, mode).at(-1)!.cacheRead, (ms(turn, mode) / cold).toFixed(3)]),
    ];
  });
}

export const GGUF_COLUMNS = ['turn', 'prompt tokens', 'cold ms', ...GGUF_MODES.slice(1).flatMap((mode) => [`${mode} ms`, `${mode} cache read`, `${mode} / cold`])];

/** Turns 2..n: the median of each mode's ratio to cold, against the goals. */
export function ggufSummary(rows: GgufRow[], turns: number): string {
  const ratios = (mode: GgufMode) => median(Array.from({ length: turns - 1 }, (_, i) => i + 2).map((turn) => {
    const at = (m: GgufMode) => median(rows.filter((r) => r.turn === turn && r.mode === m).map((r) => r.ms));
    return at(mode) / at('cold');
  }));
  return `Turns 2-${turns}, median of warm / cold: in memory ${ratios('memory').toFixed(3)} (goal ≤ 0.1), from disk after an unload ${ratios('unload').toFixed(3)} and after a restart ${ratios('restart').toFixed(3)} (goal ≤ 0.2).`;
}

/**
 * Agent sessions on a GGUF chat model with no manifest (issue 40): the test GGUF served its trained
 * 32,768-token context from the file's own metadata, within the default KV budget, and a prompt
 * cache on disk in a folder of the test's. The Claude Code CLI (a tool loop: its shell tool called,
 * then the answer) and the Codex CLI (`exec`, then `exec resume --last`) each run a session whose
 * first request is over 8,192 tokens (the old cap), with Claude Code's own max_tokens of 32,000; the
 * next turn reads its prefix from the cache: in memory, then after the model was unloaded (its
 * sequences written to disk as it went), then after the server was restarted on the same folder.
 * A recording proxy in front of the server keeps each answer's usage; the model's turns are
 * scripted (the script hook), so the CLIs see complete turns whatever the random weights say.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { runClaudeCode } from '../helpers/clients.js';
import { codexHome, failedExchanges, recordingProxy, removeCodexHome, runCodex, type CodexDirs, type Recorded, type RecordingProxy } from '../helpers/codex.js';
import { GGUF_CHAT_MODEL, GGUF_MODELS_DIR } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'agent-sessions-key';
const CLI_TIMEOUT_MS = 120_000;
const COMMAND = 'echo $((6*7))';
const CLAUDE_PROMPT = 'Run the multiplication check.';
const ANSWER = 'The command printed 42.';
const CODEX_REPLY = 'Hi from the local model.';

const lastUser = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
/** Qwen3's turns (the test GGUF's template): Claude Code thinks, calls Bash, then answers; Codex answers. */
const script = (request: ChatRequest) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return `<think>\nIt ran.\n</think>\n\nThe command printed ${last.content.trim().split('\n').at(-1)}.`;
  const text = lastUser(request);
  if (text.includes(CLAUDE_PROMPT)) return `<think>\nRun it.\n</think>\n\n<tool_call>\n${JSON.stringify({ name: 'Bash', arguments: { command: COMMAND, description: 'Multiply' } })}\n</tool_call>`;
  if (text.includes('say hi')) return CODEX_REPLY;
  return undefined;
};

/** The usage an exchange's answer reports: message_start's (Messages) or response.completed's (Responses). */
function usage(exchange: Recorded): { input: number; cacheRead: number } | undefined {
  for (const frame of exchange.body.split('\n\n')) {
    const data = frame.split('\n').find((l) => l.startsWith('data: '));
    if (!data) continue;
    const event = JSON.parse(data.slice(6)) as { type?: string; message?: { usage: Record<string, number> }; response?: { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } } };
    if (event.type === 'message_start') return { input: event.message!.usage.input_tokens! + event.message!.usage.cache_read_input_tokens!, cacheRead: event.message!.usage.cache_read_input_tokens! };
    if (event.type === 'response.completed') return { input: event.response!.usage.input_tokens, cacheRead: event.response!.usage.input_tokens_details.cached_tokens };
  }
  return undefined;
}

let cacheDir: string;
let server: RealServer;
let proxy: RecordingProxy;
let codexDirs: CodexDirs;
/** One home and working directory for every Claude Code run: their paths are in its system prompt. */
let claudeCwd: string;
let claudeHome: string;
const start = () => startRealServer({ apiKeys: [KEY], modelsDir: GGUF_MODELS_DIR, only: [GGUF_CHAT_MODEL], script, engine: { promptCacheDir: cacheDir } });

beforeAll(async () => {
  cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-cache-'));
  claudeCwd = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'claude-cwd-'));
  claudeHome = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'claude-home-'));
  server = await start();
  proxy = await recordingProxy(() => server.url);
  codexDirs = codexHome({ model: GGUF_CHAT_MODEL, baseURL: proxy.url, key: KEY });
}, 300_000);
afterAll(async () => {
  proxy?.close();
  await server?.close();
  removeCodexHome(codexDirs);
  for (const dir of [cacheDir, claudeCwd, claudeHome]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Claude Code's tool loop; the usage of its requests to the model, in order. */
async function claudeCodeSession(): Promise<Array<{ input: number; cacheRead: number }>> {
  const from = proxy.exchanges.length;
  // Claude Code's own max_tokens (32,000): the model's limit, clamped to the room left.
  const run = await runClaudeCode({ baseURL: proxy.url, apiKey: KEY, model: GGUF_CHAT_MODEL }, {
    prompt: CLAUDE_PROMPT, cwd: claudeCwd, home: claudeHome, args: ['--allowedTools', 'Bash'], maxOutputTokens: 32_000, timeoutMs: CLI_TIMEOUT_MS,
  });
  expect(run.timedOut).toBe(false);
  expect(run.json, run.stdout + run.stderr).toBeDefined();
  expect(run.json!.is_error, run.json!.result).toBe(false);
  expect(run.json!.result).toBe(ANSWER);
  const exchanges = proxy.exchanges.slice(from).filter((e) => e.url.startsWith('/v1/messages') && !e.url.includes('count_tokens'));
  expect(failedExchanges(exchanges)).toEqual([]);
  // Its turns only (Claude Code also sends short requests of its own: a title, a quota check).
  return exchanges.map(usage).filter((u): u is { input: number; cacheRead: number } => u !== undefined && u.input > 8_192);
}

/** One Codex turn (`resume --last` after the first); the usage of its requests. */
async function codexTurn(first: boolean): Promise<Array<{ input: number; cacheRead: number }>> {
  const from = proxy.exchanges.length;
  const run = await runCodex(['exec', '--skip-git-repo-check', ...(first ? [] : ['resume', '--last']), first ? 'say hi' : 'say hi again'], codexDirs, CLI_TIMEOUT_MS);
  expect(run.code, run.stderr.slice(-2000)).toBe(0);
  expect(run.stdout + run.stderr).toContain(CODEX_REPLY);
  const exchanges = proxy.exchanges.slice(from).filter((e) => e.url === '/v1/responses');
  expect(failedExchanges(exchanges)).toEqual([]);
  return exchanges.map(usage).filter((u): u is { input: number; cacheRead: number } => u !== undefined);
}

describe(`agent sessions on ${GGUF_CHAT_MODEL} (no manifest: its trained context; prompt cache on disk)`, () => {
  it('Claude Code and Codex: over 8,192 tokens; the next turn reads the cache in memory, after an unload, and after a restart', async () => {
    const listed = await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).json() as { data: Array<{ id: string; context_length?: number; max_model_len?: number }> };
    const record = listed.data.find((m) => m.id === GGUF_CHAT_MODEL)!;
    expect(record.context_length ?? record.max_model_len).toBe(32_768);

    // In memory: Claude Code's second request (after the call) and Codex's second turn.
    const claude = await claudeCodeSession();
    expect(claude.length).toBeGreaterThanOrEqual(2);
    expect(claude[0]!.input).toBeGreaterThan(8_192);
    expect(claude[1]!.cacheRead).toBeGreaterThan(0);
    const codexFirst = await codexTurn(true);
    expect(codexFirst[0]!.input).toBeGreaterThan(8_192);
    expect((await codexTurn(false))[0]!.cacheRead).toBeGreaterThan(0);

    // After an unload: the model's sequences went to disk as it was released; the next turns read them.
    expect(await server.service.unload(GGUF_CHAT_MODEL)).toBe(true);
    // Both sessions' sequences (a new conversation never takes a long session's sequence for the chat template's first tokens).
    const files = fs.readdirSync(cacheDir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && f.name.endsWith('.lspc'));
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect((await claudeCodeSession())[0]!.cacheRead).toBeGreaterThan(1_024);
    expect((await codexTurn(false))[0]!.cacheRead).toBeGreaterThan(1_024);

    // After a restart on the same folder.
    await server.close();
    server = await start();
    expect((await claudeCodeSession())[0]!.cacheRead).toBeGreaterThan(1_024);
    expect((await codexTurn(false))[0]!.cacheRead).toBeGreaterThan(1_024);
  }, 15 * CLI_TIMEOUT_MS);
});

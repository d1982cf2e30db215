/**
 * The Codex CLI (@openai/codex, pinned as a devDependency) against a listening server, offline,
 * through a custom model provider (`wire_api = "responses"`): `codex exec` completes a turn, and
 * `codex exec resume --last` completes a second one that reads the first from the prompt cache.
 * Every request Codex sends goes through a recording proxy in front of the server, which shows each
 * was answered 200. The model's turns are written for the test (test hooks: the sampler is made to
 * pick these tokens, then end of sequence), so Codex sees complete turns whatever the random weights.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/core/types.js';
import { codexHome, failedExchanges, recordingProxy, removeCodexHome, runCodex, type CodexDirs, type RecordingProxy } from '../helpers/codex.js';
import { CHAT_MODEL } from '../helpers/paths.js';
import { startRealServer, type RealServer } from '../helpers/real-server.js';

const KEY = 'codex-test-key';
const FIRST_REPLY = 'Hi from the local model.';
const SECOND_REPLY = 'Still here, second turn.';
const CODEX_TIMEOUT_MS = 90_000;

const SUMMARY = 'Summary: the user gave numbered tasks; each was noted; nothing is left to do.';
const TASK_REPLY = 'Task noted.';

const lastUserText = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  const text = lastUserText(request);
  if (text.includes('say hi again')) return SECOND_REPLY;
  if (text.includes('say hi')) return FIRST_REPLY;
  // Codex's own compaction prompt (0.169, a custom provider compacts through an ordinary turn).
  if (text.includes('CONTEXT CHECKPOINT COMPACTION')) return SUMMARY;
  if (/^task \d+$/.test(text.trim())) return TASK_REPLY;
  return undefined;
};

const codex = (args: string[], dirs: CodexDirs) => runCodex(args, dirs, CODEX_TIMEOUT_MS);

/** The usage of the response a stream completed with. */
function completedUsage(body: string): { input_tokens: number; input_tokens_details: { cached_tokens: number } } | undefined {
  const done = body.split('\n\n').find((frame) => frame.startsWith('event: response.completed'));
  if (!done) return undefined;
  return (JSON.parse(done.slice(done.indexOf('data: ') + 6)) as { response: { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } } }).response.usage;
}

let server: RealServer;
let proxy: RecordingProxy;
let dirs: CodexDirs;

/** A Codex home naming the server (through the proxy) as its provider; `extra`: more top-level settings. */
const home = (extra: string[] = []) => codexHome({ model: CHAT_MODEL, baseURL: proxy.url, key: KEY, extra });
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL], script });
  proxy = await recordingProxy(server.url);
  dirs = home();
});
afterAll(() => {
  proxy?.close();
  server?.close();
  removeCodexHome(dirs);
});

describe('Codex CLI (responses wire API, custom provider, offline)', () => {
  it('codex exec completes a turn, and codex exec resume --last a second one that reads the first from the prompt cache', async () => {
    const first = await codex(['exec', '--skip-git-repo-check', 'say hi'], dirs);
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    expect(first.stdout + first.stderr).toContain(FIRST_REPLY);
    const firstTurn = proxy.exchanges.filter((e) => e.url === '/v1/responses');
    expect(firstTurn.length).toBeGreaterThan(0);

    const second = await codex(['exec', '--skip-git-repo-check', 'resume', '--last', 'say hi again'], dirs);
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    expect(second.stdout + second.stderr).toContain(SECOND_REPLY);

    // Every request Codex sent was answered 200.
    expect(failedExchanges(proxy.exchanges)).toEqual([]);
    const turns = proxy.exchanges.filter((e) => e.url === '/v1/responses').map((e) => completedUsage(e.body));
    expect(turns.every((usage) => usage !== undefined)).toBe(true);
    const last = turns.at(-1)!;
    // The second turn resends the first (Codex stores nothing server-side): its prefix was cached.
    expect(last.input_tokens).toBeGreaterThan(turns[0]!.input_tokens);
    expect(last.input_tokens_details.cached_tokens).toBeGreaterThan(0);
  }, 2 * CODEX_TIMEOUT_MS);

  it('a conversation past a small window compacts (Codex summarises through an ordinary turn) and goes on', async () => {
    // Codex's own prompt and tools are a few thousand tokens: past 3000, it compacts before the next turn.
    const small = home(['model_context_window = 9000', 'model_auto_compact_token_limit = 3000']);
    const before = proxy.exchanges.length;
    try {
      const runs = [];
      runs.push(await codex(['exec', '--skip-git-repo-check', 'task 1'], small));
      for (const n of [2, 3]) runs.push(await codex(['exec', '--skip-git-repo-check', 'resume', '--last', `task ${n}`], small));
      for (const run of runs) expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(runs.slice(1).some((run) => /context compacted/i.test(run.stdout + run.stderr))).toBe(true);
      const exchanges = proxy.exchanges.slice(before);
      expect(failedExchanges(exchanges)).toEqual([]);
      // The compaction turn answered the summary, and a later turn sent it back as its history.
      const compaction = exchanges.findIndex((e) => e.sent.includes('CONTEXT CHECKPOINT COMPACTION'));
      expect(compaction).toBeGreaterThanOrEqual(0);
      expect(exchanges[compaction]!.body).toContain(SUMMARY);
      expect(exchanges.slice(compaction + 1).some((e) => e.sent.includes(SUMMARY.slice(0, 40)))).toBe(true);
    } finally {
      removeCodexHome(small);
    }
  }, 4 * CODEX_TIMEOUT_MS);
});

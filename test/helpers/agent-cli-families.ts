/**
 * The agent CLIs through a whole tool loop against test models of other families (test/helpers/
 * family-model.ts: the family's template, its markers as special tokens), on a listening server:
 * the Codex CLI against a gpt-oss-templated model (harmony), the Claude Code CLI against a
 * Devstral- and a GLM-4.7-templated one. The model's turns are scripted (the script hook: the
 * sampler is made to pick these tokens), written as the family writes them, markers and all: a
 * call to the CLI's own shell tool, then, once the tool's result is back, an answer that quotes the
 * result's last line. The command prints what its text does not hold (`echo $((6*7))` prints 42),
 * so the answer the CLI prints proves the call was parsed, run by the CLI, and its output sent back.
 *
 * One suite, registered by each engine's test file: test/clients/agent-clis-families.e2e.test.ts
 * (ONNX) and agent-clis-families-llama.e2e.test.ts (the same models as GGUF files, on llama.cpp).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage, ChatRequest } from '../../src/core/types.js';
import { runClaudeCode } from './clients.js';
import { codexHome, failedExchanges, recordingProxy, removeCodexHome, runCodex, type CodexDirs, type RecordingProxy } from './codex.js';
import { FAMILY_SPECS, makeFamilyModels, type FamilyModels, type FamilySpec } from './family-model.js';
import { startRealServer, type RealServer } from './real-server.js';

const KEY = 'agent-clis-families-key';
const CLI_TIMEOUT_MS = 90_000;
/** The models start at once: on a loaded machine that takes minutes, not the default hook limit. */
const START_TIMEOUT_MS = 300_000;

const COMMAND = 'echo $((6*7))';
const PROMPT = 'Run the multiplication check.';
/** The answer once the result is back: the result's last line, so it holds 42 only if the command ran. */
const answer = (result: string) => `The command printed ${result.trim().split('\n').at(-1)}.`;
const EXPECTED = 'The command printed 42.';

/** Each family's call to the CLI's shell tool, as the family writes it. */
const CALLS: Record<string, string> = {
  // Codex 0.169's shell tool: exec_command { cmd }.
  'gpt-oss-test': `<|channel|>analysis<|message|>Run it.<|end|><|start|>assistant<|channel|>commentary to=functions.exec_command <|constrain|>json<|message|>${JSON.stringify({ cmd: COMMAND })}<|call|>`,
  // Claude Code's: Bash { command, description }.
  'devstral-test': `[TOOL_CALLS]Bash[ARGS]${JSON.stringify({ command: COMMAND, description: 'Multiply' })}`,
  // GLM-4.7's generation prompt opens the thought (Claude Code asks for adaptive thinking).
  'glm-test': `Run it.</think><tool_call>Bash<arg_key>command</arg_key><arg_value>${COMMAND}</arg_value><arg_key>description</arg_key><arg_value>Multiply</arg_value></tool_call>`,
};
const ANSWERS: Record<string, (result: string) => string> = {
  'gpt-oss-test': (result) => `<|channel|>analysis<|message|>It ran.<|end|><|start|>assistant<|channel|>final<|message|>${answer(result)}<|return|>`,
  'devstral-test': answer,
  'glm-test': (result) => `It ran.</think>${answer(result)}`,
};

/** Every request the script saw, by model: what each CLI sent back after the call. */
const seen: ChatRequest[] = [];
const lastUser = (request: ChatRequest) => [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
const script = (request: ChatRequest) => {
  seen.push(request);
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return ANSWERS[request.model]!(last.content);
  return lastUser(request).includes(PROMPT) ? CALLS[request.model] : undefined;
};
/** The requests of `model` that carried a tool result. */
const followUps = (model: string) => seen.filter((r) => r.model === model && r.messages.at(-1)?.role === 'tool');

/**
 * The suite on one engine: `gguf`, the models as GGUF files on llama.cpp; else ONNX. Codex runs
 * against gpt-oss; Claude Code against each of `claudeCode` (Devstral, GLM-4.7).
 */
export function agentCliFamilySuite(options: { gguf: boolean; claudeCode: readonly FamilySpec[] }): void {
  const engine = options.gguf ? 'llama.cpp' : 'ONNX';
  const specs = [FAMILY_SPECS.gptOss, ...options.claudeCode];
  let models: FamilyModels;
  let server: RealServer;
  beforeAll(async () => {
    models = makeFamilyModels(specs, { gguf: options.gguf });
    server = await startRealServer({ apiKeys: [KEY], modelsDir: models.modelsDir, only: specs.map((m) => m.id), script });
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.close();
    models?.close();
  });

  describe(`Codex CLI against a gpt-oss-templated model (harmony, ${engine})`, () => {
    let proxy: RecordingProxy;
    let dirs: CodexDirs;
    beforeAll(async () => {
      proxy = await recordingProxy(server.url);
      dirs = codexHome({ model: 'gpt-oss-test', baseURL: proxy.url, key: KEY });
    });
    afterAll(() => {
      proxy?.close();
      removeCodexHome(dirs);
    });

    it('codex exec: the harmony call runs as exec_command, its output goes back with the thought, and the final channel is the answer', async () => {
      const run = await runCodex(['exec', '--skip-git-repo-check', PROMPT], dirs, CLI_TIMEOUT_MS);
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(failedExchanges(proxy.exchanges)).toEqual([]);
      expect(run.stdout).toContain(EXPECTED);
      // No harmony marker reached Codex's output.
      for (const marker of ['<|channel|>', '<|message|>', '<|call|>', '<|return|>', 'to=functions']) expect(run.stdout + run.stderr).not.toContain(marker);
      // The second request: the call (with the analysis as its thought, fed back through Codex's
      // reasoning item) and the command's output as its result.
      const [followUp] = followUps('gpt-oss-test');
      expect(followUp).toBeDefined();
      const turn = followUp!.messages.at(-2) as Extract<ChatMessage, { role: 'assistant' }>;
      expect(turn.toolCalls?.map((c) => [c.name, c.input])).toEqual([['exec_command', { cmd: COMMAND }]]);
      expect(turn.reasoning).toBe('Run it.');
      expect(followUp!.messages.at(-1)!.content).toContain('42');
    }, CLI_TIMEOUT_MS + 10_000);
  });

  describe.each(options.claudeCode.map((m) => m.id))(`Claude Code CLI against %s (${engine})`, (model) => {
    it('claude -p --bare: the call runs as Bash, its output goes back as a tool_result, and the answer is the result', async () => {
      const cwd = fs.mkdtempSync(`${fs.realpathSync(process.env.TMPDIR ?? '/tmp')}/claude-cwd-`);
      try {
        const run = await runClaudeCode({ baseURL: server.url, apiKey: KEY, model }, {
          prompt: PROMPT, cwd, args: ['--bare', '--allowedTools', 'Bash'], maxOutputTokens: 256, timeoutMs: CLI_TIMEOUT_MS,
        });
        expect(run.timedOut).toBe(false);
        expect(run.json, run.stdout + run.stderr).toBeDefined();
        expect(run.json!.is_error, run.json!.result).toBe(false);
        expect(run.json!.num_turns).toBe(2);
        expect(run.json!.result).toBe(EXPECTED);
        const [followUp] = followUps(model);
        expect(followUp).toBeDefined();
        const turn = followUp!.messages.at(-2) as Extract<ChatMessage, { role: 'assistant' }>;
        expect(turn.toolCalls?.map((c) => [c.name, c.input])).toEqual([['Bash', { command: COMMAND, description: 'Multiply' }]]);
        expect(followUp!.messages.at(-1)).toMatchObject({ role: 'tool', name: 'Bash', content: '42' });
      } finally {
        fs.rmSync(cwd, { recursive: true, force: true });
      }
    }, CLI_TIMEOUT_MS + 10_000);
  });
}

/**
 * The client cases whose wire traffic test/fixtures/clients/*.json records: each runs one real client
 * (through test/helpers/clients.ts) against the capture server. scripts/capture/capture-clients.ts
 * writes the fixtures; test/clients/agents.test.ts checks the clients still send what they record.
 */
import { startCaptureServer, type CannedReply, type CapturedRequest } from './capture-server.js';
import {
  aiSdkGenerateText, aiSdkStreamText, langchainInvoke, langchainToolsInvoke, runClaudeCode,
  sdkAgentParams, sdkClient, WEATHER_TOOL, type Target,
} from './clients.js';

export const CAPTURE_MODEL = 'tiny-qwen3-random';

export interface ClientCase {
  client: string;
  name: string;
  packages: string[];
  description: string;
  /** A fresh reply function per run (it may keep state, e.g. call a tool once). */
  reply?: () => (body: Record<string, unknown>, request: CapturedRequest) => CannedReply | undefined;
  /** Capture-server routes to switch off (404), e.g. 'HEAD /'. */
  missing?: string[];
  run(t: Target): Promise<unknown>;
}

/** Answer the first request that declares tools with a get_weather call, everything else with text. */
export function toolOnce(): (body: Record<string, unknown>) => CannedReply | undefined {
  let done = false;
  return (body) => {
    if (done || !Array.isArray(body.tools) || body.tools.length === 0) return undefined;
    done = true;
    return { content: [{ type: 'tool_use', id: 'toolu_capture000001', name: WEATHER_TOOL.name, input: { city: 'Paris' } }], stop_reason: 'tool_use' };
  };
}

export const CLIENT_CASES: ClientCase[] = [
  {
    client: 'anthropic-sdk', name: 'agent-create', packages: ['@anthropic-ai/sdk'],
    description: 'messages.create with tools, tool_choice auto, a system-role message inside messages, top-level system, thinking enabled (budget 1024)',
    async run(t) {
      return sdkClient(t).messages.create(sdkAgentParams(t));
    },
  },
  {
    client: 'anthropic-sdk', name: 'agent-stream', packages: ['@anthropic-ai/sdk'],
    description: 'messages.stream with the same agent params (adaptive thinking instead of a budget)',
    async run(t) {
      return sdkClient(t).messages.stream({ ...sdkAgentParams(t), thinking: { type: 'adaptive' } }).finalMessage();
    },
  },
  {
    client: 'langchain', name: 'invoke', packages: ['@langchain/anthropic', '@langchain/core'],
    description: "ChatAnthropic({model}).invoke('Say hello.') with every default (no maxTokens)",
    async run(t) {
      return langchainInvoke(t);
    },
  },
  {
    client: 'langchain', name: 'bind-tools', packages: ['@langchain/anthropic', '@langchain/core'],
    description: 'ChatAnthropic.bindTools([get_weather as a LangChain tool with a zod schema]).invoke(...)',
    reply: toolOnce,
    async run(t) {
      return langchainToolsInvoke(t);
    },
  },
  {
    client: 'ai-sdk', name: 'generate-text-tool', packages: ['ai', '@ai-sdk/anthropic'],
    description: 'generateText with a get_weather tool (zod inputSchema, execute) and the default maxOutputTokens; stopWhen stepCountIs(2) so the tool result goes back',
    reply: toolOnce,
    async run(t) {
      return aiSdkGenerateText(t, { prompt: 'What is the weather in Paris?', withTool: true, maxSteps: 2 });
    },
  },
  {
    client: 'ai-sdk', name: 'stream-text', packages: ['ai', '@ai-sdk/anthropic'],
    description: 'streamText with a system prompt and every default',
    async run(t) {
      return aiSdkStreamText(t, { system: 'You are terse.', prompt: 'Say hello.' });
    },
  },
  {
    client: 'claude-code', name: 'print-json', packages: ['@anthropic-ai/claude-code'],
    description: 'claude -p "say hi" --output-format json, offline env (test/helpers/clients.ts claudeCodeEnv), temp HOME and cwd, stdin closed: the full first-turn request (every built-in tool)',
    async run(t) {
      return runClaudeCode(t, { prompt: 'say hi', timeoutMs: 60_000 });
    },
  },
  {
    client: 'claude-code', name: 'print-json-bare', packages: ['@anthropic-ai/claude-code'],
    description: 'the same with --bare (minimal mode: 3 tools, a one-line system prompt): the variant small enough for a 4096-token model',
    async run(t) {
      return runClaudeCode(t, { prompt: 'say hi', timeoutMs: 60_000, args: ['--bare'] });
    },
  },
  {
    client: 'claude-code', name: 'print-json-bare-tool-call', packages: ['@anthropic-ai/claude-code'],
    description: '--bare, and the first reply calls Bash `echo hi` (a read-only command: Claude Code runs it without asking, even in print mode): the second turn carries its output as a tool_result',
    reply: () => {
      let done = false;
      return (body: Record<string, unknown>): CannedReply | undefined => {
        const tools = Array.isArray(body.tools) ? (body.tools as Array<{ name: string }>) : [];
        if (done || !tools.some((tl) => tl.name === 'Bash')) return undefined;
        done = true;
        return {
          content: [
            { type: 'text', text: 'Running it.' },
            { type: 'tool_use', id: 'toolu_capture000002', name: 'Bash', input: { command: 'echo hi', description: 'Print hi' } },
          ],
          stop_reason: 'tool_use',
        };
      };
    },
    async run(t) {
      return runClaudeCode(t, { prompt: 'run echo hi', timeoutMs: 60_000, args: ['--bare'] });
    },
  },
  {
    client: 'claude-code', name: 'print-json-bare-errors', packages: ['@anthropic-ai/claude-code'],
    description: '--bare with HEAD / answered 404 and every /v1/messages answered 529 overloaded, CLAUDE_CODE_MAX_RETRIES=1: how it copes',
    missing: ['HEAD /'],
    reply: () => () => ({ content: [], stop_reason: 'end_turn', error: { status: 529, type: 'overloaded_error', message: 'Overloaded' } }),
    async run(t) {
      return runClaudeCode(t, { prompt: 'say hi', timeoutMs: 60_000, args: ['--bare'], env: { CLAUDE_CODE_MAX_RETRIES: '1' } });
    },
  },
];

export function summarize(result: unknown): unknown {
  if (result && typeof result === 'object' && 'stdout' in result) {
    const r = result as { exitCode: number | null; timedOut: boolean; durationMs: number; stdout: string; stderr: string; json?: unknown; env: unknown; args: string[] };
    return { exitCode: r.exitCode, timedOut: r.timedOut, durationMs: r.durationMs, args: r.args, env: r.env, json: r.json, stdout: r.json ? undefined : r.stdout.slice(0, 4000), stderr: r.stderr.slice(0, 4000) };
  }
  if (result && typeof result === 'object' && 'steps' in result) {
    const r = result as { text: string; finishReason: string; usage: unknown; steps: Array<{ finishReason: string; toolCalls: unknown[]; toolResults: unknown[] }> };
    return { text: r.text, finishReason: r.finishReason, usage: r.usage, steps: r.steps.map((s) => ({ finishReason: s.finishReason, toolCalls: s.toolCalls, toolResults: s.toolResults })) };
  }
  return JSON.parse(JSON.stringify(result)) as unknown;
}

/** The fields of Claude Code's first POST /v1/messages that matter to a server, at a glance. */
export function firstTurnSummary(requests: CapturedRequest[]) {
  const first = requests.find((r) => r.method === 'POST' && r.path === '/v1/messages');
  const body = first?.body as Record<string, unknown> | undefined;
  if (!first || !body) return undefined;
  const system = Array.isArray(body.system) ? (body.system as Array<{ text: string; cache_control?: unknown }>) : [];
  const tools = Array.isArray(body.tools) ? (body.tools as Array<{ name: string; cache_control?: unknown }>) : [];
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  return {
    otherRequests: requests.filter((r) => r !== first).map((r) => `${r.method} ${r.url}`),
    url: first.url,
    query: first.query,
    anthropicBeta: first.headers['anthropic-beta']?.split(','),
    anthropicVersion: first.headers['anthropic-version'],
    auth: first.headers['x-api-key'] ? 'x-api-key' : first.headers.authorization ? 'authorization' : 'none',
    bodyChars: first.bodyChars,
    fields: Object.keys(body),
    max_tokens: body.max_tokens,
    stream: body.stream,
    thinking: body.thinking,
    context_management: body.context_management,
    output_config: body.output_config,
    metadata: body.metadata,
    tools: { count: tools.length, names: tools.map((t) => t.name), chars: JSON.stringify(tools).length, withCacheControl: tools.filter((t) => t.cache_control).length },
    systemBlocks: system.map((b) => ({ chars: b.text.length, cache_control: b.cache_control ?? null, starts: b.text.slice(0, 80) })),
    messages: messages.map((m) => ({ role: m.role, chars: JSON.stringify(m.content).length })),
  };
}

export interface CaseCapture {
  requests: CapturedRequest[];
  outcome: { ok: boolean; result?: unknown; error?: string };
  /** Stable, machine-neutral JSON: the port, temp dirs and the caller's PATH replaced. */
  normalize(value: unknown): unknown;
}

/** Runs one case against a fresh capture server. */
export async function captureCase(c: ClientCase): Promise<CaseCapture> {
  const server = await startCaptureServer({ reply: c.reply?.(), models: [CAPTURE_MODEL], missing: c.missing });
  const target: Target = { baseURL: server.url, apiKey: 'test-key', model: CAPTURE_MODEL };
  let outcome: CaseCapture['outcome'];
  try {
    outcome = { ok: true, result: summarize(await c.run(target)) };
  } catch (error) {
    outcome = { ok: false, error: String((error as Error)?.stack ?? error) };
  }
  await server.close();
  const host = server.url.replace('http://', '');
  const normalize = (value: unknown) =>
    JSON.parse(
      JSON.stringify(value)
        .replaceAll(host, '127.0.0.1:PORT')
        .replace(/claude-(cwd|home)-[A-Za-z0-9]{6}/g, 'claude-$1-XXXXXX')
        .replace(/"PATH":"[^"]*"/g, '"PATH":"<caller PATH>"'),
    ) as unknown;
  return { requests: server.requests, outcome, normalize };
}

/**
 * Real clients against a listening Anthropic-dialect server: the official SDK, LangChain's
 * ChatAnthropic, the AI SDK's Anthropic provider, and the Claude Code CLI in print mode.
 *
 * Every function takes a Target (the server's root URL, no /v1; a key; a model id) and returns what
 * the client itself returned, so a test asserts on the client's view of the reply. The same
 * functions drive scripts/capture/capture-clients.ts, which records what they put on the wire into
 * test/fixtures/clients/*.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import Anthropic from '@anthropic-ai/sdk';
import { ChatAnthropic, type AnthropicInput } from '@langchain/anthropic';
import type { AIMessage, AIMessageChunk } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText, tool as aiTool, type ModelMessage } from 'ai';
import { z } from 'zod';

// The AI SDK warns on stdout for every call with a model id it does not know ("max output tokens have
// been limited to 4096"): the default is recorded in test/fixtures/clients; keep test output quiet.
(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

export interface Target {
  /** The server's root, e.g. http://127.0.0.1:PORT (no /v1, no trailing slash). */
  baseURL: string;
  /** Sent as x-api-key by every client here. */
  apiKey?: string;
  model: string;
}

export const TEST_API_KEY = 'test-key';
const keyOf = (t: Target) => t.apiKey ?? TEST_API_KEY;
const root = (t: Target) => t.baseURL.replace(/\/+$/, '');

/** The one tool every client case declares: same name, description and parameters everywhere. */
export const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Get the current weather for a city.',
  input_schema: {
    type: 'object' as const,
    properties: {
      city: { type: 'string', description: 'City name, e.g. Paris' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city'],
  },
};
const weatherZod = z.object({
  city: z.string().describe('City name, e.g. Paris'),
  unit: z.enum(['celsius', 'fahrenheit']).optional(),
});
/** What the tool "returns" whenever a client runs it. */
export const WEATHER_RESULT = 'Sunny, 21 degrees celsius.';

// ---------------------------------------------------------------------------------------------
// @anthropic-ai/sdk

export function sdkClient(t: Target): Anthropic {
  return new Anthropic({ baseURL: root(t), apiKey: keyOf(t), maxRetries: 0, timeout: 60_000 });
}

/** messages.create (non-streaming) with defaults a test can override field by field. */
export async function sdkCreate(t: Target, params: Partial<Anthropic.MessageCreateParamsNonStreaming> = {}): Promise<Anthropic.Message> {
  return sdkClient(t).messages.create({
    model: t.model,
    max_tokens: 16,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...params,
    stream: false,
  });
}

/** messages.stream: every raw event and the message the SDK assembled from them. */
export async function sdkStream(
  t: Target,
  params: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
): Promise<{ events: Anthropic.RawMessageStreamEvent[]; message: Anthropic.Message }> {
  const stream = sdkClient(t).messages.stream({
    model: t.model,
    max_tokens: 16,
    messages: [{ role: 'user', content: 'Say hello.' }],
    ...params,
  });
  const events: Anthropic.RawMessageStreamEvent[] = [];
  stream.on('streamEvent', (event) => events.push(event));
  const message = await stream.finalMessage();
  return { events, message };
}

/**
 * The agents case for the SDK: tools + a `system`-role message inside `messages` (SDK 1.x types it)
 * + extended thinking. Anthropic requires budget_tokens >= 1024 and < max_tokens.
 */
export function sdkAgentParams(t: Target): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model: t.model,
    max_tokens: 2048,
    system: 'You are a weather assistant.',
    thinking: { type: 'enabled', budget_tokens: 1024 },
    tools: [WEATHER_TOOL],
    tool_choice: { type: 'auto' },
    messages: [
      { role: 'system', content: 'Answer in one sentence.' },
      { role: 'user', content: 'What is the weather in Paris?' },
    ],
  };
}

/**
 * The SDK tool loop by hand: ask, run every tool_use the reply holds, send the tool_result back,
 * until the model stops asking (or `maxTurns`). Returns every reply in order.
 */
export async function sdkToolLoop(
  t: Target,
  params: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
  maxTurns = 3,
): Promise<Anthropic.Message[]> {
  const client = sdkClient(t);
  const messages: Anthropic.MessageParam[] = [...(params.messages ?? [{ role: 'user', content: 'What is the weather in Paris?' }])];
  const replies: Anthropic.Message[] = [];
  for (let turn = 0; turn < maxTurns; turn++) {
    const reply = await client.messages.create({ model: t.model, max_tokens: 64, tools: [WEATHER_TOOL], ...params, messages, stream: false });
    replies.push(reply);
    const calls = reply.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    if (reply.stop_reason !== 'tool_use' || calls.length === 0) break;
    messages.push({ role: 'assistant', content: reply.content as Anthropic.ContentBlockParam[] });
    messages.push({ role: 'user', content: calls.map((c) => ({ type: 'tool_result' as const, tool_use_id: c.id, content: WEATHER_RESULT })) });
  }
  return replies;
}

// ---------------------------------------------------------------------------------------------
// LangChain ChatAnthropic

export function langchainChat(t: Target, fields: Partial<AnthropicInput> = {}): ChatAnthropic {
  return new ChatAnthropic({ model: t.model, apiKey: keyOf(t), anthropicApiUrl: root(t), maxRetries: 0, ...fields });
}

/** ChatAnthropic.invoke. Without maxTokens LangChain sends its default (4096 for a model it does not know). */
export async function langchainInvoke(t: Target, input = 'Say hello.', fields: Partial<AnthropicInput> = {}): Promise<AIMessageChunk> {
  return langchainChat(t, fields).invoke(input);
}

/** `.bindTools([get_weather]).invoke(...)`: the tool as a LangChain tool with a zod schema. */
export async function langchainToolsInvoke(t: Target, input = 'What is the weather in Paris?', fields: Partial<AnthropicInput> = {}): Promise<AIMessage | AIMessageChunk> {
  const weather = langchainTool(async () => WEATHER_RESULT, { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, schema: weatherZod });
  return langchainChat(t, fields).bindTools([weather]).invoke(input);
}

/**
 * ChatAnthropic.stream: the first chunk, then the request is aborted. Shows a request was accepted
 * (a 200 that started streaming) without waiting for a long max_tokens to run out.
 */
export async function langchainStreamStart(t: Target, input = 'Say hello.', fields: Partial<AnthropicInput> = {}): Promise<AIMessageChunk | undefined> {
  const controller = new AbortController();
  const stream = await langchainChat(t, fields).stream(input, { signal: controller.signal });
  let first: AIMessageChunk | undefined;
  try {
    for await (const chunk of stream) {
      first = chunk;
      break;
    }
  } finally {
    controller.abort();
  }
  return first;
}

// ---------------------------------------------------------------------------------------------
// AI SDK (`ai` + `@ai-sdk/anthropic`)

export function aiSdkModel(t: Target) {
  return createAnthropic({ baseURL: `${root(t)}/v1`, apiKey: keyOf(t) })(t.model);
}

export interface AiSdkOptions {
  prompt?: string;
  system?: string;
  messages?: ModelMessage[];
  /** Omit to let the provider choose (4096 for a model id it does not know). */
  maxOutputTokens?: number;
  temperature?: number;
  /** Declare get_weather (with an execute that returns WEATHER_RESULT). */
  withTool?: boolean;
  /** How many model calls the SDK may chain (tool call -> tool result -> answer); default 1. */
  maxSteps?: number;
}

function aiSdkArgs(t: Target, o: AiSdkOptions) {
  const tools = o.withTool
    ? { [WEATHER_TOOL.name]: aiTool({ description: WEATHER_TOOL.description, inputSchema: weatherZod, execute: async () => WEATHER_RESULT }) }
    : undefined;
  const prompt = o.messages ? { messages: o.messages } : { prompt: o.prompt ?? 'Say hello.' };
  return {
    model: aiSdkModel(t),
    ...prompt,
    ...(o.system === undefined ? {} : { system: o.system }),
    ...(o.maxOutputTokens === undefined ? {} : { maxOutputTokens: o.maxOutputTokens }),
    ...(o.temperature === undefined ? {} : { temperature: o.temperature }),
    ...(tools ? { tools } : {}),
    maxRetries: 0,
  };
}

export async function aiSdkGenerateText(t: Target, o: AiSdkOptions = {}) {
  const { stepCountIs } = await import('ai');
  return generateText({ ...aiSdkArgs(t, o), stopWhen: stepCountIs(o.maxSteps ?? 1) });
}

/** streamText, drained: the text, finish reason, usage, and every stream part's type in order. */
export async function aiSdkStreamText(t: Target, o: AiSdkOptions = {}) {
  const { stepCountIs } = await import('ai');
  const errors: unknown[] = [];
  const result = streamText({ ...aiSdkArgs(t, o), stopWhen: stepCountIs(o.maxSteps ?? 1), onError: ({ error }) => void errors.push(error) });
  const partTypes: string[] = [];
  for await (const part of result.fullStream) partTypes.push(part.type);
  return {
    text: await result.text,
    finishReason: await result.finishReason,
    usage: await result.usage,
    toolCalls: await result.toolCalls,
    partTypes,
    errors,
  };
}

/**
 * streamText until the first text or reasoning delta (or the end), then abort: the part types seen and
 * any error parts. Shows a request was accepted without waiting for a long max_tokens to run out.
 */
export async function aiSdkStreamStart(t: Target, o: AiSdkOptions = {}) {
  const { stepCountIs } = await import('ai');
  const controller = new AbortController();
  const errors: unknown[] = [];
  const result = streamText({ ...aiSdkArgs(t, o), stopWhen: stepCountIs(1), abortSignal: controller.signal, onError: ({ error }) => void errors.push(error) });
  const partTypes: string[] = [];
  try {
    for await (const part of result.fullStream) {
      partTypes.push(part.type);
      if (part.type === 'text-delta' || part.type === 'reasoning-delta') break;
    }
  } finally {
    controller.abort();
  }
  return { partTypes, errors };
}

// ---------------------------------------------------------------------------------------------
// Raw replay of a captured request

export interface ReplayResult {
  status: number;
  /** The SSE events up to and including the one waited for (a 200), or none. */
  events: Array<{ event: string; data: Record<string, unknown> }>;
  /** The JSON error body of a non-200. */
  error?: { type: string; error: { type: string; message: string } };
}

/**
 * Sends a captured POST /v1/messages again, as the client sent it (same query string, anthropic-beta and
 * anthropic-version headers, same body but for `overrides`), streaming, and stops reading once `until`
 * arrives (default message_start): enough to see whether the server accepts it and what it counted.
 */
export async function replayMessages(
  t: Target,
  captured: { url: string; headers: Record<string, string>; body?: unknown },
  overrides: Record<string, unknown> = {},
  until = 'message_start',
): Promise<ReplayResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': keyOf(t) };
  for (const name of ['anthropic-version', 'anthropic-beta']) if (captured.headers[name]) headers[name] = captured.headers[name]!;
  headers['anthropic-version'] ??= '2023-06-01';
  const body = { ...(captured.body as Record<string, unknown>), model: t.model, ...overrides, stream: true };
  const controller = new AbortController();
  const response = await fetch(`${root(t)}${captured.url}`, { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
  if (response.status !== 200) return { status: response.status, events: [], error: (await response.json()) as ReplayResult['error'] };
  const events: ReplayResult['events'] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(frame)?.[1];
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (!event || data === undefined) continue;
        events.push({ event, data: JSON.parse(data) as Record<string, unknown> });
        if (event === until || event === 'error') return { status: 200, events };
      }
    }
  } finally {
    controller.abort();
  }
  return { status: 200, events };
}

// ---------------------------------------------------------------------------------------------
// Claude Code CLI (@anthropic-ai/claude-code), print mode

/**
 * The native Claude Code binary. The npm package's bin/claude.exe is a placeholder that its postinstall
 * replaces with the binary from the platform package (@anthropic-ai/claude-code-linux-x64, …): resolve
 * the platform package directly so a run does not depend on install scripts having run.
 */
export function claudeCodeBinary(): string {
  const require = createRequire(import.meta.url);
  const wrapperDir = path.dirname(require.resolve('@anthropic-ai/claude-code/package.json'));
  const wrapper = JSON.parse(fs.readFileSync(path.join(wrapperDir, 'package.json'), 'utf8')) as { version: string };
  const platform = process.platform === 'linux' && !(process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime
    ? `linux-${process.arch}-musl`
    : `${process.platform}-${process.arch}`;
  const pkg = `@anthropic-ai/claude-code-${platform}`;
  try {
    const fromWrapper = createRequire(path.join(wrapperDir, 'package.json'));
    const dir = path.dirname(fromWrapper.resolve(`${pkg}/package.json`));
    const binary = path.join(dir, process.platform === 'win32' ? 'claude.exe' : 'claude');
    if (fs.existsSync(binary)) return binary;
  } catch {
    // fall through to the wrapper's own bin
  }
  const placed = path.join(wrapperDir, 'bin', 'claude.exe');
  if (fs.statSync(placed).size > 1_000_000) return placed;
  throw new Error(`Claude Code ${wrapper.version}: no native binary for ${platform} (${pkg} not installed)`);
}

export function claudeCodeVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('@anthropic-ai/claude-code/package.json') as { version: string }).version;
}

/** The `--output-format json` result line of a print-mode run. */
export interface ClaudeCodeResult {
  type: 'result';
  subtype: string;
  is_error: boolean;
  result?: string;
  num_turns?: number;
  duration_ms?: number;
  duration_api_ms?: number;
  session_id?: string;
  total_cost_usd?: number;
  usage?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ClaudeCodeRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the JSON result, when it is one. */
  json?: ClaudeCodeResult;
  /** The environment the CLI ran with (API key redacted). */
  env: Record<string, string>;
  args: string[];
}

export interface ClaudeCodeOptions {
  prompt?: string;
  /** Hard limit; the process group is killed after it (default 60 s). */
  timeoutMs?: number;
  /** CLAUDE_CODE_MAX_OUTPUT_TOKENS (default 64). */
  maxOutputTokens?: number;
  /** Extra CLI arguments after the defaults. */
  args?: string[];
  /** Extra or overriding environment variables. */
  env?: Record<string, string>;
  /** Working directory (default: an empty temp dir, so no CLAUDE.md or git state reaches the prompt). */
  cwd?: string;
  /** The HOME to run in (kept; its path is in Claude Code's system prompt): a temp one otherwise. */
  home?: string;
  /** Keep the temp HOME/cwd for inspection instead of deleting them. */
  keepDirs?: boolean;
}

/**
 * The environment Claude Code needs to run non-interactively against a local server: nothing is
 * inherited from the caller's environment but PATH (so no real key, config dir or CLAUDECODE marker
 * of an enclosing session leaks in), HOME is a fresh temp dir.
 */
export function claudeCodeEnv(t: Target, home: string, o: Pick<ClaudeCodeOptions, 'maxOutputTokens' | 'env'> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    TMPDIR: os.tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    ANTHROPIC_BASE_URL: root(t),
    ANTHROPIC_API_KEY: keyOf(t),
    ANTHROPIC_MODEL: t.model,
    ANTHROPIC_SMALL_FAST_MODEL: t.model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: t.model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: t.model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: t.model,
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: String(o.maxOutputTokens ?? 64),
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    // Fail fast: by default it retries a 5xx/529 ten times with exponential backoff (minutes).
    CLAUDE_CODE_MAX_RETRIES: '0',
    ...o.env,
  };
}

/**
 * `claude -p PROMPT --output-format json` with the offline environment, a temp HOME and cwd, stdin
 * closed, no TTY and a hard timeout. Never throws for the CLI's own failures: read exitCode/stderr.
 */
export async function runClaudeCode(t: Target, o: ClaudeCodeOptions = {}): Promise<ClaudeCodeRun> {
  const home = o.home ?? fs.mkdtempSync(path.join(os.tmpdir(), 'claude-home-'));
  const cwd = o.cwd ?? fs.mkdtempSync(path.join(os.tmpdir(), 'claude-cwd-'));
  const env = claudeCodeEnv(t, home, o);
  const args = ['-p', o.prompt ?? 'say hi', '--output-format', 'json', ...(o.args ?? [])];
  const started = Date.now();
  const child = spawn(claudeCodeBinary(), args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }, o.timeoutMs ?? 60_000);
  const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    child.on('close', (code, sig) => resolve([code, sig]));
    child.on('error', (error) => {
      stderr += String(error);
      resolve([null, null]);
    });
  });
  clearTimeout(timer);
  if (!o.keepDirs) {
    if (!o.home) fs.rmSync(home, { recursive: true, force: true });
    if (!o.cwd) fs.rmSync(cwd, { recursive: true, force: true });
  }
  let json: ClaudeCodeResult | undefined;
  try {
    const parsed = JSON.parse(stdout.trim()) as unknown;
    if (parsed && typeof parsed === 'object' && (parsed as { type?: unknown }).type === 'result') json = parsed as ClaudeCodeResult;
  } catch {
    // not JSON: left to the caller (stdout/stderr say why)
  }
  return {
    exitCode, signal, timedOut, durationMs: Date.now() - started, stdout, stderr, json,
    env: { ...env, ANTHROPIC_API_KEY: '<redacted>' }, args,
  };
}

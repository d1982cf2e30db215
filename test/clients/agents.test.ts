/**
 * Agent clients against a listening server on the bundled chat model (tiny-qwen3-random, random
 * weights, a 32,768-token context): the official SDK, LangChain's ChatAnthropic, the AI SDK and the
 * Claude Code CLI in print mode, driven through test/helpers/clients.ts. Where a case needs the
 * model to write something in particular, a test hook or the grammar (forced tool calls) makes it so.
 *
 * What each client sends is recorded in test/fixtures/clients/*.json (scripts/capture/capture-clients.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import type Anthropic from '@anthropic-ai/sdk';
import type { CapturedRequest } from '../helpers/capture-server.js';
import { captureCase, CLIENT_CASES, firstTurnSummary } from '../helpers/client-cases.js';
import {
  aiSdkGenerateText, aiSdkStreamStart, aiSdkStreamText, langchainInvoke, langchainStreamStart, langchainToolsInvoke,
  replayMessages, runClaudeCode, sdkAgentParams, sdkClient, sdkCreate, sdkStream, WEATHER_TOOL, type Target,
} from '../helpers/clients.js';
import { CHAT_MODEL, ROOT } from '../helpers/paths.js';
import type { ChatRequest } from '../../src/core/types.js';
import { promptTokens, startRealServer, type RealServer } from '../helpers/real-server.js';
import { modelVariant } from '../helpers/model-variant.js';

const KEY = 'test-key';
/**
 * Claude Code's turns ("say hi") get a reply written for the test (test hooks: the sampler is made
 * to pick these tokens, then end of sequence), so the client sees a complete turn whatever the
 * random weights say: a short thought, then the answer.
 */
const CLAUDE_CODE_REPLY = '<think>\nA greeting.\n</think>\n\nHi from the local model.';
const claudeCodeScript = (request: ChatRequest) => (request.messages.at(-1)?.content.includes('say hi') ? CLAUDE_CODE_REPLY : undefined);

/** The bundled chat model's window. */
const CONTEXT = 32_768;
let server: RealServer;
let target: Target;
beforeAll(async () => {
  server = await startRealServer({ apiKeys: [KEY], only: [CHAT_MODEL], script: claudeCodeScript });
  target = { baseURL: server.url, apiKey: KEY, model: CHAT_MODEL };
});
afterAll(() => server?.close());

const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'clients');
function capturedMessages(name: string): CapturedRequest[] {
  const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8')) as { requests: CapturedRequest[] };
  return fixture.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
}
const validWeather = new Ajv({ strict: false }).compile(WEATHER_TOOL.input_schema);
/** SDK 1.x types omit temperature; the API (and this server) take it. */
const temperature0 = { temperature: 0 } as unknown as Partial<Anthropic.MessageCreateParamsNonStreaming>;

/** What a server sees of a request: method, URL, body and the headers that change its meaning. */
const wire = (r: CapturedRequest) => ({
  method: r.method, url: r.url, body: r.body,
  version: r.headers['anthropic-version'], beta: r.headers['anthropic-beta'],
  auth: r.headers['x-api-key'] ? 'x-api-key' : (r.headers.authorization ?? '').split(' ')[0],
});

describe('the clients still send what test/fixtures/clients records (capture server)', () => {
  const replayable = CLIENT_CASES.filter((c) => c.client !== 'claude-code');
  it.each(replayable.map((c) => [`${c.client}-${c.name}`, c] as const))('%s', async (id, c) => {
    const { requests, normalize } = await captureCase(c);
    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, `${id}.json`), 'utf8')) as { requests: CapturedRequest[] };
    expect((normalize(requests) as CapturedRequest[]).map(wire), 'rerun scripts/capture/capture-clients.ts if a client upgrade changed this').toEqual(fixture.requests.map(wire));
  });

  it('claude-code --bare: the same request shape (fields, tools, betas, thinking) as claude-code-print-json-bare', async () => {
    const c = CLIENT_CASES.find((x) => x.client === 'claude-code' && x.name === 'print-json-bare')!;
    const { requests, outcome } = await captureCase(c);
    expect(outcome.ok).toBe(true);
    const fixture = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'claude-code-print-json-bare.json'), 'utf8')) as { firstTurn: Record<string, unknown> };
    const shape = ({ url, anthropicBeta, fields, max_tokens, thinking, context_management, output_config, tools, otherRequests }: Record<string, unknown>) =>
      ({ url, anthropicBeta, fields, max_tokens, thinking, context_management, output_config, tools: (tools as { names: string[] }).names, otherRequests });
    expect(shape(firstTurnSummary(requests)!)).toEqual(shape(fixture.firstTurn));
  });
});

describe('plain requests (work today)', () => {
  it('@anthropic-ai/sdk messages.create (Bearer auth): a text reply cut at max_tokens, usage matching count_tokens', async () => {
    const message = await sdkCreate(target, { max_tokens: 8, system: 'You are terse.', ...temperature0 });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: CHAT_MODEL, stop_reason: 'max_tokens' });
    expect(message.content.map((b) => b.type)).toEqual(['text']);
    expect(message.usage.output_tokens).toBe(8);
    const count = await sdkClient(target).messages.countTokens({ model: CHAT_MODEL, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello.' }] });
    expect(promptTokens(message.usage)).toBe(count.input_tokens);
  });

  it('LangChain ChatAnthropic.invoke with maxTokens 8: an AIMessage with the text and usage', async () => {
    const reply = await langchainInvoke(target, 'Say hello.', { maxTokens: 8, temperature: 0 });
    expect(typeof reply.content).toBe('string');
    expect((reply.content as string).length).toBeGreaterThan(0);
    expect(reply.usage_metadata).toMatchObject({ output_tokens: 8 });
    expect(reply.usage_metadata!.input_tokens).toBeGreaterThan(0);
    expect(reply.response_metadata).toMatchObject({ model: CHAT_MODEL, stop_reason: 'max_tokens' });
  });

  it('AI SDK generateText with maxOutputTokens 8: text, finishReason length, usage', async () => {
    const result = await aiSdkGenerateText(target, { system: 'You are terse.', prompt: 'Say hello.', maxOutputTokens: 8, temperature: 0 });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe('length');
    expect(result.usage.outputTokens).toBe(8);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });

  it('AI SDK streamText with maxOutputTokens 8: the same text as generateText, streamed', async () => {
    const options = { system: 'You are terse.', prompt: 'Say hello.', maxOutputTokens: 8, temperature: 0 };
    const whole = await aiSdkGenerateText(target, options);
    const streamed = await aiSdkStreamText(target, options);
    expect(streamed.errors).toEqual([]);
    expect(streamed.text).toBe(whole.text);
    expect(streamed.finishReason).toBe('length');
    expect(streamed.partTypes[0]).toBe('start');
    expect(streamed.partTypes).toContain('text-delta');
    expect(streamed.partTypes.at(-1)).toBe('finish');
  });
});

describe('agents: system-role messages, tools, thinking, default max_tokens, Claude Code', () => {
  it('a system message inside messages (SDK 1.x, Claude Code 2.1) reaches the prompt and is counted', async () => {
    const base = { model: CHAT_MODEL, system: 'You are a weather assistant.' };
    const user: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };
    const without = await sdkClient(target).messages.countTokens({ ...base, messages: [user] });
    const leading = await sdkClient(target).messages.countTokens({ ...base, messages: [{ role: 'system', content: 'Answer in one sentence.' }, user] });
    // Claude Code puts its system message after the user turn.
    const trailing = await sdkClient(target).messages.countTokens({ ...base, messages: [user, { role: 'system', content: 'Answer in one sentence.' }] });
    expect(leading.input_tokens).toBeGreaterThan(without.input_tokens);
    expect(trailing.input_tokens).toBeGreaterThan(without.input_tokens);
    const message = await sdkCreate(target, { ...base, max_tokens: 4, messages: [user, { role: 'system', content: 'Answer in one sentence.' }] });
    expect(promptTokens(message.usage)).toBe(trailing.input_tokens);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('tool_choice {type:"tool"} on a strict tool gives a tool_use block whose input fits the schema (grammar-constrained: the random-weight model writes no valid call on its own)', async () => {
    const message = await sdkCreate(target, {
      max_tokens: 64,
      tools: [{ ...WEATHER_TOOL, strict: true }],
      tool_choice: { type: 'tool', name: WEATHER_TOOL.name },
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    });
    expect(message.stop_reason).toBe('tool_use');
    const call = message.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(call).toBeDefined();
    expect(call!.name).toBe(WEATHER_TOOL.name);
    expect(call!.id).toMatch(/^toolu_/);
    expect(validWeather(call!.input), JSON.stringify(validWeather.errors)).toBe(true);
  });

  it('the tool loop history (assistant tool_use, user tool_result) is accepted and counted', async () => {
    // The AI SDK's second request from the capture: prompt, tool_use, tool_result.
    const [, second] = capturedMessages('ai-sdk-generate-text-tool');
    const body = second!.body as { messages: Anthropic.MessageParam[] };
    const full = await replayMessages(target, second!, { max_tokens: 4 });
    const promptOnly = await replayMessages(target, second!, { max_tokens: 4, messages: body.messages.slice(0, 1) });
    expect(full.error).toBeUndefined();
    expect(promptOnly.error).toBeUndefined();
    const inputTokens = (r: typeof full) => promptTokens((r.events[0]!.data.message as { usage: { input_tokens: number } }).usage);
    expect(inputTokens(full)).toBeGreaterThan(inputTokens(promptOnly));
  });

  it('every captured client request is accepted as sent (max_tokens lowered)', async () => {
    const names = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.json') && f !== 'claude-code-print-json.json').map((f) => f.replace(/\.json$/, ''));
    for (const name of names) {
      for (const request of capturedMessages(name)) {
        const body = request.body as { thinking?: { type: string; budget_tokens?: number } };
        // Keep an enabled thinking budget below max_tokens, as Anthropic requires.
        const maxTokens = body.thinking?.type === 'enabled' ? body.thinking.budget_tokens! + 1 : 8;
        const result = await replayMessages(target, request, { max_tokens: maxTokens });
        expect(result.error, `${name}: ${JSON.stringify(result.error)}`).toBeUndefined();
        expect(result.events[0]?.event, name).toBe('message_start');
      }
    }
  });

  it("Claude Code's full first turn (24 tools, ~18.7k Qwen3 tokens) is served: it fits the bundled model's 32k window", async () => {
    const [first] = capturedMessages('claude-code-print-json');
    const result = await replayMessages(target, first!, { max_tokens: 1 });
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    const usage = (result.events[0]!.data.message as { usage: { input_tokens: number } }).usage;
    expect(usage.input_tokens).toBeGreaterThan(15_000);
    expect(usage.input_tokens).toBeLessThan(CONTEXT);
  });

  it('thinking {type:"enabled", budget_tokens:1024} gives a signed thinking block first, closed by the budget', async () => {
    const message = await sdkCreate(target, {
      max_tokens: 1040,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'What is 2 + 2?' }],
    });
    const [thinking, ...rest] = message.content;
    expect(thinking?.type).toBe('thinking');
    expect((thinking as Anthropic.ThinkingBlock).signature.length).toBeGreaterThan(0);
    expect(rest.every((b) => b.type === 'text' || b.type === 'tool_use')).toBe(true);
    expect(message.usage.output_tokens).toBeLessThanOrEqual(1040);
  });

  it('a stream with adaptive thinking sends thinking_delta, then signature_delta before the thinking block stops', async () => {
    const { events, message } = await sdkStream(target, { max_tokens: 24, thinking: { type: 'adaptive' } });
    const start = events.find((e): e is Anthropic.RawContentBlockStartEvent => e.type === 'content_block_start');
    expect(start?.content_block.type).toBe('thinking');
    const ofBlock = events.filter((e) => 'index' in e && e.index === start!.index);
    const deltas = ofBlock.filter((e): e is Anthropic.RawContentBlockDeltaEvent => e.type === 'content_block_delta').map((e) => e.delta.type);
    expect(deltas[0]).toBe('thinking_delta');
    expect(deltas.at(-1)).toBe('signature_delta');
    expect(ofBlock.at(-1)?.type).toBe('content_block_stop');
    expect(message.content[0]?.type).toBe('thinking');
  });

  it('the SDK agent request (tools, system message, adaptive thinking) is answered', async () => {
    const params: Anthropic.MessageCreateParamsNonStreaming = { ...sdkAgentParams(target), thinking: { type: 'adaptive' }, max_tokens: 32 };
    const message = await sdkClient(target).messages.create(params);
    expect(message.content[0]?.type).toBe('thinking');
    expect(['end_turn', 'max_tokens', 'tool_use']).toContain(message.stop_reason);
    const { max_tokens: _, ...countable } = params;
    const count = await sdkClient(target).messages.countTokens(countable);
    expect(promptTokens(message.usage)).toBe(count.input_tokens);
  });

  it('LangChain invoke with its default maxTokens is accepted (streams)', async () => {
    const first = await langchainStreamStart(target, 'Say hello.', { temperature: 0 });
    expect(first).toBeDefined();
  });

  it('AI SDK streamText with its default maxOutputTokens is accepted (streams)', async () => {
    const { partTypes, errors } = await aiSdkStreamStart(target, { prompt: 'Say hello.', temperature: 0 });
    expect(errors).toEqual([]);
    expect(partTypes).toContain('text-delta');
  });

  it('LangChain bindTools(...).invoke is answered', async () => {
    const free = await langchainToolsInvoke(target, 'What is the weather in Paris?', { maxTokens: 16 });
    expect(free.response_metadata).toMatchObject({ model: CHAT_MODEL });
  });

  it('LangChain bindTools with tool_choice "any" gives a call that fits the schema (grammar-constrained)', async () => {
    const { langchainChat } = await import('../helpers/clients.js');
    const { tool } = await import('@langchain/core/tools');
    const { z } = await import('zod');
    const weather = tool(async () => 'sunny', { name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, schema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']).optional() }) });
    const forced = await langchainChat(target, { maxTokens: 64 }).bindTools([weather], { tool_choice: 'any' }).invoke('What is the weather in Paris?');
    expect(forced.tool_calls?.[0]?.name).toBe(WEATHER_TOOL.name);
    expect(validWeather(forced.tool_calls![0]!.args), JSON.stringify(validWeather.errors)).toBe(true);
  });

  it('AI SDK generateText with a tool is answered', async () => {
    const result = await aiSdkGenerateText(target, { prompt: 'What is the weather in Paris?', withTool: true, maxOutputTokens: 16 });
    expect(['stop', 'length', 'tool-calls']).toContain(result.finishReason);
    expect(result.usage.inputTokens).toBeGreaterThan(100); // the tool definition is in the prompt
  });

  it('Claude Code --bare print mode (3 tools, ~1k tokens) completes a turn', async () => {
    const run = await runClaudeCode(target, { prompt: 'say hi', args: ['--bare'], timeoutMs: 30_000 });
    expect(run.timedOut).toBe(false);
    expect(run.json, run.stdout + run.stderr).toBeDefined();
    expect(run.json!.is_error, run.json!.result).toBe(false);
    expect(run.exitCode).toBe(0);
    expect(run.json!.num_turns).toBeGreaterThanOrEqual(1);
    expect(run.json!.result).toBe('Hi from the local model.');
  });

  it("Claude Code's default print mode (24 tools, ~18.7k tokens) completes a turn on the 32k window", async () => {
    const run = await runClaudeCode(target, { prompt: 'say hi', timeoutMs: 120_000 });
    expect(run.timedOut).toBe(false);
    expect(run.json, run.stdout + run.stderr).toBeDefined();
    expect(run.json!.is_error, run.json!.result).toBe(false);
    expect(run.exitCode).toBe(0);
    expect(run.json!.result).toBe('Hi from the local model.');
  });

  it("Claude Code's default print mode on a 4096-token model reports the server's 'prompt is too long' cleanly", async () => {
    const dir = modelVariant(CHAT_MODEL, 'small-window', { 'manifest.json': { contextLength: 4096 } });
    const small = await startRealServer({ apiKeys: [KEY], modelsDir: dir, script: claudeCodeScript });
    try {
      const run = await runClaudeCode({ ...target, baseURL: small.url, model: 'small-window' }, { prompt: 'say hi', timeoutMs: 60_000 });
      expect(run.timedOut).toBe(false);
      expect(run.exitCode).toBe(1);
      expect(run.json).toMatchObject({ is_error: true, api_error_status: 400 });
      expect(run.json!.result).toMatch(/prompt is too long/i);
    } finally {
      await small.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

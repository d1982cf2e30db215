/**
 * How many tokens a captured request's prompt is for a chat model: renders the first POST /v1/messages
 * body of a fixture (system blocks + system-role messages + tools + messages) through the model's own
 * chat template with `tools` (as vLLM and llama.cpp pass them: OpenAI function objects) and counts
 * the model tokenizer's tokens.
 *
 *   tsx scripts/capture/count-prompt-tokens.ts [FIXTURE.json ...] [--model tiny-qwen3-random] [--models-dir models]
 *
 * The x-anthropic-billing-header system block is left out (a per-request value that must not reach the
 * prompt); system-role messages are folded into the system prompt in order. The counts are with the
 * generation prompt appended, i.e. what prefill would process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { AutoTokenizer, env } from '@huggingface/transformers';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { model: { type: 'string', default: 'tiny-qwen3-random' }, 'models-dir': { type: 'string', default: path.join(ROOT, 'models') } },
});

type Block = { type: string; text?: string; content?: unknown; name?: string; input?: unknown; id?: string; tool_use_id?: string };
type Body = {
  system?: string | Block[];
  tools?: Array<{ name: string; description?: string; input_schema?: unknown }>;
  messages: Array<{ role: string; content: string | Block[] }>;
};

const textOf = (content: string | Block[]): string =>
  typeof content === 'string' ? content : content.map((b) => (b.type === 'text' ? b.text ?? '' : b.type === 'tool_result' ? textOf((b.content ?? '') as string | Block[]) : '')).join('');

/** Anthropic body -> chat-template conversation (text only; tool_use -> tool_calls, tool_result -> tool). */
export function toConversation(body: Body) {
  const systemBlocks = typeof body.system === 'string' ? [body.system] : (body.system ?? []).map((b) => b.text ?? '');
  const system = systemBlocks.filter((t) => !t.startsWith('x-anthropic-billing-header:'));
  const turns: Array<Record<string, unknown>> = [];
  for (const m of body.messages) {
    if (m.role === 'system') {
      system.push(textOf(m.content));
      continue;
    }
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const calls = blocks.filter((b) => b.type === 'tool_use');
    const results = blocks.filter((b) => b.type === 'tool_result');
    for (const r of results) turns.push({ role: 'tool', content: textOf((r.content ?? '') as string | Block[]) });
    const text = blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
    if (text || calls.length || !results.length) {
      turns.push({
        role: m.role, content: text,
        ...(calls.length ? { tool_calls: calls.map((c) => ({ type: 'function', function: { name: c.name, arguments: c.input } })) } : {}),
      });
    }
  }
  const tools = (body.tools ?? []).map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.input_schema ?? {} } }));
  return { messages: [...(system.length ? [{ role: 'system', content: system.join('\n\n') }] : []), ...turns], tools };
}

env.allowRemoteModels = false;
env.localModelPath = `${path.resolve(values['models-dir']!)}/`;
const tokenizer = await AutoTokenizer.from_pretrained(values.model!);
const count = (messages: Array<Record<string, unknown>>, tools?: unknown[]) => {
  const text = tokenizer.apply_chat_template(messages as never, { tokenize: false, add_generation_prompt: true, ...(tools?.length ? { tools: tools as never } : {}) }) as string;
  return { chars: text.length, tokens: tokenizer.encode(text, { add_special_tokens: false }).length };
};

const files = positionals.length ? positionals : [path.join(ROOT, 'test', 'fixtures', 'clients', 'claude-code-print-json.json')];
for (const file of files) {
  const fixture = JSON.parse(fs.readFileSync(file, 'utf8')) as { requests: Array<{ method: string; path: string; body?: Body }> };
  const request = fixture.requests.find((r) => r.method === 'POST' && r.path === '/v1/messages');
  if (!request?.body) throw new Error(`${file}: no POST /v1/messages`);
  const { messages, tools } = toConversation(request.body);
  const whole = count(messages, tools);
  const noTools = count(messages);
  const systemMessages = messages.filter((m) => m.role === 'system');
  const systemOnly = systemMessages.length ? count(systemMessages) : { tokens: 0 };
  console.log(JSON.stringify({
    fixture: path.relative(ROOT, path.resolve(file)), model: values.model, bodyChars: JSON.stringify(request.body).length, tools: tools.length,
    promptTokens: whole.tokens, promptChars: whole.chars, withoutTools: noTools.tokens, toolsAlone: whole.tokens - noTools.tokens, systemAlone: systemOnly.tokens,
  }));
}

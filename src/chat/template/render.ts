/**
 * Renders a conversation with the model's chat template through transformers.js, so that every
 * template llama.cpp ships (its models/templates/) renders a tool conversation:
 *
 * - the template's source is rewritten once for the Python Jinja it uses that transformers.js's lacks
 *   (./rewrite.ts);
 * - the context has what llama.cpp's always has: `bos_token` and `eos_token` (empty when the
 *   tokenizer has none: templates concatenate them), and `datetime` (Firefunction's);
 * - a conversation the template rejects is retried with the changes llama.cpp makes for such
 *   templates, fewest first, and the first that renders wins: a tool or parameter with no
 *   description gets an empty one (Hermes trims it, Command R appends it); no tools are an empty
 *   list (Command R loops over them); the tools are also a JSON text named `functions`
 *   (Firefunction); call ids become nine letters and digits (Mistral); a template that refuses
 *   the system role (Gemma 2) gets the system text at the head of the first user turn, as llama.cpp
 *   folds it; a user turn right after tool results (templates that insist on user/assistant
 *   alternation once tool turns are skipped: Mistral Nemo, Small 3.2, Ministral) is appended to the
 *   last result, and consecutive user turns are joined (Gemma 2, whose tool results come as user
 *   text in the generic format). A conversation no change saves raises the template's own error.
 *
 * A conversation the template accepts is rendered unchanged: the changes apply only after a refusal.
 */
import type { TextTokenizer } from '../../tokenize/text-tokenizer.js';
import { rewriteTemplate } from './rewrite.js';

/** A part of a message's content, as vision-language templates take it (an image stands for itself). */
export type TemplatePart = { type: 'text'; text: string } | { type: 'image' };

/** A message as chat templates take it (the Hugging Face convention). */
export interface TemplateMessage {
  role: string;
  /** Parts only for a vision-language model's message with images (../prompt.ts). */
  content: string | TemplatePart[];
  tool_calls?: Array<{ type: 'function'; id: string; function: { name: string; arguments: Record<string, unknown> } }>;
  reasoning_content?: string;
  /** gpt-oss's and LFM2's templates read the thought from `thinking`. */
  thinking?: string;
  tool_call_id?: string;
  name?: string;
}

/** A tool as templates take it (OpenAI's shape). */
interface TemplateTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown };
}

const rewritten = new Map<string, string>();
/** Rewritten sources by original (a server holds a few templates; the map is bounded anyway). */
function compatible(template: string): string {
  let found = rewritten.get(template);
  if (found === undefined) {
    found = rewriteTemplate(template);
    if (rewritten.size >= 32) rewritten.delete(rewritten.keys().next().value!);
    rewritten.set(template, found);
  }
  return found;
}

/**
 * The rendered text. `options` as apply_chat_template takes them (tools, add_generation_prompt,
 * enable_thinking...); `tokenize` is always false. Throws the template's error when no retry renders.
 */
export function renderChatTemplate(tokenizer: TextTokenizer, conversation: TemplateMessage[], options: Record<string, unknown>): string {
  const own = (tokenizer as unknown as { chat_template?: unknown }).chat_template;
  const source = typeof options.chat_template === 'string' ? options.chat_template : typeof own === 'string' ? own : undefined;
  const named = tokenizer as unknown as { bos_token?: string | null; eos_token?: string | null };
  const context: Record<string, unknown> = {
    bos_token: named.bos_token ?? '',
    eos_token: named.eos_token ?? '',
    datetime: today(),
    ...options,
    tokenize: false,
    ...(source !== undefined ? { chat_template: compatible(source) } : {}),
  };
  const render = ([messages, tools, extra]: Attempt) => tokenizer.apply_chat_template(messages as never, { ...context, ...extra, ...(tools !== undefined ? { tools } : {}) } as never) as unknown as string;
  const original: Attempt = [conversation, options.tools, {}];
  let first: unknown;
  try {
    return withCallsShown(render, original, source ?? '');
  } catch (error) {
    first = error;
  }
  // Every combination of the changes that alter this conversation, fewest first (at most 63 renders,
  // only for a conversation the template refused).
  const applicable = CHANGES.filter((change) => change(original, source ?? '') !== null);
  const combinations = Array.from({ length: 2 ** applicable.length - 1 }, (_, i) => applicable.filter((_, bit) => ((i + 1) >> bit) & 1)).sort((a, b) => a.length - b.length);
  for (const changes of combinations) {
    try {
      return render(changes.reduce((attempt, change) => change(attempt, source ?? '') ?? attempt, original));
    } catch {
      // The next combination.
    }
  }
  throw first;
}

/** Messages, tools and extra context for one render. */
type Attempt = [TemplateMessage[], unknown, Record<string, unknown>];

/** Per template source, the form of earlier calls that shows them (an index into CALL_FORMS; -1: as given). */
const callForm = new Map<string, number>();

/**
 * Templates differ on an assistant turn with calls: Qwen3's needs its content a string where there
 * is no text, DeepSeek R1's writes the calls only when the content is None (null) and silently drops
 * them otherwise, and concatenates the arguments as a JSON text (llama.cpp's templates' capabilities:
 * requires_non_null_content, object or string arguments).
 */
const CALL_FORMS: Array<(m: TemplateMessage) => TemplateMessage> = [
  (m) => (m.content === '' ? { ...m, content: null as unknown as string } : m),
  (m) => ({ ...m, ...(m.content === '' ? { content: null as unknown as string } : {}), tool_calls: m.tool_calls!.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.stringify(c.function.arguments) as unknown as Record<string, unknown> } })) }),
];

/**
 * The render of `attempt`, its earlier calls shown. Where a conversation's calls do not show as
 * given (their argument values are not in the text), each other form is tried once, and the one the
 * template shows them in is kept for its later conversations.
 */
function withCallsShown(render: (attempt: Attempt) => string, attempt: Attempt, source: string): string {
  const [messages, tools, extra] = attempt;
  const inForm = (form: number): Attempt => (form < 0 ? attempt : [messages.map((m) => (m.tool_calls?.length ? CALL_FORMS[form]!(m) : m)), tools, extra]);
  const known = callForm.get(source);
  if (!messages.some((m) => m.tool_calls?.length)) return render(attempt);
  if (known !== undefined) return render(inForm(known));
  const text = render(attempt);
  let chosen = -1;
  let shown = text;
  if (!callsShown(text, messages)) {
    for (let form = 0; form < CALL_FORMS.length && chosen < 0; form++) {
      try {
        const other = render(inForm(form));
        if (callsShown(other, messages)) [chosen, shown] = [form, other];
      } catch {
        // The next form.
      }
    }
  }
  if (callForm.size >= 32) callForm.delete(callForm.keys().next().value!);
  callForm.set(source, chosen);
  return shown;
}

/** Every call's argument values (its name where it has none) are in the rendered text. */
function callsShown(text: string, messages: TemplateMessage[]): boolean {
  return messages.every((m) =>
    (m.tool_calls ?? []).every((call) => {
      const values = Object.values(call.function.arguments).filter((v): v is string => typeof v === 'string' && v !== '');
      return values.length > 0 ? values.every((v) => text.includes(v)) : text.includes(call.function.name);
    }),
  );
}

/** llama.cpp's `datetime` (common_chat_extra_context: "%b %d %Y", UTC here). */
function today(): string {
  const [, day, month, year] = new Date().toUTCString().split(' ');
  return `${month} ${day} ${year}`;
}

/** A change to the attempt for the template `source`, or null where it changes nothing. */
type Change = (attempt: Attempt, source: string) => Attempt | null;

const CHANGES: Change[] = [
  // Every tool and parameter described ('' where the client gave no description).
  ([messages, tools, extra]) => {
    if (!Array.isArray(tools)) return null;
    const described = (tools as TemplateTool[]).map((tool) => {
      const parameters = tool.function.parameters as { properties?: Record<string, Record<string, unknown>> } | undefined;
      const properties = parameters?.properties && Object.fromEntries(Object.entries(parameters.properties).map(([name, schema]) => [name, { description: '', ...schema }]));
      return { ...tool, function: { description: '', ...tool.function, ...(properties ? { parameters: { ...parameters, properties } } : {}) } };
    });
    return JSON.stringify(described) === JSON.stringify(tools) ? null : [messages, described, extra];
  },
  // No tools as an empty list (Command R loops over them unguarded, where the tools went into the generic prompt).
  ([messages, tools, extra]) => (tools === undefined || tools === null ? [messages, [], extra] : null),
  // Firefunction v2 reads the tools as a JSON text named `functions`.
  ([messages, tools, extra], source) => (/\bfunctions\b/.test(source) ? [messages, tools, { ...extra, functions: JSON.stringify(Array.isArray(tools) ? tools.map((t: TemplateTool) => t.function) : [], null, 2) }] : null),
  // Call ids as nine letters and digits (Mistral's templates refuse others), the same for a call and its result.
  ([messages, tools, extra]) => {
    if (!messages.some((m) => m.tool_calls?.length || m.tool_call_id !== undefined)) return null;
    return [messages.map((m) => ({
      ...m,
      ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ ...c, id: nineAlphanumerics(c.id) })) } : {}),
      ...(m.tool_call_id !== undefined ? { tool_call_id: nineAlphanumerics(m.tool_call_id) } : {}),
    })), tools, extra];
  },
  // The system message folded into the first user turn.
  ([messages, tools, extra]) => {
    const system = messages.findIndex((m) => m.role === 'system');
    if (system < 0) return null;
    const rest = messages.filter((_, i) => i !== system);
    const user = rest.findIndex((m) => m.role === 'user');
    const text = messages[system]!.content;
    if (user < 0) return [[{ role: 'user', content: text }, ...rest], tools, extra];
    return [rest.map((m, i) => (i === user ? { ...m, content: `${text}\n\n${m.content}` } : m)), tools, extra];
  },
  // A user turn that follows tool results appended to the last of them; consecutive user turns (tool
  // results written as user text, for a template without tools) joined into one.
  ([messages, tools, extra]) => {
    const merged: TemplateMessage[] = [];
    for (const message of messages) {
      const previous = merged.at(-1);
      if (message.role === 'user' && (previous?.role === 'tool' || previous?.role === 'user')) merged[merged.length - 1] = { ...previous, content: `${previous.content}\n\n${message.content}` };
      else merged.push(message);
    }
    return merged.length === messages.length ? null : [merged, tools, extra];
  },
];

/** A deterministic nine-character [a-zA-Z0-9] id for any id (FNV-1a, base 36). */
function nineAlphanumerics(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(id)) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return hash.toString(36).padStart(9, '0').slice(-9);
}

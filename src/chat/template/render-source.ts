/**
 * A chat template rendered on its own, without a model's tokenizer: the template analysis
 * (./analyze.ts) renders probe conversations with the same rewrites and retries as a prompt
 * (./render.ts), from the template's source alone, so that a family's format is read the same
 * wherever it is needed: in a worker (the chat turn), in the parse entry point
 * (src/chat/parse-output.ts), and in the main thread for the models list (src/inference). The engine
 * is @huggingface/jinja itself, the library transformers.js bundles a copy of (0.5.10 there, 0.5.11
 * here; the rewrites are for gaps both share): importing it costs ~40 ms, where importing
 * transformers.js in the main thread would cost ~1.7 s and its native runtime. `bos_token` and
 * `eos_token` are empty: a probe's markers never depend on them.
 */
import { Template } from '@huggingface/jinja';
import type { TextTokenizer } from '../../tokenize/text-tokenizer.js';
import { renderChatTemplate, type TemplateMessage } from './render.js';

/** Compiled templates by (rewritten) source: the analysis renders each a dozen times. */
const compiled = new Map<string, Template>();

function templateOf(source: string): Template {
  let found = compiled.get(source);
  if (found === undefined) {
    found = new Template(source);
    if (compiled.size >= 16) compiled.delete(compiled.keys().next().value!);
    compiled.set(source, found);
  }
  return found;
}

/** The rendered text, or undefined where the template refuses the conversation. */
export function renderSource(source: string, conversation: TemplateMessage[], options: Record<string, unknown>): string | undefined {
  // What renderChatTemplate uses of a tokenizer: its template, its two tokens, apply_chat_template
  // (rendering only, as transformers.js does it: the options are the template's context).
  const alone = {
    chat_template: source,
    bos_token: '',
    eos_token: '',
    apply_chat_template: (messages: unknown, { chat_template, tokenize: _tokenize, ...context }: Record<string, unknown>) =>
      templateOf(chat_template as string).render({ messages, add_generation_prompt: false, tools: null, documents: null, ...context }),
  } as unknown as TextTokenizer;
  try {
    return renderChatTemplate(alone, conversation, { ...options, chat_template: source });
  } catch {
    return undefined;
  }
}

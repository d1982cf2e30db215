/**
 * A chat template rendered on its own, without a model's tokenizer: the template analysis
 * (./analyze.ts) renders probe conversations through the same engine, rewrites and retries as a
 * prompt (./render.ts), from the template's source alone, so that a family's format can be read
 * where no tokenizer is loaded (the parse entry point, src/chat/parse-output.ts) and is the same
 * where one is. `bos_token` and `eos_token` are empty: a probe's markers never depend on them.
 */
import { PreTrainedTokenizer } from '@huggingface/transformers';
import { renderChatTemplate, type TemplateMessage } from './render.js';

/** The rendered text, or undefined where the template refuses the conversation. */
export function renderSource(source: string, conversation: TemplateMessage[], options: Record<string, unknown>): string | undefined {
  // apply_chat_template reads only these fields of its tokenizer when it does not tokenize.
  const alone = Object.assign(Object.create(PreTrainedTokenizer.prototype) as PreTrainedTokenizer, { chat_template: source, config: {}, _compiled_template_cache: new Map(), bos_token: '', eos_token: '' });
  try {
    return renderChatTemplate(alone, conversation, { ...options, chat_template: source });
  } catch {
    return undefined;
  }
}

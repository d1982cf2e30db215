/**
 * Renders a chat prompt through the model's own chat template and tokenizer, so token counts are the
 * tokens the model really sees. Runs in a worker thread.
 */
import { CoreError } from '../core/errors.js';
import type { ChatPrompt } from '../core/types.js';
import type { LoadedTokenizer } from './load.js';

export interface RenderedPrompt {
  text: string;
  ids: number[];
}

export function renderPrompt(loaded: LoadedTokenizer, prompt: ChatPrompt): RenderedPrompt {
  const conversation: { role: string; content: string }[] = [];
  if (prompt.system !== undefined && prompt.system !== '') conversation.push({ role: 'system', content: prompt.system });
  const last = prompt.messages.at(-1);
  // A final assistant message is a prefill: the reply continues it, so it is appended after the
  // generation prompt rather than rendered as a finished turn.
  const prefill = last?.role === 'assistant' ? last.content : '';
  const turns = prefill ? prompt.messages.slice(0, -1) : prompt.messages;
  conversation.push(...turns);
  let text: string;
  try {
    text = loaded.tokenizer.apply_chat_template(conversation, { tokenize: false, add_generation_prompt: true }) as string;
  } catch (error) {
    // Templates raise for conversations they do not accept (e.g. roles that do not alternate).
    const reason = (error as Error).message;
    throw new CoreError('template_rejected', `The model's chat template rejected the conversation: ${reason}`, { reason });
  }
  text += prefill;
  const ids = loaded.tokenizer.encode(text, { add_special_tokens: false });
  return { text, ids };
}

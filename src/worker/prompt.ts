/**
 * Renders a chat prompt through the model's own chat template and tokenizer, so token counts are the
 * tokens the model really sees. Message text is tokenized as text: special tokens come only from the
 * template (see tokenize/prompt-encoder.ts). Runs in a worker thread.
 */
import { CoreError } from '../core/errors.js';
import type { ChatPrompt } from '../core/types.js';
import type { LoadedTokenizer } from './load.js';
import { PromptEncoder, type Literals } from './tokenize/prompt-encoder.js';

export interface RenderedPrompt {
  text: string;
  ids: number[];
}

/**
 * The prompt's text and token ids. Throws prompt_too_long when the prompt leaves no room for a
 * single output token in the model's context; tokenization stops as soon as that is certain, so this
 * takes bounded time whatever the prompt's length and content.
 */
export function renderPrompt(loaded: LoadedTokenizer, prompt: ChatPrompt): RenderedPrompt {
  const encoder = PromptEncoder.for(loaded.tokenizer);
  const conversation: { role: string; content: string }[] = [];
  if (prompt.system !== undefined && prompt.system !== '') conversation.push({ role: 'system', content: prompt.system });
  const last = prompt.messages.at(-1);
  // A final assistant message is a prefill: the reply continues it, so it is appended after the
  // generation prompt rather than rendered as a finished turn.
  let prefill = last?.role === 'assistant' ? last.content : '';
  const turns = prefill ? prompt.messages.slice(0, -1) : prompt.messages;
  conversation.push(...turns.map((m) => ({ ...m })));
  // The common case, no special-token text in any message, renders and encodes the text as it is.
  const literals = hideSpecialTokens([...conversation.map((m) => m.content), prefill], encoder.specialTokens);
  if (literals) {
    const hide = literals.hide;
    for (const message of conversation) message.content = hide(message.content);
    prefill = hide(prefill);
  }
  let text: string;
  try {
    text = loaded.tokenizer.apply_chat_template(conversation, { tokenize: false, add_generation_prompt: true }) as string;
  } catch (error) {
    // Templates raise for conversations they do not accept (e.g. roles that do not alternate).
    const reason = (error as Error).message;
    throw new CoreError('template_rejected', `The model's chat template rejected the conversation: ${reason}`, { reason });
  }
  text += prefill;
  const context = loaded.info.contextLength;
  // At most context - 1 prompt tokens: one position must be left for output.
  const encoded = encoder.encode(text, { literals: literals?.placeholders, budget: context - 1 });
  if ('tooLong' in encoded) {
    const { tokens, exact } = encoded.tooLong;
    throw new CoreError('prompt_too_long', `The prompt is ${exact ? '' : 'at least '}${tokens} tokens; the context window of ${context} leaves no room for output.`, {
      limit: context,
      promptTokens: tokens,
      ...(exact ? {} : { promptTokensAtLeast: true }),
    });
  }
  return { text: literals ? literals.show(text) : text, ids: encoded.ids };
}

interface HiddenSpecials {
  placeholders: Literals;
  /** Replaces each special-token string by its placeholder. */
  hide(text: string): string;
  /** Puts the special-token strings back. */
  show(text: string): string;
}

/**
 * Placeholders for the special-token strings the texts contain, or null when they contain none:
 * one private-use code point each (templates do not alter them: not whitespace, no case), chosen
 * among those no text uses, so that a placeholder always means the special-token text.
 */
function hideSpecialTokens(texts: string[], specialTokens: readonly string[]): HiddenSpecials | null {
  const found = specialTokens.filter((token) => texts.some((text) => text.includes(token)));
  if (found.length === 0) return null;
  const placeholders = new Map<string, string>();
  const byToken = new Map<string, string>();
  let codePoint = 0xf0000; // Supplementary Private Use Area-A
  for (const token of found) {
    while (texts.some((text) => text.includes(String.fromCodePoint(codePoint)))) codePoint++;
    const placeholder = String.fromCodePoint(codePoint++);
    placeholders.set(placeholder, token);
    byToken.set(token, placeholder);
  }
  // Longest first: at one position the longest special token wins, as in the tokenizer's own splitter.
  const pattern = new RegExp([...found].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
  const back = new RegExp([...placeholders.keys()].join('|'), 'gu');
  return {
    placeholders,
    hide: (text) => text.replace(pattern, (token) => byToken.get(token)!),
    show: (text) => text.replace(back, (placeholder) => placeholders.get(placeholder)!),
  };
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

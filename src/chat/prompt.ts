/**
 * Renders a chat prompt through the model's own chat template and tokenizer, so token counts are the
 * tokens the model really sees. Message text is tokenized as text: special tokens come only from the
 * template (see tokenize/prompt-encoder.ts). Runs in a worker thread.
 */
import { CoreError, imageUnreadable } from '../core/errors.js';
import type { ChatImage, ChatMessage, ChatPrompt } from '../core/types.js';
import { imageGrid, ImageShapeError, type VisionSpec } from '../models/vision.js';
import { TEMPLATE_CONTEXT } from '../models/template-context.js';
import { thoughtTags, type TemplateFeatures, type ToolFormat } from '../models/template-features.js';
import { familyFeatures } from './template/family-features.js';
import type { ChatTokenizer } from './model.js';
import { genericToolCallText, genericToolPrompt, genericToolResultText, nativeToolPrompt } from './tools/generic.js';
import { PromptEncoder, type Literals } from '../tokenize/prompt-encoder.js';
import { renderChatTemplate, type TemplateMessage, type TemplatePart } from './template/render.js';
import type { SequenceImage } from '../engines/sequence.js';

export interface RenderedPrompt {
  text: string;
  /** The prompt's tokens, each image's placeholder widened to the image's tokens. */
  ids: number[];
  /** A vision-language model's prompt: its images, in order, and the tokens each fills in `ids`. */
  images?: SequenceImage[];
  /** The prompt ends inside a thought: the template's generation prompt opened it (`…<think>\n`). */
  opensThought: boolean;
}

/**
 * The prompt's text and token ids. Throws prompt_too_long when the prompt leaves no room for a
 * single output token in the model's context; tokenization stops as soon as that is certain, so this
 * takes bounded time whatever the prompt's length and content.
 */
export function renderPrompt(loaded: ChatTokenizer, prompt: ChatPrompt): RenderedPrompt {
  const encoder = PromptEncoder.for(loaded.tokenizer);
  const features = featuresOf(loaded);
  const tools = prompt.tools && prompt.tools.length > 0 && prompt.toolChoice?.mode !== 'none' ? prompt.tools : undefined;
  const generic = tools !== undefined && features.toolFormat === 'generic';
  // A template that writes calls in its family's form but never describes tools (DeepSeek R1 and
  // V3.1): the server describes them, with that form as the example, and the template renders the
  // history's calls itself.
  const described = tools !== undefined && !generic && !features.nativeTools;
  const conversation: TemplateMessage[] = [];
  const toolPrompt = generic ? genericToolPrompt(tools) : described ? nativeToolPrompt(tools, features.toolFormat) : '';
  const system = [prompt.system ?? '', toolPrompt].filter((part) => part !== '').join('\n\n');
  if (system !== '') conversation.push({ role: 'system', content: system });
  const last = prompt.messages.at(-1);
  // A final assistant message is a prefill: the reply continues it, so it is appended after the
  // generation prompt rather than rendered as a finished turn.
  let prefill = last?.role === 'assistant' && !last.toolCalls?.length ? last.content : '';
  const turns = prefill ? prompt.messages.slice(0, -1) : prompt.messages;
  const vision = loaded.info.vision;
  const images: ChatImage[] = [];
  conversation.push(...turns.map((m) => withImages(templateMessage(m, generic, features.toolFormat), m, vision, images)));
  // The common case, no special-token text in any message, renders and encodes the text as it is.
  const literals = hideSpecialTokens([...conversation.flatMap((m) => textsOf(m.content)), prefill], encoder.specialTokens);
  if (literals) {
    const hide = literals.hide;
    for (const message of conversation) message.content = typeof message.content === 'string' ? hide(message.content) : message.content.map((p) => (p.type === 'text' ? { ...p, text: hide(p.text) } : p));
    prefill = hide(prefill);
  }
  const grids = vision ? images.map((image, i) => gridOf(loaded, vision, image, i)) : [];
  // Each image's one placeholder becomes its tokens: the extra ones count against the context too.
  const extra = grids.reduce((sum, g) => sum + g.tokens - 1, 0);
  const options: Record<string, unknown> = { tokenize: false, add_generation_prompt: true };
  if (tools && !generic && !described) options.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.inputSchema } }));
  // The template's own thinking switch (Qwen3): off unless the request turned thinking on.
  if (features.thinkingSwitch) options[TEMPLATE_CONTEXT.thinking] = prompt.thinking?.enabled ?? false;
  // A level, where the template takes one (gpt-oss: low / medium / high; its default is medium).
  // Harmony cannot turn its analysis off: thinking off asks for the least.
  if (features.effortLevels) {
    const level = prompt.thinking?.level ?? (prompt.thinking?.enabled === false ? 'low' : undefined);
    if (level) options[TEMPLATE_CONTEXT.effort] = level;
  }
  let text: string;
  try {
    text = renderChatTemplate(loaded.tokenizer, conversation, options);
  } catch (error) {
    // Templates raise for conversations they do not accept (e.g. roles that do not alternate).
    const reason = (error as Error).message;
    throw new CoreError('template_rejected', `The model's chat template rejected the conversation: ${reason}`, { reason });
  }
  // Gemma 3's template renders an image as its boi token alone; its processor (Gemma3Processor) puts
  // the image's whole sequence there before tokenizing: blank lines, boi, the soft tokens, eoi. Here
  // with one soft token, which widenImages makes the image's tokens. Message text cannot hold a boi
  // token here: special-token text is hidden above.
  if (vision?.family === 'gemma3') text = text.replaceAll(vision.boiToken, vision.imageSequence);
  text += prefill;
  const context = loaded.info.contextLength;
  // At most context - 1 prompt tokens: one position must be left for output.
  const encoded = encoder.encode(text, { literals: literals?.placeholders, budget: context - 1 - extra });
  if ('tooLong' in encoded) {
    const { exact } = encoded.tooLong;
    const tokens = encoded.tooLong.tokens + extra;
    throw new CoreError('prompt_too_long', `The prompt is ${exact ? '' : 'at least '}${tokens} tokens; the context window of ${context} leaves no room for output.`, {
      limit: context,
      promptTokens: tokens,
      ...(exact ? {} : { promptTokensAtLeast: true }),
    });
  }
  const shown = literals ? literals.show(text) : text;
  const tags = thoughtTags(features);
  const widened = vision && images.length > 0 ? widenImages(encoded.ids, vision, images, grids) : { ids: encoded.ids };
  return { text: shown, ...widened, opensThought: tags !== undefined && opensThought(shown, tags.open, tags.close) };
}

/** The texts of a template message's content. */
const textsOf = (content: TemplateMessage['content']): string[] => (typeof content === 'string' ? [content] : content.flatMap((p) => (p.type === 'text' ? [p.text] : [])));

/**
 * A vision-language model's message with images: its content as the parts the model's template
 * takes (text and `{ type: 'image' }`, each image at its offset in the text), its images added to
 * `images` in the order the template renders them. Any other message is returned as it is. The text
 * a template message carries may have gained a head (a failed tool result's `Error: `), which shifts
 * the images' offsets by as much; one whose text is wrapped otherwise (the generic tool format's
 * result) gets its images after the text.
 */
function withImages(message: TemplateMessage, source: ChatMessage, vision: VisionSpec | undefined, images: ChatImage[]): TemplateMessage {
  if (!vision || source.role === 'assistant' || !source.images?.length || typeof message.content !== 'string') return message;
  const text = message.content;
  const head = text.endsWith(source.content) ? text.length - source.content.length : -1;
  const placed = [...source.images].map((image, i) => ({ image, i, at: head >= 0 ? head + image.offset : text.length })).sort((a, b) => a.at - b.at || a.i - b.i);
  const parts: TemplatePart[] = [];
  let from = 0;
  for (const { image, at } of placed) {
    if (at > from) parts.push({ type: 'text', text: text.slice(from, at) });
    parts.push({ type: 'image' });
    images.push(image);
    from = at;
  }
  if (from < text.length) parts.push({ type: 'text', text: text.slice(from) });
  return { ...message, content: parts };
}

/** The grid an image becomes; an image the processor cannot take is refused, naming which. */
function gridOf(loaded: ChatTokenizer, vision: VisionSpec, image: ChatImage, index: number) {
  try {
    return imageGrid(vision, image.width, image.height, { lowResolution: image.lowResolution });
  } catch (error) {
    if (!(error instanceof ImageShapeError)) throw error;
    throw imageUnreadable(loaded.info.id, index, `it is ${image.width}x${image.height}: ${error.message}`);
  }
}

/**
 * The prompt's ids with each image's placeholder token repeated as many times as the image has
 * tokens, and where each image's tokens are. The template renders one placeholder per image, in the
 * images' order; message text cannot add one (special-token text is encoded as text).
 */
function widenImages(ids: number[], vision: VisionSpec, images: ChatImage[], grids: ReturnType<typeof imageGrid>[]): Pick<RenderedPrompt, 'ids' | 'images'> {
  const placeholders = ids.reduce((n, id) => n + (id === vision.imageTokenId ? 1 : 0), 0);
  if (placeholders !== images.length) throw new CoreError('internal', `the chat template rendered ${placeholders} image placeholders for ${images.length} images`);
  const out: number[] = [];
  const placed: SequenceImage[] = [];
  for (const id of ids) {
    if (id !== vision.imageTokenId) {
      out.push(id);
      continue;
    }
    const k = placed.length;
    const { thw, tokens } = grids[k]!;
    const { bytes, hash, lowResolution } = images[k]!;
    placed.push({ start: out.length, length: tokens, grid: thw, bytes, hash, ...(lowResolution ? { lowResolution } : {}) });
    for (let t = 0; t < tokens; t++) out.push(id);
  }
  return { ids: out, images: placed };
}

/** Whether the prompt's last thought tag is an opening one, with only whitespace after it. */
function opensThought(text: string, open: string, close: string): boolean {
  const end = text.trimEnd();
  return end.endsWith(open) && !end.endsWith(close);
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

/**
 * One message for the template. Native tool formats get the template's own fields (tool_calls on
 * the assistant turn, a `tool` role per result); the generic format writes calls and results as
 * text in its own form (tools/generic.ts), since such a template knows neither.
 */
function templateMessage(message: ChatMessage, generic: boolean, format: ToolFormat): TemplateMessage {
  if (message.role === 'user') return { role: 'user', content: message.content };
  if (message.role === 'tool') {
    const content = message.isError ? `Error: ${message.content}` : message.content;
    return generic ? { role: 'user', content: genericToolResultText(content) } : { role: 'tool', content, tool_call_id: message.callId, name: message.name };
  }
  const calls = message.toolCalls ?? [];
  if (generic) return { role: 'assistant', content: [message.content, ...calls.map(genericToolCallText)].filter((t) => t !== '').join('\n') };
  const thinkingField = message.reasoning && (format === 'harmony' || format === 'lfm2');
  return {
    role: 'assistant',
    // Qwen3's template needs a string, never null, beside tool calls. gpt-oss's refuses content and
    // thinking together beside a call: the thought goes back as its analysis (as llama.cpp does).
    content: thinkingField && format === 'harmony' && calls.length ? '' : message.content,
    ...(calls.length ? { tool_calls: calls.map((c) => ({ type: 'function' as const, id: c.id, function: { name: c.name, arguments: c.input } })) } : {}),
    ...(message.reasoning ? { reasoning_content: message.reasoning } : {}),
    ...(thinkingField ? { thinking: message.reasoning } : {}),
  };
}

const features = new WeakMap<ChatTokenizer, TemplateFeatures>();

/** What the model's chat template can do (tool format, thinking switch; the analysis of its renders
 * where no dedicated format knows it: ./template/family-features.ts), read once per tokenizer. */
export function featuresOf(loaded: ChatTokenizer): TemplateFeatures {
  let found = features.get(loaded);
  if (!found) {
    const template = (loaded.tokenizer as unknown as { chat_template?: unknown }).chat_template;
    found = familyFeatures(typeof template === 'string' ? template : '');
    features.set(loaded, found);
  }
  return found;
}

/**
 * A model family as data, read from its chat template (the Jinja source): the format it writes tool
 * calls in, how it writes thoughts, the marker strings of both, the tokens that end its turn, and
 * whether the template takes a reasoning level. The chat layer derives the rest from this
 * description: the parser (src/chat/tools/parser.ts), the constraint for forced calls
 * (src/chat/grammar/constraint.ts), the decoding that keeps the markers (src/chat/family.ts).
 *
 * Detection by marker substrings, in llama.cpp's order (common/chat.cpp,
 * common_chat_try_specialized_template): the dedicated formats first (Mistral `[TOOL_CALLS]`,
 * Gemma 4, harmony `<|channel|>`, Kimi K2, LFM2, DeepSeek DSML, MiniMax M2), then the Qwen3-Coder
 * XML form (`<tool_call>`, `<function=` and `<parameter=` together), GLM (`<arg_key>`), DeepSeek
 * R1 / V3.1, and `<tool_call>` alone as hermes (Hermes 2/3 Pro, Qwen2.5, Qwen3); Llama 3.x by its
 * `ipython` header or `<|python_tag|>`. A template that never renders a `tools` variable cannot
 * describe tools to the model, so it gets `generic` whatever markers it contains — unless it renders
 * calls in its family's markup (DeepSeek R1 / V3.1), which then keeps its format with the tools
 * described by the server.
 */
import { TEMPLATE_CONTEXT } from './template-context.js';

/** The formats a model writes its tool calls in (parsers: src/chat/tools/parser.ts). */
export const TOOL_FORMATS = [
  'hermes', 'qwen3-xml', 'llama3-json', 'generic',
  'harmony', 'mistral', 'kimi-k2', 'glm', 'deepseek-r1', 'deepseek-v3.1', 'deepseek-dsml', 'minimax-m2', 'lfm2', 'gemma4',
  // Found by rendering the template (src/chat/template/analyze.ts): the markers are in TemplateFeatures.auto.
  'auto',
] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

/**
 * How a family writes a thought: between two tags at the start of its answer (`<think>…</think>`,
 * Mistral's `[THINK]…[/THINK]`), on harmony's `analysis` channel, or not at all.
 */
export const REASONING_STYLES = ['think-tags', 'mistral-think', 'gemma-channel', 'harmony', 'auto-tags', 'none'] as const;
export type ReasoningStyle = (typeof REASONING_STYLES)[number];

/** The tags of a thought, for the styles that have them. */
export const REASONING_TAGS: Partial<Record<ReasoningStyle, { open: string; close: string }>> = {
  'think-tags': { open: '<think>', close: '</think>' },
  'mistral-think': { open: '[THINK]', close: '[/THINK]' },
  // Gemma 4: `<|channel>thought\n…<channel|>` (the newline is dropped with the thought's whitespace).
  'gemma-channel': { open: '<|channel>thought', close: '<channel|>' },
};

/**
 * The marker strings each format writes around calls (and harmony around every message): the parser
 * reads them, the client never sees them. Where a tokenizer calls them special they must survive
 * decoding (src/chat/turn.ts keeps these and drops the other special tokens).
 */
export const FORMAT_MARKERS: Record<ToolFormat, readonly string[]> = {
  hermes: ['<tool_call>', '</tool_call>'],
  'qwen3-xml': ['<tool_call>', '</tool_call>'],
  'llama3-json': ['<|python_tag|>'],
  generic: [],
  harmony: ['<|start|>', '<|channel|>', '<|message|>', '<|constrain|>', '<|end|>', '<|call|>', '<|return|>'],
  mistral: ['[TOOL_CALLS]', '[ARGS]', '[CALL_ID]'],
  'kimi-k2': ['<|tool_calls_section_begin|>', '<|tool_calls_section_end|>', '<|tool_call_begin|>', '<|tool_call_argument_begin|>', '<|tool_call_end|>'],
  glm: ['<tool_call>', '</tool_call>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>'],
  'deepseek-r1': ['<｜tool▁calls▁begin｜>', '<｜tool▁calls▁end｜>', '<｜tool▁call▁begin｜>', '<｜tool▁call▁end｜>', '<｜tool▁sep｜>'],
  'deepseek-v3.1': ['<｜tool▁calls▁begin｜>', '<｜tool▁calls▁end｜>', '<｜tool▁call▁begin｜>', '<｜tool▁call▁end｜>', '<｜tool▁sep｜>'],
  'deepseek-dsml': ['<｜DSML｜function_calls>', '</｜DSML｜function_calls>'],
  'minimax-m2': ['<minimax:tool_call>', '</minimax:tool_call>'],
  lfm2: ['<|tool_call_start|>', '<|tool_call_end|>'],
  gemma4: ['<|tool_call>', '<tool_call|>', '<|"|>'],
  // The analysed template's own markers: autoMarkers(features.auto).
  auto: [],
};

/** Tokens that end the model's turn besides its end-of-sequence ids (harmony: a call, or the final answer). */
export const FORMAT_END_MARKERS: Partial<Record<ToolFormat, readonly string[]>> = {
  harmony: ['<|call|>', '<|return|>'],
};

/**
 * Tokens that never end the model's turn in the format, whatever the model's end-of-sequence ids
 * say: harmony's `<|end|>` ends one message (the analysis) and the next follows. (llama.cpp counts
 * every `<|end|>` control token as an end of generation, and drops it only where it finds
 * `<|return|>` and `<|call|>` among them too.)
 */
export const FORMAT_CONTINUE_MARKERS: Partial<Record<ToolFormat, readonly string[]>> = {
  harmony: ['<|end|>'],
};

/** Every marker string of a family: its call format's, its thought's tags, and what the analysis of
 * its template found (content wrappers, turn markers). Empty strings are no markers. */
export function familyMarkers(features: Pick<TemplateFeatures, 'toolFormat' | 'reasoning' | 'auto'>): string[] {
  const tags = thoughtTags(features);
  const found = [...FORMAT_MARKERS[features.toolFormat], ...(tags ? [tags.open, tags.close] : []), ...(features.auto ? autoMarkers(features.auto) : [])];
  return [...new Set(found)].filter((marker) => marker !== '');
}

/** The thought's tags of a family: its style's, or the analysed template's (`auto-tags`). */
export function thoughtTags(features: Pick<TemplateFeatures, 'reasoning' | 'auto'>): { open: string; close: string; lead?: string } | undefined {
  return features.reasoning === 'auto-tags' ? features.auto?.thought : REASONING_TAGS[features.reasoning];
}

/**
 * What the differential analysis of a template (src/chat/template/analyze.ts) found, as data: the
 * strings around a thought, around the answer's text, around calls, and the turn's own markers. The
 * parser (src/chat/tools/auto-calls.ts), the answer builder and the forced-call grammar read it.
 */
export interface AutoFormat {
  /** The thought's markers; `open` empty where the thought starts the answer unmarked (Apriel 1.6),
   * then `lead`: the text the generation prompt writes at its start (`Here are my reasoning steps:`). */
  thought?: { open: string; close: string; lead?: string };
  /** The text's wrapper (Command R7B's `<|START_RESPONSE|>` … `<|END_RESPONSE|>`). */
  content?: { open: string; close: string };
  /** How calls are written; absent where the template renders none. */
  calls?: AutoCalls;
  /** Marker tokens of the assistant's turn (`<|CHATBOT_TOKEN|>`): never the client's text. */
  turn: string[];
}

/**
 * Calls in a marked section (`open` … `close`; `close` empty: the section runs to the end). `json`:
 * the section holds a JSON object per call, or an array of them, its name and arguments under the
 * keys found (and an id the template writes itself, `first` where it precedes the name). `tagged`: per call `nameOpen NAME nameClose`, then per argument `argOpen KEY argMid
 * VALUE argClose`, then `callClose` (Seed-OSS's `<function=…>`, MiniMax's `<invoke name="…">`,
 * GLM's `<arg_key>`): values are text, typed by the tool's schema.
 */
export type AutoCalls =
  | { shape: 'json'; open: string; close: string; array: boolean; nameKey: string; argsKey: string; id?: { key: string; value: string; first: boolean } }
  | { shape: 'tagged'; open: string; close: string; nameOpen: string; nameClose: string; argOpen: string; argMid: string; argClose: string; callClose: string };

export function autoMarkers(auto: AutoFormat): string[] {
  const calls = auto.calls ? [auto.calls.open, auto.calls.close] : [];
  return [...calls, ...(auto.content ? [auto.content.open, auto.content.close] : []), ...auto.turn].filter((marker) => marker !== '');
}

export interface TemplateFeatures {
  /** The format to prompt and parse tool calls in. `generic`: put genericToolPrompt() in the
   * system prompt and do not pass `tools` to the template. */
  toolFormat: ToolFormat;
  /** The template renders a `tools` variable (it describes tools to the model itself). */
  nativeTools: boolean;
  /** The template reads a thinking switch (./template-context.ts: Qwen3's) or, for harmony, an
   * effort level: thinking can be asked for. */
  thinkingSwitch: boolean;
  /** How the model writes its thoughts. */
  reasoning: ReasoningStyle;
  /** The template reads an effort level (./template-context.ts; gpt-oss: low / medium / high). */
  effortLevels: boolean;
  /** What the analysis of the template found, where the format (`auto`) or the thought's tags
   * (`auto-tags`) come from it. */
  auto?: AutoFormat;
}

export function templateFeatures(template: string): TemplateFeatures {
  const code = templateCode(template);
  const nativeTools = /\btools\b/.test(code);
  const effortLevels = reads(code, TEMPLATE_CONTEXT.effort);
  const reasoning = reasoningStyle(template);
  const thinkingSwitch = reads(code, TEMPLATE_CONTEXT.thinking) || (reasoning === 'harmony' && effortLevels);
  return { toolFormat: nativeTools || rendersCalls(template) ? nativeFormat(template) : 'generic', nativeTools, thinkingSwitch, reasoning, effortLevels };
}

const reads = (code: string, name: string) => new RegExp(`\\b${name}\\b`).test(code);

/** What the models list says of a chat model's template (src/core/model.ts ChatFormat). */
export function chatFormat(template: string): { toolFormat: ToolFormat; reasoning: ReasoningStyle; effortLevels: boolean } {
  const { toolFormat, reasoning, effortLevels } = templateFeatures(template);
  return { toolFormat, reasoning, effortLevels };
}

/**
 * The family's call format by its markers, in llama.cpp's order (common/chat.cpp,
 * common_chat_try_specialized_template): the dedicated formats first, since several of them also
 * contain `<tool_call>` (GLM, Qwen3-Coder); `<tool_call>` alone last, as hermes.
 */
function nativeFormat(src: string): ToolFormat {
  if (src.includes('[TOOL_CALLS]')) return 'mistral';
  if (src.includes("'<|tool_call>call:'")) return 'gemma4';
  if (src.includes('<|channel|>')) return 'harmony';
  if (src.includes('<|tool_calls_section_begin|>')) return 'kimi-k2';
  if (src.includes('<|tool_call_start|>') || src.includes('<|tool_list_start|>') || src.includes('List of tools: [')) return 'lfm2';
  if (src.includes('dsml_token') && src.includes('DSML')) return 'deepseek-dsml';
  if (src.includes('<minimax:tool_call>')) return 'minimax-m2';
  if (src.includes('<tool_call>') && src.includes('<function=') && src.includes('<parameter=')) return 'qwen3-xml';
  // GLM 4.5 / 4.6 / 4.7: `<tool_call>NAME` then `<arg_key>`/`<arg_value>` pairs (not hermes JSON).
  if (src.includes('<arg_key>') && src.includes('<arg_value>')) return 'glm';
  if (src.includes('tool▁calls▁begin')) return src.includes('```json') ? 'deepseek-r1' : 'deepseek-v3.1';
  if (src.includes('<tool_call>')) return 'hermes';
  if (src.includes('<|start_header_id|>ipython<|end_header_id|>') || src.includes('<|python_tag|>')) return 'llama3-json';
  // Renders tools in a form we do not parse (Command-R, …): teach ours.
  return 'generic';
}

/**
 * A template that renders an assistant message's calls in its family's markup without describing tools
 * (DeepSeek R1 and V3.1): its family's format still applies, with the tools described by the server
 * (src/chat/tools/generic.ts nativeToolPrompt).
 */
function rendersCalls(src: string): boolean {
  // `message[KEY]`: the key is a string literal, so the source is read, not the code.
  return src.includes(TEMPLATE_CONTEXT.calls) && src.includes('tool▁calls▁begin');
}

function reasoningStyle(src: string): ReasoningStyle {
  if (src.includes('<|channel|>')) return 'harmony';
  if (src.includes('[THINK]')) return 'mistral-think';
  if (src.includes('<|channel>') && src.includes('<channel|>')) return 'gemma-channel';
  if (src.includes('<think>') || src.includes('</think>')) return 'think-tags';
  return 'none';
}

/**
 * The code of a template: the insides of its `{% … %}` and `{{ … }}` tags with string literals
 * removed, so that a word inside a literal (`"<tools></tools>"`) or in plain template text does not
 * count as a variable the template reads. `{# … #}` comments are dropped.
 */
function templateCode(template: string): string {
  let code = '';
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open === -1 || open + 1 >= template.length) break;
    const kind = template[open + 1];
    if (kind === '#') {
      const end = template.indexOf('#}', open + 2);
      i = end === -1 ? template.length : end + 2;
      continue;
    }
    if (kind !== '%' && kind !== '{') {
      i = open + 1;
      continue;
    }
    const close = kind === '%' ? '%}' : '}}';
    // Scan the tag, skipping string literals: a `}}` or `%}` inside a literal does not close it.
    let j = open + 2;
    let quote = '';
    while (j < template.length) {
      const c = template[j]!;
      if (quote) {
        if (c === '\\') j++;
        else if (c === quote) quote = '';
      } else if (c === '"' || c === "'") {
        quote = c;
        code += "''";
      } else if (template.startsWith(close, j)) {
        break;
      } else {
        code += c;
      }
      j++;
    }
    code += '\n';
    i = j + close.length;
  }
  return code;
}

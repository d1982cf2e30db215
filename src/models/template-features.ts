/**
 * Which tool-call format a model speaks, read from its chat template (the Jinja source), and the
 * one format the server teaches models whose template knows no tools.
 *
 * Detection by marker substrings, in llama.cpp's order (common/chat.cpp,
 * common_chat_templates_apply_jinja and the specialised-template checks): the Qwen3-Coder XML form
 * needs `<tool_call>`, `<function=` and `<parameter=` together (its template also contains
 * `<tool_call>`, so it is checked before hermes); `<tool_call>` alone is hermes (Hermes 2/3 Pro,
 * Qwen2.5, Qwen3); Llama 3.x is recognised by its `ipython` header or `<|python_tag|>`. A template
 * that never renders a `tools` variable cannot describe tools to the model, so it gets `generic`
 * whatever markers it contains.
 */
/** The wire formats a model writes its tool calls in (parsers: src/chat/tools/parser.ts). */
export const TOOL_FORMATS = ['hermes', 'qwen3-xml', 'llama3-json', 'generic'] as const;
export type ToolFormat = (typeof TOOL_FORMATS)[number];

export interface TemplateFeatures {
  /** The format to prompt and parse tool calls in. `generic`: put genericToolPrompt() in the
   * system prompt and do not pass `tools` to the template. */
  toolFormat: ToolFormat;
  /** The template renders a `tools` variable (it describes tools to the model itself). */
  nativeTools: boolean;
  /** The template reads `enable_thinking` (Qwen3's switch between thinking and direct answers). */
  thinkingSwitch: boolean;
}

export function templateFeatures(template: string): TemplateFeatures {
  const code = templateCode(template);
  const nativeTools = /\btools\b/.test(code);
  const thinkingSwitch = /\benable_thinking\b/.test(code);
  return { toolFormat: nativeTools ? nativeFormat(template) : 'generic', nativeTools, thinkingSwitch };
}

function nativeFormat(src: string): ToolFormat {
  if (src.includes('<tool_call>') && src.includes('<function=') && src.includes('<parameter=')) return 'qwen3-xml';
  if (src.includes('<tool_call>')) return 'hermes';
  if (src.includes('<|start_header_id|>ipython<|end_header_id|>') || src.includes('<|python_tag|>')) return 'llama3-json';
  // Renders tools in a form we do not parse (Mistral's [TOOL_CALLS], Command-R, …): teach ours.
  return 'generic';
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

/**
 * The names a chat template is rendered with (Hugging Face's apply_chat_template context): the
 * Jinja templates' own vocabulary, fixed by the model files that read them, not by any dialect.
 * Named once here: ./template-features.ts finds what a template reads, src/chat/prompt.ts sets it.
 */
export const TEMPLATE_CONTEXT = {
  /** Qwen3's switch between thinking and direct answers. */
  thinking: 'enable_thinking',
  /** gpt-oss's level of thought (low / medium / high). */
  effort: 'reasoning_effort',
  /** The key of an assistant message's calls. */
  calls: 'tool_calls',
  /** The name of the template a tokenizer_config.json with several uses when tools are given. */
  toolsTemplate: 'tool_use',
} as const;

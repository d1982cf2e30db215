/**
 * The model families of issue 38 and the llama.cpp templates (models/templates/) each one covers.
 * The first group are the families the issue names; the rest are the other templates that
 * test-chat.cpp has parse cases for, each its own family, so no case is left without one.
 * A family the issue names with no template here (SmolLM3, GLM-4.5, Magistral's own, Qwen3's
 * plain template) has no parse case in test-chat.cpp: its row counts 0 in the file.
 */
export interface Family {
  name: string;
  /** Template file names under llama.cpp's models/templates/. */
  templates: string[];
  /** The issue names it (the families item 7 asks the parse cases of). */
  named: boolean;
}

const named = (name: string, templates: string[]): Family => ({ name, templates, named: true });
const other = (name: string, templates: string[]): Family => ({ name, templates, named: false });

export const FAMILIES: Family[] = [
  named('gpt-oss', ['openai-gpt-oss-120b.jinja']),
  named('Mistral / Devstral / Ministral / Magistral', [
    'mistralai-Ministral-3-14B-Reasoning-2512.jinja',
    'Mistral-Small-3.2-24B-Instruct-2506.jinja',
    'unsloth-mistral-Devstral-Small-2507.jinja',
    'mistralai-Mistral-Nemo-Instruct-2407.jinja',
  ]),
  named('Kimi K2', ['moonshotai-Kimi-K2.jinja', 'Kimi-K2-Instruct.jinja', 'Kimi-K2-Thinking.jinja']),
  named('DeepSeek R1 / V3.1 / V3.2 / V4', [
    'deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja',
    'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja',
    'llama-cpp-deepseek-r1.jinja',
    'deepseek-ai-DeepSeek-V3.1.jinja',
    'deepseek-ai-DeepSeek-V3.2.jinja',
    'deepseek-ai-DeepSeek-V4.jinja',
    'deepseek-ai-DeepSeek-V4-Flash-0731.jinja',
  ]),
  named('GLM 4.5 / 4.6 / 4.7', ['GLM-4.6.jinja', 'GLM-4.7-Flash.jinja']),
  named('MiniMax M2', ['MiniMax-M2.jinja']),
  named('Qwen3 / Qwen3-Coder / Qwen3.5', ['Qwen-Qwen3-0.6B.jinja', 'Qwen3-Coder.jinja', 'Qwen3.5-4B.jinja']),
  named('Hermes 2 / 3', ['NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja', 'NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja']),
  named('Llama 3.x', ['meta-llama-Llama-3.1-8B-Instruct.jinja', 'meta-llama-Llama-3.2-3B-Instruct.jinja', 'meta-llama-Llama-3.3-70B-Instruct.jinja']),
  named('Gemma 4', ['google-gemma-4-31B-it.jinja', 'google-gemma-4-31B-it-interleaved.jinja']),
  named('LFM2', ['LFM2-8B-A1B.jinja', 'LFM2.5-Instruct.jinja', 'LFM2.5-8B-A1B.jinja']),
  named('Granite', ['ibm-granite-granite-3.3-2B-Instruct.jinja', 'ibm-granite-granite-4.0.jinja', 'ibm-granite-granite-4.1.jinja']),
  named('Command-R', ['CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja', 'CohereForAI-c4ai-command-r-plus-tool_use.jinja', 'Cohere2MoE.jinja']),
  named('Seed-OSS', ['ByteDance-Seed-OSS.jinja']),
  named('SmolLM3', ['HuggingFaceTB-SmolLM3-3B.jinja']),
  named('Apriel', ['unsloth-Apriel-1.5.jinja', 'Apriel-1.6-15b-Thinker-fixed.jinja']),
  named('Nemotron', ['NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja', 'NVIDIA-Nemotron-Nano-v2.jinja']),
  other('Qwen2.5 / QwQ', ['Qwen-Qwen2.5-7B-Instruct.jinja', 'Qwen-QwQ-32B.jinja']),
  other('MiMo-VL', ['MiMo-VL.jinja']),
  other('Kimi K3', ['Kimi-K3.jinja']),
  other('MiniMax M3', ['MiniMax-M3.jinja']),
  other('Gemma 2', ['google-gemma-2-2b-it.jinja']),
  other('FireFunction v2', ['fireworks-ai-llama-3-firefunction-v2.jinja']),
  other('Functionary', ['meetkai-functionary-medium-v3.1.jinja', 'meetkai-functionary-medium-v3.2.jinja']),
  other('StepFun', ['StepFun3.5-Flash.jinja']),
  other('GigaChat', ['GigaChat3-10B-A1.8B.jinja', 'GigaChat3.1-10B-A1.8B.jinja']),
  other('MiniCPM', ['openbmb-MiniCPM5-1B.jinja']),
  other('Reka', ['Reka-Edge.jinja']),
  other('Apertus', ['Apertus-8B-Instruct.jinja']),
  other('Muse Glimmer', ['muse-glimmer.jinja']),
];

export function familyOf(template: string): string {
  return FAMILIES.find((f) => f.templates.includes(template))?.name ?? `(no family: ${template})`;
}

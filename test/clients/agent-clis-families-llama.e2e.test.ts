/**
 * The Codex CLI against a gpt-oss-templated model and the Claude Code CLI against a
 * Devstral-templated one, each through a whole tool loop, on llama.cpp: the family test models as
 * GGUF files, served from the GGUF alone (test/helpers/agent-cli-families.ts says what each case
 * proves). GLM-4.7 runs on ONNX only: each GGUF is an 80 MB build and load, and the pass's time is
 * worth more than a third model whose parsing is the engine-free chat layer's.
 */
import { agentCliFamilySuite } from '../helpers/agent-cli-families.js';
import { FAMILY_SPECS } from '../helpers/family-model.js';

agentCliFamilySuite({ gguf: true, claudeCode: [FAMILY_SPECS.devstral] });

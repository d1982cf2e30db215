/**
 * The Codex CLI against a gpt-oss-templated model and the Claude Code CLI against Devstral- and
 * GLM-4.7-templated ones, each through a whole tool loop, on llama.cpp: the family test models as
 * GGUF files, served from the GGUF alone (test/helpers/agent-cli-families.ts says what each case proves).
 */
import { agentCliFamilySuite } from '../helpers/agent-cli-families.js';

agentCliFamilySuite({ gguf: true });

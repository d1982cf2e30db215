/**
 * Converts a causal LM built by ../onnx/causal-lm.ts (fp32, weights inline) or by
 * ../onnx/model-builder-lm.ts (MatMulNBits blocks, float32 or float16 tensors) to a GGUF of arch
 * `llama`, so llama.cpp runs the same weights as our engine. What changes on the way:
 *
 * - ONNX MatMul weights are [in, out] (x · W); GGUF stores a linear layer as PyTorch does,
 *   [out, in] row-major (ggml sizes [in, out] innermost first), so every projection is transposed.
 * - Our graph rotates query and key halves (HF rotate_half); llama.cpp's `llama` arch rotates
 *   adjacent pairs. Like convert_hf_to_gguf.py (`LlamaModel.permute`), the rows of each q/k head are
 *   reordered so that pair (2j, 2j+1) holds what were rows j and j + headDim/2.
 * - MatMulNBits weights are dequantized to the values the kernel multiplies by; those blocks were
 *   quantized as Q4_0 / Q8_0 are, so written as Q4_0 / Q8_0 they are the same values again
 *   (test/model/model-builder.test.ts). The embedding table (one row gathered per token) is float32 or
 *   float16 in the ONNX file and written as the GGUF's type.
 * - The output head's bias (the -1e4 on special tokens that keeps bench generations from ending)
 *   has no place in the `llama` arch and is dropped: llama.cpp may pick a special token where we
 *   would not. A benchmark feeds token ids and ignores the text, so speed is unaffected.
 *
 * The tokenizer is the subject's word list as a `gpt2` vocabulary without merges: llama.cpp needs
 * one to load; the benchmark never tokenizes with it.
 */
import fs from 'node:fs';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { FILE_TYPE, fromHalf, writeGguf, type GgmlType, type GgufTensor, type GgufValue } from './gguf-writer.js';
import { BLOCK, dequantizeBlocks } from '../onnx/model-builder-lm.js';

const { onnx } = onnxProto;

interface Config {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  max_position_embeddings: number;
  rope_theta: number;
  rms_norm_eps: number;
  eos_token_id?: number;
}

/** Transposes a row-major [rows, cols] matrix. */
function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

/** Reorders the rows of each head ([heads * headDim, in]) from half-split to interleaved rotary pairs. */
export function permuteRotary(data: Float32Array, heads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < half; j++) {
      for (let t = 0; t < 2; t++) {
        const from = (h * headDim + t * half + j) * cols;
        const to = (h * headDim + 2 * j + t) * cols;
        out.set(data.subarray(from, from + cols), to);
      }
    }
  }
  return out;
}

export interface OnnxToGgufOptions {
  /** A model folder (config.json, tokenizer.json, the ONNX file, with its weights inline or in external data files beside it, as graphs over 2 GB have them). */
  modelDir: string;
  /** The ONNX file in the folder (default onnx/model.onnx). */
  onnxFile?: string;
  out: string;
  type: Exclude<GgmlType, 'F16'>;
  /**
   * Metadata written over the defaults (./chat-gguf.ts: the model's real tokenizer and chat
   * template in place of the benchmark's word list).
   */
  metadata?: Record<string, GgufValue>;
}

type TensorProto = onnxProto.onnx.ITensorProto;

/** An inline initializer's bytes, copied (rawData may be unaligned inside the file buffer). */
function inlineBytes(t: TensorProto): ArrayBuffer | undefined {
  const raw = t.rawData;
  return raw?.byteLength ? (raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength) as ArrayBuffer) : undefined;
}

/**
 * An initializer's bytes from its external data file (`location`, `offset`, `length`, the file beside
 * the graph), through `open`: one descriptor per data file.
 */
function externalBytes(t: TensorProto, open: (location: string) => number): ArrayBuffer {
  const entry = new Map((t.externalData ?? []).map((e) => [e.key ?? '', e.value ?? '']));
  const location = entry.get('location');
  const length = Number(entry.get('length'));
  if (!location || !Number.isSafeInteger(length)) throw new Error(`${t.name}: external data without location or length`);
  const out = new Uint8Array(length);
  const read = fs.readSync(open(location), out, 0, length, Number(entry.get('offset') ?? 0));
  if (read !== length) throw new Error(`${t.name}: ${read} of ${length} bytes in ${location}`);
  return out.buffer;
}

/** The sizes a `llama`-architecture GGUF states. */
export interface LlamaShape {
  vocab: number;
  context: number;
  hidden: number;
  layers: number;
  intermediate: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ropeTheta: number;
  rmsEps: number;
}

/** A `llama`-architecture GGUF's general and model metadata (the tokenizer's is the caller's). */
export function llamaMetadata(name: string, type: GgmlType, shape: LlamaShape): Record<string, GgufValue> {
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  return {
    'general.architecture': { type: 'string', value: 'llama' },
    'general.name': { type: 'string', value: name },
    'general.file_type': u32(FILE_TYPE[type]),
    'llama.vocab_size': u32(shape.vocab),
    'llama.context_length': u32(shape.context),
    'llama.embedding_length': u32(shape.hidden),
    'llama.block_count': u32(shape.layers),
    'llama.feed_forward_length': u32(shape.intermediate),
    'llama.rope.dimension_count': u32(shape.headDim),
    'llama.attention.head_count': u32(shape.heads),
    'llama.attention.head_count_kv': u32(shape.kvHeads),
    'llama.attention.key_length': u32(shape.headDim),
    'llama.attention.value_length': u32(shape.headDim),
    'llama.rope.freq_base': { type: 'f32', value: shape.ropeTheta },
    'llama.attention.layer_norm_rms_epsilon': { type: 'f32', value: shape.rmsEps },
  };
}

export function onnxToGguf(options: OnnxToGgufOptions): void {
  const config = JSON.parse(fs.readFileSync(path.join(options.modelDir, 'config.json'), 'utf8')) as Config;
  const onnxPath = path.join(options.modelDir, options.onnxFile ?? 'onnx/model.onnx');
  const model = onnx.ModelProto.decode(fs.readFileSync(onnxPath));
  const T = onnx.TensorProto.DataType;
  const weights = new Map<string, Float32Array>();
  const packed = new Map<string, { data: Uint8Array; dims: number[] }>();
  const dataFiles = new Map<string, number>();
  const open = (location: string) => {
    let fd = dataFiles.get(location);
    if (fd === undefined) dataFiles.set(location, (fd = fs.openSync(path.join(path.dirname(onnxPath), location), 'r')));
    return fd;
  };
  try {
    for (const t of model.graph?.initializer ?? []) {
      const bytes = t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL ? externalBytes(t, open) : inlineBytes(t);
      if (!bytes?.byteLength) continue;
      if (t.dataType === T.FLOAT) weights.set(t.name!, new Float32Array(bytes));
      else if (t.dataType === T.FLOAT16) weights.set(t.name!, Float32Array.from(new Uint16Array(bytes), fromHalf));
      else if (t.dataType === T.UINT8 && t.name!.endsWith('.MatMulNBits.qweight')) packed.set(t.name!, { data: new Uint8Array(bytes), dims: (t.dims ?? []).map(Number) });
    }
  } finally {
    for (const fd of dataFiles.values()) fs.closeSync(fd);
  }
  const get = (name: string) => {
    const w = weights.get(name);
    if (w) return w;
    // A MatMulNBits weight: the [K, N] values the kernel multiplies by.
    const q = packed.get(`${name}.MatMulNBits.qweight`);
    const scales = weights.get(`${name}.MatMulNBits.scales`);
    if (!q || !scales) throw new Error(`${options.modelDir}: no float initializer or MatMulNBits weight ${name}`);
    const [N, blocks, blob] = q.dims as [number, number, number];
    return dequantizeBlocks(q.data, scales, blocks * BLOCK, N, (blob * 8) / BLOCK);
  };
  const { hidden_size: H, intermediate_size: F, num_attention_heads: NH, num_key_value_heads: NKV, head_dim: D, vocab_size: V } = config;
  const q = options.type;
  type Spec = { name: string; shape: number[]; type: GgmlType; make: () => Float32Array };
  // ONNX [in, out] -> GGUF [out, in].
  const linear = (name: string, onnxName: string, inDim: number, outDim: number, rotaryHeads?: number): Spec => ({
    name, shape: [outDim, inDim], type: q,
    make: () => {
      const t = transpose(get(onnxName), inDim, outDim);
      return rotaryHeads ? permuteRotary(t, rotaryHeads, D, inDim) : t;
    },
  });
  const norm = (name: string, onnxName: string): Spec => ({ name, shape: [H], type: 'F32', make: () => get(onnxName) });
  const specs: Spec[] = [{ name: 'token_embd.weight', shape: [V, H], type: q, make: () => get('model.embed_tokens.weight') }];
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    specs.push(
      norm(`blk.${l}.attn_norm.weight`, `${p}.input_layernorm.weight`),
      linear(`blk.${l}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, H, NH * D, NH),
      linear(`blk.${l}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, H, NKV * D, NKV),
      linear(`blk.${l}.attn_v.weight`, `${p}.self_attn.v_proj.weight`, H, NKV * D),
      linear(`blk.${l}.attn_output.weight`, `${p}.self_attn.o_proj.weight`, NH * D, H),
      norm(`blk.${l}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`),
      linear(`blk.${l}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`, H, F),
      linear(`blk.${l}.ffn_up.weight`, `${p}.mlp.up_proj.weight`, H, F),
      linear(`blk.${l}.ffn_down.weight`, `${p}.mlp.down_proj.weight`, F, H),
    );
  }
  specs.push(norm('output_norm.weight', 'model.norm.weight'), linear('output.weight', 'lm_head.weight', H, V));

  const tokenizer = JSON.parse(fs.readFileSync(path.join(options.modelDir, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> }; added_tokens?: Array<{ id: number; content: string }> };
  const tokens = Array.from({ length: V }, (_, i) => `<unused${i}>`);
  for (const [word, id] of Object.entries(tokenizer.model.vocab)) if (id < V) tokens[id] = word;
  const special = new Set((tokenizer.added_tokens ?? []).map((t) => t.id));
  const eos = config.eos_token_id ?? 0;
  const metadata: Record<string, GgufValue> = {
    ...llamaMetadata(path.basename(options.modelDir), q, {
      vocab: V, context: config.max_position_embeddings, hidden: H, layers: config.num_hidden_layers, intermediate: F,
      heads: NH, kvHeads: NKV, headDim: D, ropeTheta: config.rope_theta, rmsEps: config.rms_norm_eps,
    }),
    'tokenizer.ggml.model': { type: 'string', value: 'gpt2' },
    'tokenizer.ggml.pre': { type: 'string', value: 'default' },
    'tokenizer.ggml.tokens': { type: 'strings', value: tokens },
    'tokenizer.ggml.token_type': { type: 'i32s', value: tokens.map((_, i) => (special.has(i) ? 3 : 1)) },
    'tokenizer.ggml.merges': { type: 'strings', value: [] },
    'tokenizer.ggml.bos_token_id': { type: 'u32', value: eos },
    'tokenizer.ggml.eos_token_id': { type: 'u32', value: eos },
    'tokenizer.ggml.add_bos_token': { type: 'bool', value: false },
    ...options.metadata,
  };
  const infos = specs.map(({ name, shape, type }) => ({ name, shape, type }));
  function* tensors(): Generator<GgufTensor> {
    for (const s of specs) yield { name: s.name, shape: s.shape, type: s.type, data: s.make() };
  }
  const partial = `${options.out}.partial`;
  writeGguf(partial, metadata, infos, tensors());
  fs.renameSync(partial, options.out);
}

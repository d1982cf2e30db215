/**
 * The engine's settings: how a worker loads and runs its model. Declared once here, each with its
 * one default and its one line of meaning (what `--help` prints); the configuration schema
 * (src/config.ts) takes these fields as they are, `main` picks them out of the parsed config with
 * `engineSettingsOf` and passes the object whole to the service, the pools, the workers and the
 * decoder. Adding a setting means adding it here and reading it where it acts, nothing else.
 *
 * It sits in core/ (below every layer) so that the worker and the pool read the same type the
 * configuration parses, without importing the entry layer.
 */
import { z } from 'zod';

/** A boolean from a flag, an environment variable or a file: 1/true/yes/on (any case) is true. */
export const bool = z.preprocess((v) => (typeof v === 'string' ? /^(1|true|yes|on)$/i.test(v) : v), z.boolean());

export const engineSettingsSchema = z.object({
  /** Continuous batching: every generation of a worker advances in one forward pass per step. */
  generationBatchSize: z.coerce.number().int().min(1).max(256).default(8)
    .describe('Generations a chat worker decodes together (continuous batching); 1 serves them one after another'),
  intraOpThreads: z.coerce.number().int().min(0).max(256).default(0)
    .describe('onnxruntime intra-op threads per worker; 0: one per core'),
  /**
   * Faster when a model has the machine to itself; with HTTP work and other models sharing few
   * cores, spinning threads steal their CPU.
   */
  ortAllowSpinning: bool.default(true)
    .describe('Let idle onnxruntime threads busy-wait for the next operator'),
  /**
   * onnxruntime's own graph optimizations as it creates a session (constant folding, node fusions,
   * layout changes): `all`, onnxruntime's default, runs fastest; a lower level loads a model sooner
   * and tells a fault of onnxruntime's optimizer from one of the model's own.
   */
  ortGraphOptimizationLevel: z.enum(['disabled', 'basic', 'extended', 'all']).default('all')
    .describe("onnxruntime's graph optimizations when a session is created"),
  /** Written once beside the model's ONNX file as onnx/model.last-logits*.onnx (src/engines/onnx/graph/last-logits.ts). */
  lastPositionLogits: bool.default(true)
    .describe("Rewrite each chat model's graph to compute the prompt's logits at its last position only"),
  /**
   * An optimum-style export's concatenate, repeat-KV, transpose, MatMul, Softmax, MatMul becomes
   * GroupQueryAttention, which reads the KV cache in place: decoding at long context no longer copies
   * the cache several times per token (issue 18). Written beside the model's ONNX file
   * (onnx/model.fused-attention*.onnx); a graph it does not recognise is served as exported, with the
   * reason in the log.
   */
  fusedAttention: bool.default(true)
    .describe("Rewrite each chat model's attention into onnxruntime's GroupQueryAttention kernel"),
  /**
   * With fused attention (a float32 or float16 KV cache), steps over at least this many tokens of
   * context run through a second graph that reads the cache where it lies (plain matrix products)
   * instead of GroupQueryAttention, which copies the whole cache on every step
   * (src/engines/onnx/graph/in-place-decode.ts). Its session, loaded the first time a step reaches this
   * length, holds its own copy of the prepacked weights (docs/benchmarks.md: for a model whose
   * weights are large next to its cache, such as Qwen2.5-0.5B fp32, it never pays).
   */
  inPlaceDecodeMinContext: z.coerce.number().int().min(0).default(512)
    .describe('Context length from which decoding steps read the KV cache in place (a second graph); 0: never'),
  /**
   * `float16` stores a float32 cache (most exports, q4 and q8 included) as float16, as llama.cpp's
   * default F16 cache is: half the memory for the cache and for the prefix cache. Each layer converts
   * it back to float32 where it reads it, which costs decoding time at long context, and the keys and
   * values are rounded to float16 (on the tiny model-builder subject the logits of the first step
   * that reads it moved by 3e-5 of their range). With fused attention only.
   */
  kvCacheDtype: z.enum(['auto', 'float16', 'q8_0', 'q4_0']).default('auto')
    .describe("How chat models keep their KV cache: auto (the model's own type), float16, or llama.cpp's q8_0 and q4_0 (GGUF models only)"),
  /** Memory (attention scores, activations) stays bounded whatever the prompt's length; smaller: a little more time per prompt. */
  prefillChunkTokens: z.coerce.number().int().min(16).max(1_000_000).default(512)
    .describe('Prompt tokens one prefill forward pass takes at most (longer prompts are prefilled in chunks)'),
  /**
   * A token's KV takes layers x 2 x kvHeads x headDim x 4 bytes: 24 KiB on Qwen2.5-0.5B (1 GiB holds
   * ~43k tokens), 224 KiB on Qwen3-0.6B (~4.7k tokens); half that with a float16 cache. Size it for
   * the conversations that should stay warm (say 4 agents x 8k tokens); it is held on top of the
   * weights, per worker.
   */
  promptCacheBytes: z.coerce.number().int().min(0).default(1024 * 1024 * 1024)
    .describe('Bytes of KV each chat worker keeps for later prompts that start the same way (the prefix cache); 0: off. GGUF models reuse their sequences\' own KV instead (any value but 0: on)'),
  /**
   * The prompt cache on disk (src/cache/disk-store.ts): prefixes of at least promptCacheMinTokens
   * tokens are written here, keyed by the model's signature, the engine and its version, and read
   * back on the next prompt that starts with one after an idle unload or a restart. Not beside the
   * model (read-only, or the Hugging Face cache). Unset in the schema: the configuration fills in the
   * user's cache folder (src/config.ts); the tests leave it unset, and nothing is written.
   */
  promptCacheDir: z.string().min(1).optional()
    .describe('Folder of the prompt cache on disk (default: $XDG_CACHE_HOME/local-inference-server/prompt-cache, else ~/.cache/...)'),
  /**
   * Over the whole folder, every model and engine together; the least recently used files go first.
   * A token's state takes what promptCacheBytes' comment says (KV per token), so 8 GiB holds a few
   * agent sessions of 20k tokens on a small model.
   */
  promptCacheDiskBytes: z.coerce.number().int().min(0).default(8 * 1024 * 1024 * 1024)
    .describe('Bytes the prompt cache may take on disk (least recently used files go first); 0: nothing is written or read'),
  /** Shorter prompts prefill in about a second on a CPU: writing them costs more than it saves. */
  promptCacheMinTokens: z.coerce.number().int().min(1).default(1024)
    .describe('Tokens a prefix needs to be written to the prompt cache on disk'),
  /**
   * GGUF chat models: llama.cpp allocates every sequence's KV when the model loads (node-llama-cpp
   * 3.21.1: all sequences of a context have one size, no unified cache), so this sets the context
   * served and the layout of the sequences (src/engines/llama/layout.ts): generationBatchSize
   * sequences of the whole trained context when they fit; else as many of it as fit (at least one)
   * beside shorter sequences of what is left; a model whose one sequence does not fit is served the
   * context that does. Counted at the kvCacheDtype (q8_0 holds twice the tokens of the float16
   * default), every layer in full (a sliding-window model gets llama.cpp's full-size cache, whose
   * prefix reuse is exact). auto: a quarter of the machine's memory, which leaves the weights, the
   * OS and other models the rest (24 GiB: 6 GiB, a 32k context of an 8B model at float16). Per
   * worker; a model's manifest.json `kvBudgetBytes` wins. With a GPU, the KV lives in its memory:
   * set it to what the GPU has left beside the weights.
   */
  kvBudgetBytes: z.union([z.literal('auto'), z.coerce.number().int().min(0)]).default('auto')
    .describe('GGUF chat models: bytes of KV cache the sequences of a worker may take (sets the context served and how many sequences get all of it); auto: a quarter of the machine\'s memory'),
  /**
   * node-llama-cpp loads the prebuilt llama.cpp binary for the backend named (its npm packages:
   * CPU, CUDA, Vulkan, Metal); auto: the best one that loads on this machine. One named but absent
   * stops the start with the reason.
   */
  gpu: z.enum(['false', 'auto', 'cuda', 'vulkan', 'metal']).default('false')
    .describe('GGUF models: where llama.cpp runs them: false (CPU), auto (the best GPU backend present), cuda, vulkan or metal'),
  gpuLayers: z.union([z.literal('auto'), z.coerce.number().int().min(0).max(10_000)]).default('auto')
    .describe('GGUF models with a GPU: layers offloaded to it; auto: as many as fit, 0: none'),
  flashAttention: z.enum(['auto', 'on', 'off']).default('auto')
    .describe("GGUF models: llama.cpp's flash attention; auto: where the model and backend support it"),
  /**
   * A GGUF model's workers in a child process of their own (src/pool/process-pool.ts): a crash in
   * llama.cpp, or a worker thread torn down under one of its calls, then ends that process, not the
   * server. Off, they are worker threads of the server's, as ONNX models' are: one process less
   * (tens of MiB) and one message hop less per token, and a native crash ends the server.
   */
  ggufProcess: bool.default(true)
    .describe('GGUF models run in a child process of their own, so a crash in llama.cpp cannot end the server; false: in worker threads of the server (less memory, a native crash ends the server)'),
});

export type EngineSettings = Readonly<z.infer<typeof engineSettingsSchema>>;

/** How chat models keep their KV cache (engineSettingsSchema.kvCacheDtype). */
export type KvCacheDtype = EngineSettings['kvCacheDtype'];

/** The settings the server ships with: every field at its default. */
export const ENGINE_DEFAULTS: EngineSettings = Object.freeze(engineSettingsSchema.parse({}));

const ENGINE_FIELDS = Object.keys(engineSettingsSchema.shape) as Array<keyof EngineSettings>;

/** The engine's settings out of a parsed configuration (which holds every one of them). */
export function engineSettingsOf(config: EngineSettings): EngineSettings {
  return Object.freeze(Object.fromEntries(ENGINE_FIELDS.map((field) => [field, config[field]])) as unknown as EngineSettings);
}

/**
 * The one configuration schema. Parsed once at boot from (highest precedence first) command-line
 * flags, environment variables and an optional JSON config file, then frozen and passed down.
 * Nothing else in the server reads process.env or argv.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { parseDuration } from './core/duration.js';
import { defaultHubCacheDir } from './models/hf-cache.js';
import type { ModelSourcesOptions } from './models/sources.js';

const csv = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : v),
  z.array(z.string().min(1)),
);
const duration = z.preprocess((v) => (typeof v === 'string' ? (parseDuration(v) ?? v) : v), z.number({ message: 'expected a duration such as 5m, 30s, 0 or -1' }).int());
const durationMap = z.preprocess((v) => {
  if (Array.isArray(v)) v = v.join(',');
  if (typeof v !== 'string') return v;
  // "tiny-qwen3-random=10m,glove-sif-100d=-1"
  return Object.fromEntries(v.split(',').filter(Boolean).map((pair) => {
    const at = pair.lastIndexOf('=');
    const text = pair.slice(at + 1).trim();
    return [pair.slice(0, at).trim(), parseDuration(text) ?? text];
  }));
}, z.record(z.string().min(1), z.number().int()));
const bool = z.preprocess((v) => (typeof v === 'string' ? /^(1|true|yes|on)$/i.test(v) : v), z.boolean());
const aliasMap = z.preprocess((v) => {
  if (Array.isArray(v)) v = v.join(',');
  if (typeof v !== 'string') return v;
  // "claude-sonnet-4=tiny-qwen3-random,gpt-x=other"
  return Object.fromEntries(v.split(',').filter(Boolean).map((pair) => pair.split('=').map((s) => s.trim())));
}, z.record(z.string().min(1), z.string().min(1)));

export const configSchema = z.object({
  /** Interface to bind. Default loopback: nothing outside this machine can connect. */
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Where model folders live (bundled ones are built here). */
  modelsDir: z.string().min(1).default('models'),
  /**
   * Also serve the ONNX models in the Hugging Face cache, in place, as `org/name` (what Python tools
   * and `models pull --hf-cache` download). Off: models/ only.
   */
  hfCache: bool.default(true),
  /**
   * The Hugging Face cache folder. Default as the Hugging Face tools resolve it: HF_HUB_CACHE, else
   * $HF_HOME/hub, else ~/.cache/huggingface/hub (see defaultHubCacheDir).
   */
  hfHubCache: z.string().min(1).optional(),
  /** Accepted API keys. Empty: no authentication, and the server keeps to loopback unless allowUnauthenticated. */
  apiKeys: csv.default([]),
  /** Bind a non-loopback host without API keys. Anyone who can reach the port can use the models. */
  allowUnauthenticated: bool.default(false),
  /** Worker threads per model unless its manifest says otherwise; each holds a full copy of the weights. */
  workersPerModel: z.coerce.number().int().min(1).max(64).default(1),
  /** Generations a chat worker decodes together (continuous batching); 1 serves them one after another. */
  generationBatchSize: z.coerce.number().int().min(1).max(256).default(8),
  /** onnxruntime intra-op threads per worker; 0 lets onnxruntime use one per core. */
  intraOpThreads: z.coerce.number().int().min(0).max(256).default(0),
  /**
   * Let idle onnxruntime threads busy-wait for work. Faster when a model has the machine to
   * itself; with HTTP work and other models sharing few cores, spinning threads steal their CPU.
   */
  ortAllowSpinning: bool.default(true),
  /**
   * Rewrite each chat model's graph so the prompt's logits are computed for its last position only
   * (written once beside the model's ONNX file as onnx/model.last-logits*.onnx). Off: the export as it is.
   */
  lastPositionLogits: bool.default(true),
  /**
   * Rewrite each chat model's attention (an optimum-style export's concatenate, repeat-KV, transpose,
   * MatMul, Softmax, MatMul) into onnxruntime's GroupQueryAttention kernel, which reads the KV cache in
   * place: decoding at long context no longer copies the cache several times per token (issue 18).
   * Written beside the model's ONNX file (onnx/model.fused-attention*.onnx); a graph it does not
   * recognise is served as exported, with the reason in the log. Off: the export's own attention.
   */
  fusedAttention: bool.default(true),
  /**
   * With fused attention (a float32 or float16 KV cache), decoding steps over at least this many tokens of
   * context run through a second graph that reads the cache where it lies (plain matrix products)
   * instead of GroupQueryAttention, which copies the whole cache on every step
   * (src/models/onnx/in-place-decode.ts). Its session, loaded the first time a step reaches this
   * length, holds its own copy of the prepacked weights. 0: never.
   */
  inPlaceDecodeMinContext: z.coerce.number().int().min(0).default(512),
  /**
   * How chat models keep their KV cache. `auto`: in the graph's own type. `float16`: a float32 cache
   * (most exports, q4 and q8 included) is stored as float16, as llama.cpp's default F16 cache is: half
   * the memory for the cache and for the prefix cache, and no cache-sized copy held through prefill
   * passes; each layer converts its past to float32 as it reads it, which costs decoding time at long
   * context, and the keys and values are rounded to float16 (on the tiny model-builder subject the
   * logits of the first step that reads it moved by 3e-5 of their range).
   * With fused attention only.
   */
  kvCacheDtype: z.enum(['auto', 'float16']).default('auto'),
  /**
   * Prompt tokens one prefill forward pass takes at most; a longer prompt is prefilled in chunks, so
   * memory (attention scores, activations) stays bounded whatever its length. Smaller: less memory,
   * a little more time per prompt.
   */
  prefillChunkTokens: z.coerce.number().int().min(16).max(1_000_000).default(512),
  /**
   * Bytes of KV each chat worker keeps for reuse by later prompts that start the same way (the
   * prefix cache, src/worker/decode/prefix-cache.ts); 0 turns the cache off. A token's KV takes
   * layers x 2 x kvHeads x headDim x 4 bytes: 24 KiB on Qwen2.5-0.5B (1 GiB holds ~43k tokens),
   * 224 KiB on Qwen3-0.6B (~4.7k tokens); half that with a float16 cache (q4f16 exports, or
   * KV_CACHE_DTYPE=float16). Size it for the conversations that should stay warm (say
   * 4 agents x 8k tokens); it is held on top of the weights, per worker.
   */
  promptCacheBytes: z.coerce.number().int().min(0).default(1024 * 1024 * 1024),
  /** Requests that may wait per model before new ones are refused as overloaded (529 / 429). */
  maxQueue: z.coerce.number().int().min(0).max(100_000).default(64),
  /** Deadline of one generation or embedding batch in ms (0: none); past it: 504 timeout_error and the worker is freed. */
  requestTimeoutMs: z.coerce.number().int().min(0).default(300_000),
  /** On SIGTERM/SIGINT: how long in-flight requests (streams included) may take to finish before the process exits. */
  shutdownGraceMs: z.coerce.number().int().min(0).default(30_000),
  /** Largest request body in bytes; larger gets 413. Embedding batches of 2048 inputs need a few MB. */
  bodyLimit: z.coerce.number().int().min(1024).default(8 * 1024 * 1024),
  /** Extra model names, e.g. a model id a client insists on: {"alias": "model-id"}. */
  modelAliases: aliasMap.default({}),
  /** Gather concurrent embedding requests into shared forward passes (off: one task per request). */
  embedBatching: bool.default(true),
  /** Padded tokens per embedding forward pass (rows x longest row); also caps one gathered task. */
  embedBatchTokens: z.coerce.number().int().min(16).max(1_000_000).default(16_384),
  /** How long an embedding request may wait for others while a worker is idle. */
  embedBatchWaitMs: z.coerce.number().min(0).max(1000).default(0),
  /** Cut embedding inputs longer than the model's context instead of answering 400 (usage then counts what was embedded). */
  embedTruncate: bool.default(false),
  /** A client must send its request headers within this time, or it is answered 408 and disconnected. */
  headersTimeoutMs: z.coerce.number().int().min(100).default(10_000),
  /** A client must send its whole request, body included, within this time (from its first byte), or it is answered 408 and disconnected. Must exceed headersTimeoutMs. */
  bodyTimeoutMs: z.coerce.number().int().min(100).default(60_000),
  /** An idle keep-alive connection is closed after this time. */
  keepAliveTimeoutMs: z.coerce.number().int().min(100).default(72_000),
  /** Open connections the server holds at once; one more is answered 503 and closed rather than queued. */
  maxConnections: z.coerce.number().int().min(1).max(1_000_000).default(1024),
  /** Bytes a streamed reply may have waiting for a client that does not read; past it the generation stops and the connection is dropped. */
  streamBufferLimit: z.coerce.number().int().min(16 * 1024).default(4 * 1024 * 1024),
  /** Interval of `ping` events on an open Messages stream (keeps proxies from timing it out). */
  pingIntervalMs: z.coerce.number().int().min(100).max(600_000).default(10_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Models loaded at start and kept loaded (`*`: all). Any other model is loaded on its first request
   * (which waits for it) and unloaded after keepAlive without requests. (Ollama: OLLAMA_KEEP_ALIVE=-1
   * for a model; LM Studio: a model loaded by hand rather than just-in-time.)
   */
  preload: csv.default([]),
  /** Idle time after which a model is unloaded: 5m, 30s, 0 (right after each request), -1 (never). Ollama's OLLAMA_KEEP_ALIVE, LM Studio's idle TTL. */
  keepAlive: duration.default(5 * 60_000),
  /** Per-model keep-alive: id=5m,id2=-1. */
  modelKeepAlive: durationMap.default({}),
  /** Most models loaded at once (0: no limit); loading another unloads the least recently used idle one. Ollama's OLLAMA_MAX_LOADED_MODELS. */
  maxLoadedModels: z.coerce.number().int().min(0).default(0),
  /** How long a request waits for its model to load before it is answered 503/529 (0: no bound). */
  modelLoadTimeoutMs: z.coerce.number().int().min(0).default(120_000),
  /** How often the models folder is read again for added, removed or replaced models (0: only at start). */
  modelsRescanMs: z.coerce.number().int().min(0).default(2_000),
  /** Build missing bundled models at start (they are also built on npm install). */
  buildBundledModels: bool.default(true),
}).refine((c) => c.bodyTimeoutMs > c.headersTimeoutMs, { message: 'bodyTimeoutMs must be larger than headersTimeoutMs (it counts from the first byte, headers included)', path: ['bodyTimeoutMs'] });

export type Config = Readonly<z.infer<typeof configSchema>>;

type Field = keyof z.infer<typeof configSchema>;
const FIELDS = Object.keys(configSchema.shape) as Field[];

/** Every field has an environment variable: its name in SCREAMING_SNAKE_CASE (modelsDir -> MODELS_DIR). */
const envName = (field: Field) => field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/**
 * Flags are the kebab-case field names (modelsDir -> --models-dir) except where listed here:
 * repeatable flags with a singular name, and fields with no flag (set by environment or file only).
 */
const FLAG_EXCEPTIONS: Partial<Record<Field, { flag: string; multiple: true } | null>> = {
  apiKeys: { flag: 'api-key', multiple: true },
  modelAliases: { flag: 'alias', multiple: true },
  preload: { flag: 'preload', multiple: true },
  modelKeepAlive: { flag: 'model-keep-alive', multiple: true },
  buildBundledModels: null,
};
const BOOLEAN_FLAGS: ReadonlySet<Field> = new Set(['allowUnauthenticated', 'embedTruncate']);

const flagOf = (field: Field) => {
  const exception = FLAG_EXCEPTIONS[field];
  if (exception === null) return undefined;
  return { name: exception?.flag ?? field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), multiple: exception?.multiple ?? false };
};

const FLAGS = {
  config: { type: 'string' as const },
  help: { type: 'boolean' as const },
  ...Object.fromEntries(
    FIELDS.flatMap((field) => {
      const flag = flagOf(field);
      return flag ? [[flag.name, { type: BOOLEAN_FLAGS.has(field) ? ('boolean' as const) : ('string' as const), multiple: flag.multiple }]] : [];
    }),
  ),
};

export const USAGE = `Usage: npm start -- [--host H] [--port P] [--models-dir DIR] [--api-key KEY ...]
  [--allow-unauthenticated] [--workers-per-model N] [--generation-batch-size N] [--intra-op-threads N]
  [--ort-allow-spinning true|false] [--last-position-logits true|false] [--fused-attention true|false] [--in-place-decode-min-context N] [--prefill-chunk-tokens N] [--prompt-cache-bytes BYTES] [--max-queue N]
  [--body-limit BYTES] [--request-timeout-ms MS] [--shutdown-grace-ms MS] [--alias NAME=MODEL ...] [--ping-interval-ms MS]
  [--headers-timeout-ms MS] [--body-timeout-ms MS] [--keep-alive-timeout-ms MS] [--max-connections N] [--stream-buffer-limit BYTES]
  [--hf-cache true|false] [--hf-hub-cache DIR] [--embed-batching on|off] [--embed-batch-tokens N] [--embed-batch-wait-ms MS] [--embed-truncate] [--log-level LEVEL] [--config FILE.json]
  [--preload ID|* ...] [--keep-alive 5m|0|-1] [--model-keep-alive ID=DURATION ...] [--max-loaded-models N] [--model-load-timeout-ms MS] [--models-rescan-ms MS]
Environment: ${FIELDS.map(envName).join(', ')}, HF_HOME, CONFIG_FILE.`;

export class ConfigError extends Error {}

/** Parses configuration from argv, an environment object and an optional config file. */
export function loadConfig(argv: string[], environment: Record<string, string | undefined>): Config & { help: boolean } {
  const { values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }) as {
    values: Record<string, string | boolean | string[] | undefined>;
  };
  const file = (values.config as string | undefined) ?? environment.CONFIG_FILE;
  const fromFile = file ? (JSON.parse(fs.readFileSync(path.resolve(file), 'utf8')) as Record<string, unknown>) : {};
  const fromEnv: Record<string, unknown> = {};
  const fromFlags: Record<string, unknown> = {};
  for (const field of FIELDS) {
    const env = environment[envName(field)];
    if (env !== undefined && env !== '') fromEnv[field] = env;
    const flag = flagOf(field);
    if (flag && values[flag.name] !== undefined) fromFlags[field] = values[flag.name];
  }
  const merged = { ...fromFile, ...fromEnv, ...fromFlags };
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const hfHubCache = parsed.data.hfHubCache ?? defaultHubCacheDir(environment, os.homedir());
  return Object.freeze({ ...parsed.data, hfHubCache, help: values.help === true });
}

/** Where models are found (models/ and, unless turned off, the Hugging Face cache): what main.ts scans, at start and on a rescan. */
export function modelSources(config: Pick<Config, 'modelsDir' | 'hfCache' | 'hfHubCache' | 'workersPerModel'>): ModelSourcesOptions {
  return {
    modelsDir: path.resolve(config.modelsDir),
    hfCacheDir: config.hfCache && config.hfHubCache ? path.resolve(config.hfHubCache) : null,
    defaultPoolSize: config.workersPerModel,
  };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

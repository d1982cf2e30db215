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
import { bool, engineSettingsSchema } from './core/engine-settings.js';
import { defaultHubCacheDir } from './models/hf-cache.js';
import { imageSettingsSchema } from './http/shared/image-settings.js';
import { defaultPromptCacheDir } from './cache/cache-key.js';
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
const aliasMap = z.preprocess((v) => {
  if (Array.isArray(v)) v = v.join(',');
  if (typeof v !== 'string') return v;
  // "claude-sonnet-4=tiny-qwen3-random,gpt-x=other"
  return Object.fromEntries(v.split(',').filter(Boolean).map((pair) => pair.split('=').map((s) => s.trim())));
}, z.record(z.string().min(1), z.string().min(1)));

/**
 * Every field has a default and a one-line meaning (`.describe`), which `--help` prints; the comments
 * say the why and the trade-offs. The engine's fields come whole from src/core/engine-settings.ts.
 */
export const configSchema = z.object({
  /** Loopback by default: nothing outside this machine can connect. */
  host: z.string().min(1).default('127.0.0.1').describe('Interface to listen on (a non-loopback host needs API keys or --allow-unauthenticated)'),
  port: z.coerce.number().int().min(0).max(65535).default(8080).describe('TCP port to listen on (0: any free port)'),
  modelsDir: z.string().min(1).default('models').describe('Folder of model folders (npm install and npm run build:models build the bundled ones; the server only checks them)'),
  /** What Python tools and `models pull --hf-cache` download; served in place, as `org/name`. */
  hfCache: bool.default(true).describe('Also serve the ONNX models in the Hugging Face cache, in place, as org/name'),
  /** As the Hugging Face tools resolve it (see defaultHubCacheDir). */
  hfHubCache: z.string().min(1).optional().describe('The Hugging Face cache folder (default: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)'),
  apiKeys: csv.default([]).describe('Accepted API keys (Authorization: Bearer; the Messages routes also take x-api-key); none: no authentication, and loopback only unless --allow-unauthenticated'),
  /** Anyone who can reach the port can use the models. */
  allowUnauthenticated: bool.default(false).describe('Listen on a non-loopback host without API keys'),
  /** Each worker holds a full copy of the weights. */
  workersPerModel: z.coerce.number().int().min(1).max(64).default(1).describe("Worker threads per model unless its manifest says otherwise"),
  ...engineSettingsSchema.shape,
  maxQueue: z.coerce.number().int().min(0).max(100_000).default(64).describe('Requests that may wait per model before new ones are refused as overloaded (529 / 429)'),
  requestTimeoutMs: z.coerce.number().int().min(0).default(300_000).describe('Deadline of one generation or embedding batch in ms, then 504 and the worker is freed (0: none)'),
  shutdownGraceMs: z.coerce.number().int().min(0).default(30_000).describe('On SIGTERM/SIGINT, how long in-flight requests may take to finish before the process exits'),
  /** Embedding batches of 2048 inputs need a few MB. */
  bodyLimit: z.coerce.number().int().min(1024).default(8 * 1024 * 1024).describe('Largest request body in bytes; larger gets 413'),
  /** An alias with `*` is a pattern (`claude-haiku-*`). */
  modelAliases: aliasMap.default({}).describe('Extra model names, NAME=MODEL (e.g. a model id a client insists on)'),
  embedBatching: bool.default(true).describe('Gather concurrent embedding requests into shared forward passes'),
  embedBatchTokens: z.coerce.number().int().min(16).max(1_000_000).default(16_384).describe('Padded tokens per embedding forward pass (rows x longest row); also caps one gathered task'),
  embedBatchWaitMs: z.coerce.number().min(0).max(1000).default(0).describe('How long an embedding request may wait for others while a worker is idle'),
  /** Usage then counts what was embedded. */
  embedTruncate: bool.default(false).describe("Cut embedding inputs longer than the model's context instead of answering 400"),
  // TEI serves one model and its bodies name none; here a body may name one, else this setting, else
  // the only embedding model installed (several and no setting: a 400 that says to set this).
  teiModel: z.string().min(1).optional().describe("Model that TEI's routes (/embed, /rerank with texts, /tokenize with inputs, /decode, /info) and model-less rerank and tokenize bodies serve (default: the only embedding model)"),
  headersTimeoutMs: z.coerce.number().int().min(100).default(10_000).describe('A client must send its request headers within this time, or gets 408 and is disconnected'),
  bodyTimeoutMs: z.coerce.number().int().min(100).default(60_000).describe('A client must send its whole request within this time from its first byte (must exceed headers-timeout-ms)'),
  keepAliveTimeoutMs: z.coerce.number().int().min(100).default(72_000).describe('An idle keep-alive connection is closed after this time'),
  maxConnections: z.coerce.number().int().min(1).max(1_000_000).default(1024).describe('Open connections held at once; one more gets 503 and is closed'),
  ...imageSettingsSchema.shape,
  streamBufferLimit: z.coerce.number().int().min(16 * 1024).default(4 * 1024 * 1024).describe('Bytes a stream may have waiting for a client that does not read, then the generation stops'),
  pingIntervalMs: z.coerce.number().int().min(100).max(600_000).default(10_000).describe('Interval of ping events on an open Messages stream (keeps proxies from timing it out)'),
  /** In this process's memory: a restart forgets them, and each replica keeps its own. */
  responsesStoreEntries: z.coerce.number().int().min(0).max(1_000_000).default(1000).describe('Responses kept for previous_response_id and GET /v1/responses/{id} (the oldest go first; 0: none)'),
  responsesStoreMaxAgeMs: z.coerce.number().int().min(0).default(24 * 3_600_000).describe('How long a stored response is kept (0: no age limit)'),
  /**
   * It seals the thinking text a reasoning item's encrypted_content carries: tampering is detected,
   * but the text is not hidden from the user (it is only encoded). Set the same key on every replica
   * behind a balancer so each reads what another wrote.
   */
  responsesReasoningKey: z.string().min(16).optional().describe("Key for reasoning items' encrypted_content (default: one drawn at start, readable by this process only)"),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('Log level of the JSON log on stdout'),
  /** (Ollama: OLLAMA_KEEP_ALIVE=-1 for a model; LM Studio: a model loaded by hand rather than just-in-time.) */
  preload: csv.default([]).describe('Models loaded at start and kept loaded (* : all); others load on their first request'),
  /** Ollama's OLLAMA_KEEP_ALIVE, LM Studio's idle TTL. */
  keepAlive: duration.default(5 * 60_000).describe('Idle time after which a model is unloaded: 5m, 30s, 0 (after each request), -1 (never)'),
  modelKeepAlive: durationMap.default({}).describe('Per-model keep-alive, ID=DURATION'),
  /** Ollama's OLLAMA_MAX_LOADED_MODELS. */
  maxLoadedModels: z.coerce.number().int().min(0).default(0).describe('Most models loaded at once; loading another unloads the least recently used idle one (0: no limit)'),
  modelLoadTimeoutMs: z.coerce.number().int().min(0).default(120_000).describe('How long a request waits for its model to load before it is answered 503/529 (0: no bound)'),
  /**
   * The playground's Load and Unload buttons use them. Anyone holding an API key can then unload a
   * model another client is about to use (never one in use: that is refused); off, they are not served.
   */
  modelAdmin: bool.default(true).describe('Serve POST /models/load and /models/unload (also under /v1/), behind the API keys, to load or unload a model on request; false: not served (404)'),
  modelsRescanMs: z.coerce.number().int().min(0).default(2_000).describe('How often the models folder is read again for added, removed or replaced models (0: only at start)'),
}).refine((c) => c.bodyTimeoutMs > c.headersTimeoutMs, { message: 'bodyTimeoutMs must be larger than headersTimeoutMs (it counts from the first byte, headers included)', path: ['bodyTimeoutMs'] });

export type Config = Readonly<z.infer<typeof configSchema>>;

type Field = keyof z.infer<typeof configSchema>;
const FIELDS = Object.keys(configSchema.shape) as Field[];

/** Every field has an environment variable: its name in SCREAMING_SNAKE_CASE (modelsDir -> MODELS_DIR). */
const envName = (field: Field) => field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/** Flags are the kebab-case field names (modelsDir -> --models-dir) except the repeatable ones listed here, named in the singular. */
const FLAG_EXCEPTIONS: Partial<Record<Field, { flag: string; multiple: true }>> = {
  apiKeys: { flag: 'api-key', multiple: true },
  modelAliases: { flag: 'alias', multiple: true },
  preload: { flag: 'preload', multiple: true },
  modelKeepAlive: { flag: 'model-keep-alive', multiple: true },
};
const BOOLEAN_FLAGS: ReadonlySet<Field> = new Set(['allowUnauthenticated', 'embedTruncate', 'imageUrlFetch', 'imageUrlPrivate']);

const flagOf = (field: Field) => {
  const exception = FLAG_EXCEPTIONS[field];
  return { name: exception?.flag ?? field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), multiple: exception?.multiple ?? false };
};

const FLAGS = {
  config: { type: 'string' as const },
  help: { type: 'boolean' as const },
  ...Object.fromEntries(
    FIELDS.map((field) => {
      const flag = flagOf(field);
      return [flag.name, { type: BOOLEAN_FLAGS.has(field) ? ('boolean' as const) : ('string' as const), multiple: flag.multiple }];
    }),
  ),
};

/** What a flag takes, for the help text: the values of an enum, a boolean's word, or a kind of value. */
function valueHint(field: Field, schema: z.ZodType): string {
  if (BOOLEAN_FLAGS.has(field)) return '';
  const inner = unwrap(schema);
  if (inner instanceof z.ZodEnum) return ` ${(inner.options as string[]).join('|')}`;
  if (inner instanceof z.ZodBoolean) return ' true|false';
  if (VALUE_HINTS[field]) return ` ${VALUE_HINTS[field]}`;
  if (/Ms$/.test(field)) return ' MS';
  if (/Bytes$|Limit$/.test(field)) return ' BYTES';
  if (inner instanceof z.ZodNumber) return ' N';
  return ' VALUE';
}

/** What a flag whose value is a string means by it. */
const VALUE_HINTS: Partial<Record<Field, string>> = {
  host: 'HOST', modelsDir: 'DIR', hfHubCache: 'DIR', promptCacheDir: 'DIR', apiKeys: 'KEY', modelAliases: 'NAME=MODEL', preload: 'ID|*',
  keepAlive: '5m|30s|0|-1', modelKeepAlive: 'ID=DURATION',
};

/** The schema under a field's default, optional and preprocess wrappers. */
function unwrap(schema: z.ZodType): z.ZodType {
  const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; out?: z.ZodType } }).def;
  if (def.innerType) return unwrap(def.innerType);
  if (def.type === 'pipe' && def.out) return unwrap(def.out);
  return schema;
}

/** A field's default as a person writes it on the command line. */
function defaultText(field: Field): string {
  const value = DEFAULTS[field];
  if (value === undefined) return '';
  if (Array.isArray(value)) return value.length ? value.join(',') : '(none)';
  if (typeof value === 'object' && value !== null) return Object.keys(value).length ? JSON.stringify(value) : '(none)';
  if (field === 'keepAlive') return `${(value as number) / 60_000}m`;
  return String(value);
}

const DEFAULTS = configSchema.parse({}) as Record<Field, unknown>;

/** Every setting as --help and docs/configuration.md show it: its flag, variable, default and meaning, from the schema. */
export function settingRows(): Array<{ flag: string; env: string; default: string; meaning: string }> {
  return FIELDS.map((field) => {
    const shape = configSchema.shape[field] as z.ZodType;
    const flag = flagOf(field);
    return {
      flag: `--${flag.name}${valueHint(field, shape)}${flag.multiple ? ' ...' : ''}`,
      env: envName(field),
      default: defaultText(field),
      meaning: shape.description ?? '',
    };
  });
}

/**
 * The `--help` text, from the schema: every flag with what it takes, its default and its meaning,
 * then its environment variable.
 */
export function usage(): string {
  const lines = ['Usage: npm start -- [flags]    (or: node dist/src/main.js [flags])', '', 'Flags (each also an environment variable, shown after it; flags win over the environment, which wins over --config FILE.json):'];
  for (const row of settingRows()) {
    lines.push(`  ${row.flag}`, `      ${row.meaning}${row.default ? ` [default: ${row.default}]` : ''}  (${row.env})`);
  }
  lines.push('  --config FILE.json', '      A JSON file of settings by field name (camelCase)  (CONFIG_FILE)', '  --help', '      This text');
  return lines.join('\n');
}

/**
 * node:util parseArgs refuses a value that starts with a dash (`--keep-alive -1`) as ambiguous; a
 * flag that takes a value is given the next argument as its value whatever it starts with.
 */
function joinNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    const option = arg.startsWith('--') && !arg.includes('=') ? (FLAGS as Record<string, { type: string }>)[arg.slice(2)] : undefined;
    if (option?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

export class ConfigError extends Error {}

/** Parses configuration from argv, an environment object and an optional config file. */
export function loadConfig(argv: string[], environment: Record<string, string | undefined>): Config & { help: boolean } {
  const { values } = parseArgs({ args: joinNegativeValues(argv), options: FLAGS, strict: true, allowPositionals: false }) as {
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
    if (values[flag.name] !== undefined) fromFlags[field] = values[flag.name];
  }
  const merged = { ...fromFile, ...fromEnv, ...fromFlags };
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    throw new ConfigError(`invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const hfHubCache = parsed.data.hfHubCache ?? defaultHubCacheDir(environment, os.homedir());
  const promptCacheDir = parsed.data.promptCacheDir ?? defaultPromptCacheDir(environment, os.homedir());
  return Object.freeze({ ...parsed.data, hfHubCache, promptCacheDir, help: values.help === true });
}

/** Where models are found (models/ and, unless turned off, the Hugging Face cache): what main.ts scans, at start and on a rescan. */
export function modelSources(config: Pick<Config, 'modelsDir' | 'hfCache' | 'hfHubCache' | 'workersPerModel' | 'kvBudgetBytes' | 'kvCacheDtype'>): ModelSourcesOptions {
  return {
    modelsDir: path.resolve(config.modelsDir),
    hfCacheDir: config.hfCache && config.hfHubCache ? path.resolve(config.hfHubCache) : null,
    defaultPoolSize: config.workersPerModel,
    kv: { kvBudgetBytes: config.kvBudgetBytes, kvCacheDtype: config.kvCacheDtype },
  };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

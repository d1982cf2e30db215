/**
 * The `models` command: fetch models on a machine with a network, carry them to one without.
 *
 *   models pull <owner/name> [--revision main] [--dtype q8|q4|fp16|fp32|...] [--id ID | --hf-cache] [--hub-url URL]
 *   models pull <owner/name:QUANT> | <owner/name> --quant QUANT  [...]   (one quantization of a GGUF repository)
 *   models list
 *   models rm <id>
 *   models pack <id...> -o FILE.tar
 *   models unpack FILE.tar [--force]
 *   models ps [--url http://127.0.0.1:8080] [--all]      (what a running server has loaded)
 *
 * Common flags: --models-dir DIR (default: models, or MODELS_DIR); --hf-hub-cache DIR (default:
 * HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub). The hub is --hub-url (or --endpoint), else
 * HF_ENDPOINT, else https://huggingface.co; gated repositories need HF_TOKEN.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DTYPES, type Dtype } from '../models/manifest.js';
import { defaultHubCacheDir, repoFolderName } from '../models/hf-cache.js';
import { modelFileBytes } from '../models/signature.js';
import { scanModelSources } from '../models/sources.js';
import { formatBytes, listFiles } from '../models/hub/checksums.js';
import { pack, unpack } from '../models/hub/pack.js';
import { ggufFiles, removeModel } from '../models/hub/local-models.js';
import { pull } from '../models/hub/pull.js';
import { ps } from './ps.js';
import { table } from './table.js';

const USAGE = `Usage:
  models pull <owner/name> [--revision REV] [--dtype ${DTYPES.join('|')}] [--id ID | --hf-cache] [--hub-url URL]
      an ONNX export; --hf-cache: into the Hugging Face cache (shared with Python tools; served as owner/name)
  models pull <owner/name:QUANT> [--revision REV] [--id ID | --hf-cache] [--hub-url URL]
      one quantization of a GGUF repository (QUANT as in its file names: Q4_K_M, Q8_0, IQ4_XS, F16...;
      also spelled <owner/name> --quant QUANT), split parts and all, into models/<name>/ beside the
      quantizations already there (a folder of one serves <name>, of several <name>:QUANT each)
  models list                      models/ and the Hugging Face cache
      DTYPE: the ONNX dtype, or a GGUF model's quantization; WEIGHTS: bytes of the ONNX graph and
      its external data files, or of the GGUF file and its split parts (what a load reads; the
      same figure as models ps and /metrics' model_loaded_bytes); FOLDER: every file of the model
      (tokenizer and config too: what pack carries; for a GGUF model its parts and the manifest
      and tokenizer files beside them)
  models rm <id>                   an ONNX model's folder; a GGUF model's files only (its folder
                                   too when nothing else is left in it)
  models pack <id...> -o FILE.tar  model folders, or models by id (a GGUF model: its files only)
  models unpack FILE.tar [--force] refuses a folder that exists (--force replaces it); a GGUF
                                   quantization joins a folder holding other ones
  models ps [--url URL] [--all]    what a running server has loaded (API_KEYS' first key is sent)
Flags for every command: --models-dir DIR (default: models, or MODELS_DIR),
  --hf-hub-cache DIR (default: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub)
Environment: HF_ENDPOINT (hub or mirror, default https://huggingface.co; --hub-url overrides),
  HF_TOKEN (gated repositories), HF_HOME, HF_HUB_CACHE`;

class UsageError extends Error {}

const BAR_WIDTH = 24;

/** One progress line; on a terminal with a bar and the transfer rate. */
export function progressLine(o: { file: string; received: number; total: number | null; bytesPerSecond?: number; bar: boolean }): string {
  const pct = o.total ? Math.floor((o.received / o.total) * 100) : null;
  const sizes = `${formatBytes(o.received)}${o.total ? ` / ${formatBytes(o.total)}` : ''}`;
  if (!o.bar) return `  ${o.file}  ${sizes}${pct !== null ? `  ${pct}%` : ''}`;
  const filled = pct === null ? 0 : Math.min(BAR_WIDTH, Math.round((pct / 100) * BAR_WIDTH));
  const rate = o.bytesPerSecond !== undefined ? `  ${formatBytes(o.bytesPerSecond)}/s` : '';
  return `  ${o.file}  [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${pct !== null ? `${String(pct).padStart(3)}%  ` : ''}${sizes}${rate}`;
}

function progressPrinter() {
  const tty = process.stderr.isTTY;
  const lastStep = new Map<string, number>();
  const started = new Map<string, { at: number; from: number }>();
  return (file: string, received: number, total: number | null) => {
    if (tty) {
      if (!started.has(file)) started.set(file, { at: Date.now(), from: received });
      // The rate counts this run's bytes only (a resumed file starts part-way).
      const { at, from } = started.get(file)!;
      const elapsed = Date.now() - at;
      const line = progressLine({ file, received, total, bar: true, ...(elapsed > 0 ? { bytesPerSecond: ((received - from) / elapsed) * 1000 } : {}) });
      process.stderr.write(`\r${line}\x1b[K${total !== null && received >= total ? '\n' : ''}`);
      return;
    }
    // Not a terminal: a line at every 25%.
    const pct = total ? Math.floor((received / total) * 100) : null;
    const step = pct === null ? 0 : Math.floor(pct / 25);
    if (lastStep.get(file) !== step) {
      lastStep.set(file, step);
      process.stderr.write(`${progressLine({ file, received, total, bar: false })}\n`);
    }
  };
}

export async function run(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'models-dir': { type: 'string' },
      revision: { type: 'string', default: 'main' },
      dtype: { type: 'string' },
      quant: { type: 'string' },
      id: { type: 'string' },
      endpoint: { type: 'string' },
      'hub-url': { type: 'string' },
      'hf-cache': { type: 'boolean', default: false },
      'hf-hub-cache': { type: 'string' },
      output: { type: 'string', short: 'o' },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
      url: { type: 'string' },
      all: { type: 'boolean', default: false },
    },
  });
  const [command, ...args] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const modelsDir = path.resolve(values['models-dir'] ?? env.MODELS_DIR ?? 'models');
  const hfCacheDir = path.resolve(values['hf-hub-cache'] ?? defaultHubCacheDir(env, os.homedir()));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  switch (command) {
    case 'pull': {
      if (args.length !== 1) throw new UsageError('pull takes one repository, e.g. onnx-community/Qwen2.5-0.5B-Instruct or Qwen/Qwen3-0.6B-GGUF:Q8_0');
      if (values.dtype && !(DTYPES as string[]).includes(values.dtype)) throw new UsageError(`--dtype must be one of ${DTYPES.join(', ')}`);
      await pull({
        repo: args[0]!,
        revision: values.revision!,
        dtype: values.dtype as Dtype | undefined,
        quant: values.quant,
        id: values.id,
        ...(values['hf-cache'] ? { hfCacheDir } : {}),
        endpoint: values['hub-url'] ?? values.endpoint ?? env.HF_ENDPOINT ?? 'https://huggingface.co',
        token: env.HF_TOKEN,
        modelsDir,
        onProgress: progressPrinter(),
        log,
      });
      return 0;
    }
    case 'list': {
      const { models, skipped, notServedYet = [] } = scanModelSources({ modelsDir, hfCacheDir, defaultPoolSize: 1 });
      // WEIGHTS is the server's own measure (GET /v1/models file_bytes, which `models ps` shows).
      const rows = models.map((m) => [
        m.id, m.task, m.gguf ? (m.gguf.quant ?? 'gguf') : m.dtype, String(m.contextLength), formatBytes(modelFileBytes(m)),
        formatBytes(m.gguf ? filesSize(ggufFiles(m, modelsDir)) : folderSize(m.dir)),
      ]);
      process.stdout.write(table(['ID', 'TASK', 'DTYPE', 'CONTEXT', 'WEIGHTS', 'FOLDER'], rows));
      for (const s of skipped) process.stdout.write(`skipped ${s.folder}: ${s.reason}\n`);
      for (const s of notServedYet) process.stdout.write(`not served yet ${s.folder}: ${s.reason}\n`);
      if (models.length === 0 && skipped.length === 0 && notServedYet.length === 0) log(`no models in ${modelsDir} or ${hfCacheDir}`);
      return 0;
    }
    case 'rm': {
      if (args.length === 0) throw new UsageError('rm takes one or more model ids');
      for (const id of args) {
        const repo = id.split(':')[0]!; // org/name:Q4_K_M, a GGUF model of a cached repository
        if (repo.includes('/') && fs.existsSync(path.join(hfCacheDir, repoFolderName(repo)))) {
          // Shared with Python tools: their cache, their tool to prune it.
          throw new UsageError(`${id} is in the Hugging Face cache (${path.join(hfCacheDir, repoFolderName(repo))}), which other tools share; remove it with \`huggingface-cli delete-cache\` or delete that folder`);
        }
        const removed = removeModel(modelsDir, id);
        if (!removed) throw new UsageError(`no model or model folder ${id} in ${modelsDir}`);
        for (const file of removed) log(`removed ${file}`);
      }
      return 0;
    }
    case 'pack': {
      if (args.length === 0 || !values.output) throw new UsageError('pack takes model ids and -o FILE.tar');
      await pack({ modelsDir, ids: args, output: path.resolve(values.output), log });
      log(`wrote ${values.output} (${formatBytes(fs.statSync(values.output).size)})`);
      return 0;
    }
    case 'unpack': {
      if (args.length !== 1) throw new UsageError('unpack takes one archive');
      const ids = await unpack({ modelsDir, archive: path.resolve(args[0]!), force: values.force, log });
      log(`ready: ${ids.join(', ')} in ${modelsDir}`);
      return 0;
    }
    case 'ps': {
      process.stdout.write(await ps(values.url ?? `http://127.0.0.1:${env.PORT ?? 8080}`, env.API_KEYS?.split(',')[0]?.trim() || undefined, values.all!));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function folderSize(dir: string): number {
  return filesSize(listFiles(dir).map((rel) => path.join(dir, rel)));
}

function filesSize(files: string[]): number {
  return files.reduce((sum, file) => sum + fs.statSync(file).size, 0);
}

// Run when executed directly (tsx src/cli/models.ts or the npm bin), not when imported by tests.
if (process.argv[1] && /models\.(ts|js)$/.test(process.argv[1]) && path.resolve(process.argv[1]).includes(`${path.sep}cli${path.sep}`)) {
  run(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`models: ${error.message}\n${error instanceof UsageError ? `${USAGE}\n` : ''}`);
      process.exit(error instanceof UsageError ? 2 : 1);
    },
  );
}

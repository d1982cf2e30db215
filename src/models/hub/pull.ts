/**
 * `models pull`: fetches a model from the hub or a mirror (HF_ENDPOINT) into models/<id> or into the
 * Hugging Face cache: the files one dtype of a Hugging Face ONNX export needs (here), or one
 * quantization of a GGUF repository, `owner/name:Q4_K_M` as llama-server's `-hf` and Ollama spell it
 * (pull-gguf.ts). Both read the repository at one commit and fetch, resume and verify every file the
 * same way (hub-repo.ts).
 *
 * models/ (default): files land in models/.pull-<id>/ (a dot folder the registry never loads) and
 * are renamed into place once every file is in (an ONNX export's folder with its manifest.json; a
 * GGUF model's parts into models/<id>/ beside other quantizations): a failed pull never leaves a
 * loadable model.
 *
 * The Hugging Face cache (`hfCacheDir`): the layout huggingface_hub writes, so Python tools and this
 * server share downloads both ways. Contents go to blobs/<sha256 for LFS files, git sha1 otherwise>,
 * partial files are blobs/<hash>.incomplete (as huggingface_hub names them: either tool resumes the
 * other's), blobs already present are not fetched again; only when every blob is in are the
 * snapshots/<commit>/ links and refs/<revision> written, so the server never sees half a snapshot.
 * The two layouts are the two Stores of pull-store.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describeModel } from '../registry.js';
import { repoFolderName } from '../hf-cache.js';
import { DTYPE_SUFFIX, DTYPES, MODEL_ID_PATTERN, type Dtype } from '../manifest.js';
import type { FileSums } from './checksums.js';
import { expectedOf, fetchFile, openRepo, PullError, servable, type HubRepo, type PullDestination, type PullOptions, type PullResult } from './hub-repo.js';
import { listedGgufModels, pullGguf } from './pull-gguf.js';
import { cacheStore, folderStore, type Expected, type Store } from './pull-store.js';

export { PullError };
export type { PullDestination, PullOptions, PullResult };


const REQUIRED = ['config.json', 'tokenizer.json'];
const OPTIONAL = ['generation_config.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'preprocessor_config.json', 'processor_config.json'];

/**
 * Pulls a GGUF quantization when one is named, or when the repository holds GGUF files and no
 * onnx/ folder; an ONNX export otherwise.
 */
export async function pull(options: PullOptions): Promise<PullResult> {
  const { repo, quant } = parseRepo(options);
  if (quant !== undefined && options.dtype !== undefined) throw new PullError('--dtype is for ONNX exports; a GGUF repository is pulled by quantization alone');
  const toCache = options.hfCacheDir !== undefined;
  if (toCache && options.id !== undefined) throw new PullError(`--id does not apply to the Hugging Face cache: the model is served as ${repo}`);
  const id = toCache ? repo : (options.id ?? repo.split('/').at(-1)!);
  if (!toCache && !MODEL_ID_PATTERN.test(id)) throw new PullError(`"${id}" is not a usable model id; choose one with --id`);
  const destination = { id, target: path.join(options.modelsDir, id), toCache };
  const hubRepo = await openRepo({ repo, revision: options.revision, endpoint: options.endpoint, token: options.token });
  const onnx = [...hubRepo.files.keys()].some((rel) => rel.startsWith('onnx/'));
  if (quant !== undefined || (!onnx && listedGgufModels([...hubRepo.files.keys()]).length > 0)) {
    if (options.dtype !== undefined) throw new PullError(`${hubRepo.where} is a GGUF repository; --dtype is for ONNX exports (name a quantization: ${repo}:<QUANT>)`);
    return pullGguf({ ...options, hubRepo, quant, destination });
  }
  return pullOnnx({ ...options, hubRepo, destination });
}

/** `owner/name[:QUANT]`, with Ollama's `hf.co/` (or `huggingface.co/`) in front or not, and --quant. */
function parseRepo(options: PullOptions): { repo: string; quant?: string } {
  const [repo, named, ...rest] = options.repo.replace(/^(hf\.co|huggingface\.co)\//, '').split(':');
  if (rest.length > 0 || named === '') throw new PullError(`"${options.repo}" is not a repository name of the form owner/name or owner/name:QUANT`);
  if (named !== undefined && options.quant !== undefined && named.toUpperCase() !== options.quant.toUpperCase()) {
    throw new PullError(`${options.repo} names quantization ${named} and --quant ${options.quant}; name one`);
  }
  const quant = named ?? options.quant;
  return { repo: repo!, ...(quant !== undefined ? { quant } : {}) };
}

/** The files one dtype of an ONNX export needs: config and tokenizer files, the graph and its external data. */
async function pullOnnx(options: PullOptions & { hubRepo: HubRepo; destination: PullDestination }): Promise<PullResult> {
  const { hubRepo, destination: { id, target, toCache } } = options;
  const log = options.log ?? (() => {});
  if (!toCache && fs.existsSync(target)) throw new PullError(`${target} already exists; remove it first (models rm ${id}) or pull with --id`);
  const { where, commit } = hubRepo;
  const expected = (rel: string) => expectedOf(hubRepo, rel);
  const mustHave = (rel: string) => {
    const found = expected(rel);
    if (!found) throw new PullError(`${where} has no ${rel}${rel.startsWith('onnx/') ? ` (ONNX files in the repository: ${[...hubRepo.files.keys()].filter((f) => /\.onnx$/.test(f)).join(', ') || 'none'})` : ''}`);
    return found;
  };

  const store: Store = toCache
    ? cacheStore(path.join(options.hfCacheDir!, repoFolderName(hubRepo.repo)), commit)
    : folderStore(path.join(options.modelsDir, `.pull-${id}`));
  const files: FileSums = {};
  const fetched: Expected[] = [];
  const get = async (file: Expected) => {
    files[file.rel] = await fetchFile({ repo: hubRepo, file, store, onProgress: options.onProgress });
    fetched.push(file);
  };

  const [configFile, tokenizerFile] = REQUIRED.map((rel) => mustHave(rel)) as [Expected, Expected];
  await get(configFile);
  const config = JSON.parse(fs.readFileSync(store.pathOf(configFile), 'utf8')) as Record<string, any>;
  const dtype = options.dtype ?? pickDtype(config);
  // A split vision-language export (no onnx/model*.onnx; the scanner serves the Qwen-VL family's and Gemma 3's):
  // its decoder, embedding and vision graphs, all of the dtype.
  const suffix = DTYPE_SUFFIX[dtype];
  const split = !expected(`onnx/model${suffix}.onnx`) && expected(`onnx/decoder_model_merged${suffix}.onnx`);
  const graphs = (split ? ['decoder_model_merged', 'embed_tokens', 'vision_encoder'] : ['model']).map((g) => `onnx/${g}${suffix}.onnx`);
  const graphFiles = graphs.map((rel) => mustHave(rel));
  log(`pulling ${where} (commit ${commit.slice(0, 12)}) as ${id} (dtype ${dtype})${toCache ? ` into ${options.hfCacheDir}` : ''}`);
  await get(tokenizerFile);
  for (const rel of OPTIONAL) {
    const file = expected(rel);
    if (file) await get(file);
  }
  for (const [i, onnx] of graphs.entries()) {
    await get(graphFiles[i]!);
    // External weights: model.onnx_data, then model.onnx_data_1, _2, ... as the export numbers them.
    const data = expected(`${onnx}_data`);
    if (data) {
      await get(data);
      for (let chunk = 1, file = expected(`${onnx}_data_${chunk}`); file; file = expected(`${onnx}_data_${++chunk}`)) await get(file);
    }
  }

  const dir = store.finish({ files: fetched, manifest: { id, dtype, source: { repo: hubRepo.repo, revision: options.revision, commit, endpoint: options.endpoint, pulledAt: new Date().toISOString() }, files } });
  const { aliases } = servable(() => describeModel(dir, 1, toCache ? { id } : {}));
  if (toCache) {
    store.publish(options.revision);
    log(`done: ${id} in the Hugging Face cache (${dir})`);
    return { id, aliases, dir, commit, files };
  }
  fs.renameSync(dir, target);
  log(`done: ${target}`);
  return { id, aliases, dir: target, commit, files };
}

function pickDtype(config: Record<string, any>): Dtype {
  const configured = config['transformers.js_config']?.dtype;
  return typeof configured === 'string' && (DTYPES as string[]).includes(configured) ? (configured as Dtype) : 'fp32';
}

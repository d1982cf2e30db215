/**
 * `models pull`: fetches the files one dtype of a Hugging Face ONNX export needs, with the hub's own
 * client (`@huggingface/hub`), from the hub or a mirror (HF_ENDPOINT), into models/<id> or into the
 * Hugging Face cache.
 *
 * The commit the revision points at is asked first (modelInfo), then the repository's file list at
 * that commit (listFiles: paths, sizes, the sha256 of every LFS file and the git sha1 of the others),
 * so no file is probed by a 404, every file comes from the same commit, and every file is checked
 * against the hash the hub lists. Each file is fetched with downloadFile into a partial file; a
 * pull that was cut resumes from the partial file's length with a Range request (the blob's
 * slice), and a file whose hash is wrong is deleted and reported.
 *
 * models/ (default): files land in models/.pull-<id>/ (a dot folder the registry never loads) and
 * are renamed into place once every file is in and manifest.json is written: a failed pull never
 * leaves a loadable folder.
 *
 * The Hugging Face cache (`hfCacheDir`): the layout huggingface_hub writes, so Python tools and this
 * server share downloads both ways. Contents go to blobs/<sha256 for LFS files, git sha1 otherwise>,
 * partial files are blobs/<hash>.incomplete (as huggingface_hub names them: either tool resumes the
 * other's), blobs already present are not fetched again; only when every blob is in are the
 * snapshots/<commit>/ links and refs/<revision> written, so the server never sees half a snapshot.
 * The two layouts are the two Stores of pull-store.ts.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { downloadFile, HubApiError, listFiles, modelInfo, type ListFileEntry } from '@huggingface/hub';
import { describeModel } from '../registry.js';
import { HUB_REPO_PATTERN, repoFolderName } from '../hf-cache.js';
import { DTYPE_SUFFIX, DTYPES, MODEL_ID_PATTERN, type Dtype } from '../manifest.js';
import type { FileSum, FileSums } from './checksums.js';
import { cacheStore, folderStore, type Expected, type Store } from './pull-store.js';

export interface PullOptions {
  repo: string;
  revision: string;
  dtype?: Dtype;
  /** Hub or mirror base URL (HF_ENDPOINT), e.g. https://huggingface.co */
  endpoint: string;
  modelsDir: string;
  /** Folder name / model id in models/; default: the repository name. Not with hfCacheDir (the id is then org/name). */
  id?: string;
  /** Write into this Hugging Face cache folder (its layout) instead of models/. */
  hfCacheDir?: string;
  /** Called as bytes arrive. */
  onProgress?: (file: string, received: number, total: number | null) => void;
  log?: (line: string) => void;
  /** Authorization for gated repos (HF_TOKEN). */
  token?: string;
}

export interface PullResult {
  /** The model id the server will serve it as: the folder name in models/, `org/name` from the cache. */
  id: string;
  /** The model folder (models/<id>) or the snapshot folder in the cache. */
  dir: string;
  /** The commit the files come from. */
  commit: string;
  files: FileSums;
}

export class PullError extends Error {}

const REQUIRED = ['config.json', 'tokenizer.json'];
const OPTIONAL = ['generation_config.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja', 'preprocessor_config.json'];

export async function pull(options: PullOptions): Promise<PullResult> {
  const log = options.log ?? (() => {});
  if (!/^[\w.-]+\/[\w.-]+$/.test(options.repo) || !HUB_REPO_PATTERN.test(options.repo)) {
    throw new PullError(`"${options.repo}" is not a repository name of the form owner/name`);
  }
  const toCache = options.hfCacheDir !== undefined;
  if (toCache && options.id !== undefined) throw new PullError(`--id does not apply to the Hugging Face cache: the model is served as ${options.repo}`);
  const id = toCache ? options.repo : (options.id ?? options.repo.split('/').at(-1)!);
  if (!toCache && !MODEL_ID_PATTERN.test(id)) throw new PullError(`"${id}" is not a usable model id; choose one with --id`);
  const target = path.join(options.modelsDir, id);
  if (!toCache && fs.existsSync(target)) throw new PullError(`${target} already exists; remove it first (models rm ${id}) or pull with --id`);

  // @huggingface/hub refuses other tokens with a TypeError; say it in the user's words.
  if (options.token && !options.token.startsWith('hf_')) throw new PullError('HF_TOKEN must be a Hugging Face access token (hf_...)');
  const hub = { hubUrl: options.endpoint.replace(/\/$/, ''), ...(options.token ? { accessToken: options.token } : {}) };
  const where = `${options.repo}@${options.revision}`;
  const commit = await asked(where, hub.hubUrl, async () => (await modelInfo({ ...hub, name: options.repo, revision: options.revision, additionalFields: ['sha'] })).sha);
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) throw new PullError(`${where}: the hub did not name the commit (got ${JSON.stringify(commit)})`);
  const listed = new Map<string, ListFileEntry>();
  await asked(where, hub.hubUrl, async () => {
    for await (const entry of listFiles({ ...hub, repo: options.repo, revision: commit, recursive: true })) if (entry.type === 'file') listed.set(entry.path, entry);
  });
  const expected = (rel: string): Expected | undefined => {
    const entry = listed.get(rel);
    if (!entry) return undefined;
    if (entry.lfs) return { rel, size: entry.lfs.size, hash: { kind: 'sha256', value: entry.lfs.oid } };
    if (!entry.oid) throw new PullError(`${where}: the hub lists ${rel} without a hash`);
    return { rel, size: entry.size, hash: { kind: 'git-sha1', value: entry.oid } };
  };
  const mustHave = (rel: string) => {
    const found = expected(rel);
    if (!found) throw new PullError(`${where} has no ${rel}${rel.startsWith('onnx/') ? ` (ONNX files in the repository: ${[...listed.keys()].filter((f) => /\.onnx$/.test(f)).join(', ') || 'none'})` : ''}`);
    return found;
  };

  const store: Store = toCache
    ? cacheStore(path.join(options.hfCacheDir!, repoFolderName(options.repo)), commit)
    : folderStore(path.join(options.modelsDir, `.pull-${id}`));
  const files: FileSums = {};
  const fetched: Expected[] = [];
  const get = async (file: Expected) => {
    files[file.rel] = await fetchFile({ ...options, ...hub, commit, file, store });
    fetched.push(file);
  };

  const [configFile, tokenizerFile] = REQUIRED.map((rel) => mustHave(rel)) as [Expected, Expected];
  await get(configFile);
  const config = JSON.parse(fs.readFileSync(store.pathOf(configFile), 'utf8')) as Record<string, any>;
  const dtype = options.dtype ?? pickDtype(config);
  const onnx = `onnx/model${DTYPE_SUFFIX[dtype]}.onnx`;
  const onnxFile = mustHave(onnx);
  log(`pulling ${where} (commit ${commit.slice(0, 12)}) as ${id} (dtype ${dtype})${toCache ? ` into ${options.hfCacheDir}` : ''}`);
  await get(tokenizerFile);
  for (const rel of OPTIONAL) {
    const file = expected(rel);
    if (file) await get(file);
  }
  await get(onnxFile);
  // External weights: model.onnx_data, then model.onnx_data_1, _2, ... as the export numbers them.
  const data = expected(`${onnx}_data`);
  if (data) {
    await get(data);
    for (let chunk = 1, file = expected(`${onnx}_data_${chunk}`); file; file = expected(`${onnx}_data_${++chunk}`)) await get(file);
  }

  const dir = store.finish({ files: fetched, manifest: { id, dtype, source: { repo: options.repo, revision: options.revision, commit, endpoint: options.endpoint, pulledAt: new Date().toISOString() }, files } });
  try {
    describeModel(dir, 1, toCache ? { id } : {});
  } catch (error) {
    throw new PullError(`the files were fetched but the server could not serve them: ${(error as Error).message}`);
  }
  if (toCache) {
    store.publish(options.revision);
    log(`done: ${id} in the Hugging Face cache (${dir})`);
    return { id, dir, commit, files };
  }
  fs.renameSync(dir, target);
  log(`done: ${target}`);
  return { id, dir: target, commit, files };
}

/** Runs a call to the hub and turns its failures into readable PullErrors. */
async function asked<T>(where: string, hubUrl: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof HubApiError) {
      if (error.statusCode === 404) throw new PullError(`${where}: no such repository or revision on ${hubUrl} (404: ${error.message})`);
      if (error.statusCode === 401 || error.statusCode === 403) throw new PullError(`${where}: access denied (${error.statusCode}); gated repositories need HF_TOKEN`);
      throw new PullError(`${where}: HTTP ${error.statusCode} from the hub (${error.message})`);
    }
    if (error instanceof PullError) throw error;
    throw new PullError(`cannot reach ${hubUrl}: ${(error as Error).message}${(error as { cause?: Error }).cause ? ` (${(error as { cause: Error }).cause.message})` : ''}`);
  }
}

function pickDtype(config: Record<string, any>): Dtype {
  const configured = config['transformers.js_config']?.dtype;
  return typeof configured === 'string' && (DTYPES as string[]).includes(configured) ? (configured as Dtype) : 'fp32';
}

interface FetchOptions extends PullOptions {
  hubUrl: string;
  accessToken?: string;
  commit: string;
  file: Expected;
  store: Store;
}

/** Fetches one file (resuming a partial one), verifies its size and hash, moves it into place; returns its sums. */
async function fetchFile(o: FetchOptions): Promise<FileSum> {
  const { file, store } = o;
  const already = store.done(file);
  if (already) {
    o.onProgress?.(file.rel, file.size, file.size);
    return already;
  }
  const part = store.partOf(file);
  fs.mkdirSync(path.dirname(part), { recursive: true });
  let offset = fs.existsSync(part) ? fs.statSync(part).size : 0;
  if (offset > file.size) {
    fs.rmSync(part);
    offset = 0;
  }
  const sha256 = createHash('sha256');
  const git = file.hash.kind === 'git-sha1' ? createHash('sha1').update(`blob ${file.size}\0`) : undefined;
  const hashes: Hash[] = git ? [sha256, git] : [sha256];
  if (offset > 0) for await (const chunk of fs.createReadStream(part)) for (const h of hashes) h.update(chunk as Buffer);

  let received = offset;
  if (offset < file.size) {
    const blob = await asked(`${o.repo}@${o.revision}`, o.hubUrl, () =>
      // xet off: the plain HTTP path, whose Range requests resume a cut transfer.
      downloadFile({ repo: o.repo, path: file.rel, revision: o.commit, hubUrl: o.hubUrl, accessToken: o.accessToken, xet: false }),
    );
    if (!blob) throw new PullError(`${o.repo}@${o.commit} lists ${file.rel} but does not serve it`);
    if (blob.size !== file.size) throw new PullError(`${file.rel}: the hub serves ${blob.size} bytes but lists ${file.size}`);
    const out = fs.createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' });
    try {
      // A slice from the offset is a Range request for the rest of the file.
      for await (const chunk of (offset > 0 ? blob.slice(offset) : blob).stream() as unknown as AsyncIterable<Uint8Array>) {
        for (const h of hashes) h.update(chunk);
        received += chunk.byteLength;
        if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
        o.onProgress?.(file.rel, received, file.size);
      }
    } catch (error) {
      throw new PullError(`${file.rel}: download interrupted after ${received} bytes (${(error as Error).message ?? error}); run the same pull again to resume`);
    } finally {
      await new Promise<void>((resolve) => out.end(resolve));
    }
  } else {
    o.onProgress?.(file.rel, received, file.size);
  }
  if (received !== file.size) throw new PullError(`${file.rel}: got ${received} of ${file.size} bytes; run the same pull again to resume`);
  const sum = { size: received, sha256: sha256.digest('hex') };
  const actual = file.hash.kind === 'sha256' ? sum.sha256 : git!.digest('hex');
  if (actual !== file.hash.value) {
    fs.rmSync(part, { force: true });
    throw new PullError(`${file.rel}: checksum mismatch (${file.hash.kind} ${actual}, the hub lists ${file.hash.value}); the partial file was removed, pull again`);
  }
  store.complete(file, sum);
  return sum;
}
